"""streamlet's side of the benchmark: the workloads of benchmarks/workloads.py as topologies.

Topic names come from the environment (BENCH_INPUT, BENCH_TABLE, BENCH_OUTPUT), settings from
`streamlet run --set`, as benchmarks/systems.py starts them.
"""

from __future__ import annotations

import os
from typing import Any

from benchmarks.workloads import split_words
from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, Topology


def wordcount() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(os.environ["BENCH_INPUT"], Consumed(key_serde=Serdes.Bytes(), value_serde=Serdes.String()))
        .flat_map_values(split_words)
        .group_by(lambda _k, w: w, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .count(Materialized("counts-store"))
        .to_stream()
        .to(os.environ["BENCH_OUTPUT"], Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    )
    return builder.build()


def _cents(event: dict[str, Any]) -> dict[str, Any]:
    return {"id": event["id"], "user": event["user"], "amount_cents": event["amount"] * 100}


def pipe() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(os.environ["BENCH_INPUT"], Consumed(key_serde=Serdes.Bytes(), value_serde=Serdes.Json()))
        .filter(lambda _k, ev: ev["kind"] != "view")
        .map_values(_cents)
        .to(os.environ["BENCH_OUTPUT"], Produced(key_serde=Serdes.Bytes(), value_serde=Serdes.Json()))
    )
    return builder.build()


def window_count() -> Topology:
    from examples.bench_topologies_windows_join import window_count_topology

    return window_count_topology()


def join() -> Topology:
    from examples.bench_topologies_windows_join import join_topology

    return join_topology()
