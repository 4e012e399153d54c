"""The two benchmark topologies with windows and joins: a windowed count and a stream-table join.

Topic names come from the environment, so the benchmark (and the integration tests) give each run
topics of its own: `BENCH_INPUT` (events, default `events`), `BENCH_TABLE` (the users table, default
`users`) and `BENCH_OUTPUT` (default `output`). Run one against a broker with:
    BENCH_INPUT=events BENCH_OUTPUT=counts streamlet run \
        examples.bench_topologies_windows_join:window_count_topology \
        --set bootstrap.servers=127.0.0.1:9092 --set application.id=window-count

`window_count_topology`: events keyed by user count per user per 1-minute tumbling window (no grace);
each update goes out as key `"<user>@<window start ms>"`, value the count as a Long.
`join_topology`: each event is enriched with its user's region from the `users` table (an inner
join: events of unknown users are dropped); both topics must have the same number of partitions.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder, TimeWindows, Topology, Windowed


def _topic(variable: str, default: str) -> str:
    return os.environ.get(variable, default)


def window_key(key: Windowed, count: int) -> tuple[str, int]:
    return f"{key.key}@{key.window.start}", count


def enrich(event: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    return {"id": event["id"], "user": event["user"], "amount": event["amount"], "region": user["region"]}


def window_count_topology() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(_topic("BENCH_INPUT", "events"), Consumed(key_serde=Serdes.String(), value_serde=Serdes.Bytes()))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1)))
        .count(Materialized("window-counts"))
        .to_stream()
        .map(window_key)
        .to(_topic("BENCH_OUTPUT", "output"), Produced(key_serde=Serdes.String(), value_serde=Serdes.Long()))
    )
    return builder.build()


def join_topology() -> Topology:
    builder = StreamsBuilder()
    users = builder.table(_topic("BENCH_TABLE", "users"),
                          Consumed(key_serde=Serdes.String(), value_serde=Serdes.Json()), Materialized("users"))
    (
        builder.stream(_topic("BENCH_INPUT", "events"), Consumed(key_serde=Serdes.String(), value_serde=Serdes.Json()))
        .join(users, enrich)
        .to(_topic("BENCH_OUTPUT", "output"), Produced(key_serde=Serdes.String(), value_serde=Serdes.Json()))
    )
    return builder.build()
