"""The window and join reference topologies of tests/java/reference, built with streamlet.

Written call for call as WindowJoinTopologies.java; windowed keys become "key@start/end" strings so
the behaviour scenarios compare plain String keys.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from streamlet.dsl import Consumed, Materialized, Produced, StreamsBuilder, TimeWindows
from streamlet.record import KeyValue
from streamlet.serdes import Serdes
from streamlet.topology import Topology
from streamlet.windowed import Windowed


def _flatten(key: Windowed, value: Any) -> KeyValue:
    return KeyValue(f"{key.key}@{key.window.start}/{key.window.end}", value)


def _join(left: str, right: str | None) -> str:
    return left + "+" + ("-" if right is None else right)


def windowed_count_tumbling() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(milliseconds=10)))
        .count(Materialized("counts"))
        .to_stream()
        .map(_flatten)
        .to("output", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def windowed_reduce_hopping_grace() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10, 5).advance_by(5))
        .reduce(lambda a, b: a + b)
        .to_stream()
        .map(_flatten)
        .to("output", Produced(Serdes.String(), Serdes.String()))
    )
    return builder.build()


def windowed_aggregate_after_map() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .map(lambda k, v: (v, k))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(100))
        .aggregate(lambda: "", lambda k, v, agg: agg + v, Materialized(key_serde=Serdes.String(),
                                                                        value_serde=Serdes.String()))
        .to_stream()
        .map(_flatten)
        .to("output", Produced(Serdes.String(), Serdes.String()))
    )
    return builder.build()


def stream_table_join() -> Topology:
    builder = StreamsBuilder()
    table = builder.table("table-input", Consumed(Serdes.String(), Serdes.String()), Materialized("table-store"))
    builder.stream("input").join(table, _join).to("output")
    return builder.build()


def stream_table_left_join_unmaterialized() -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream("input")
    table = builder.table("table-input")
    stream.left_join(table, _join).to("output")
    return builder.build()


def stream_table_join_after_select_key() -> Topology:
    builder = StreamsBuilder()
    table = builder.table("table-input")
    builder.stream("input").select_key(lambda k, v: v).join(table, _join).to("output")
    return builder.build()


WINDOW_JOIN_TOPOLOGIES: dict[str, Callable[[], Topology]] = {
    fn.__name__: fn
    for fn in (
        windowed_count_tumbling, windowed_reduce_hopping_grace, windowed_aggregate_after_map, stream_table_join,
        stream_table_left_join_unmaterialized, stream_table_join_after_select_key,
    )
}
