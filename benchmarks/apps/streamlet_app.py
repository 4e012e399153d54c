"""streamlet's side of the benchmark: the workloads of benchmarks/workloads.py as topologies.

Topic names come from the environment (BENCH_INPUT, BENCH_TABLE, BENCH_OUTPUT), settings from
`streamlet run --set`, as benchmarks/systems.py starts them.
"""

from __future__ import annotations

import os
from typing import Any

from benchmarks.workloads import PAIR_ID_SHIFT, split_words
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


def session_count() -> Topology:
    """Final session counts per user (see `session_count` in benchmarks/workloads.py)."""
    from datetime import timedelta

    from benchmarks.workloads import SESSION_GAP_MS
    from streamlet import BufferConfig, SessionWindows, Suppressed

    builder = StreamsBuilder()
    (
        builder.stream(os.environ["BENCH_INPUT"], Consumed(key_serde=Serdes.String(), value_serde=Serdes.Bytes()))
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(milliseconds=SESSION_GAP_MS)))
        .count(Materialized("session-counts"))
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        .to_stream()
        .map(lambda wk, n: (f"{wk.key}@{wk.window.start}-{wk.window.end}", n))
        .to(os.environ["BENCH_OUTPUT"], Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    )
    return builder.build()


def _pair(click: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    return {"id": click["id"] << PAIR_ID_SHIFT | view["id"], "user": click["user"], "click": click["id"],
            "view": view["id"]}


def stream_join() -> Topology:
    """Clicks joined with views of the same user within 10 s (see `stream_join` in benchmarks/workloads.py)."""
    from datetime import timedelta

    from benchmarks.workloads import STREAM_JOIN_WINDOW_MS
    from streamlet import JoinWindows, StreamJoined

    builder = StreamsBuilder()
    events = builder.stream(os.environ["BENCH_INPUT"], Consumed(key_serde=Serdes.String(), value_serde=Serdes.Json()))
    clicks = events.filter(lambda _k, ev: ev["kind"] == "click")
    views = events.filter(lambda _k, ev: ev["kind"] == "view")
    (
        clicks.join(views, _pair, JoinWindows.of_time_difference_with_no_grace(
                        timedelta(milliseconds=STREAM_JOIN_WINDOW_MS)),
                    StreamJoined(Serdes.String(), Serdes.Json(), Serdes.Json()))
        .to(os.environ["BENCH_OUTPUT"], Produced(key_serde=Serdes.String(), value_serde=Serdes.Json()))
    )
    return builder.build()


def _to_group(_row: str, update: dict[str, Any]) -> tuple[str, int]:
    return update["group"], update["amount"]


def _zero() -> int:
    return 0


def _add(_group: str, amount: int, total: int) -> int:
    return total + amount


def _subtract(_group: str, amount: int, total: int) -> int:
    return total - amount


def table_agg() -> Topology:
    """Each group's sum over the table's rows (see `table_agg` in benchmarks/workloads.py): a row that moves
    to another group is subtracted from the old one and added to the new one."""
    builder = StreamsBuilder()
    (
        builder.table(os.environ["BENCH_INPUT"], Consumed(key_serde=Serdes.String(), value_serde=Serdes.Json()),
                      Materialized("agg-table"))
        .group_by(_to_group, Grouped(key_serde=Serdes.String(), value_serde=Serdes.Long()))
        .aggregate(_zero, _add, _subtract, Materialized("group-sums", value_serde=Serdes.Long()))
        .to_stream()
        .to(os.environ["BENCH_OUTPUT"], Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    )
    return builder.build()


# --- the Avro workloads: values through the schema registry (`schema.registry.url` from the app's settings) -----

def pipe_avro() -> Topology:
    """`pipe` on Avro events (see `pipe_avro` in benchmarks/workloads.py): GenericAvroSerde both ways, the
    records as dicts, as Kafka Streams' side has GenericRecords; written with the EventCents schema."""
    from benchmarks.workloads import CENTS_SCHEMA
    from streamlet.schema_registry import GenericAvroSerde

    builder = StreamsBuilder()
    (
        builder.stream(os.environ["BENCH_INPUT"], Consumed(key_serde=Serdes.Bytes(), value_serde=GenericAvroSerde()))
        .filter(lambda _k, ev: ev["kind"] != "view")
        .map_values(_cents)
        .to(os.environ["BENCH_OUTPUT"], Produced(key_serde=Serdes.Bytes(), value_serde=GenericAvroSerde(CENTS_SCHEMA)))
    )
    return builder.build()


def window_count_avro() -> Topology:
    """`window_count` on Avro events: every value read with GenericAvroSerde, counted per user and minute."""
    from datetime import timedelta

    from examples.bench_topologies_windows_join import window_key
    from streamlet import TimeWindows
    from streamlet.schema_registry import GenericAvroSerde

    builder = StreamsBuilder()
    (
        builder.stream(os.environ["BENCH_INPUT"], Consumed(key_serde=Serdes.String(), value_serde=GenericAvroSerde()))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1)))
        .count(Materialized("window-counts"))
        .to_stream()
        .map(window_key)
        .to(os.environ["BENCH_OUTPUT"], Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    )
    return builder.build()
