"""The sliding-window, emit-strategy and cogroup reference topologies of tests/java/reference, built with streamlet.

Written call for call as WindowCogroupTopologies.java; windowed keys become "key@start/end" strings so
the behaviour scenarios compare plain String keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl import (
    EmitStrategy,
    Grouped,
    Materialized,
    Produced,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
)
from streamlet.record import KeyValue
from streamlet.serdes import Serdes
from streamlet.topology import Topology
from streamlet.windowed import Windowed


def _flatten(key: Windowed, value: Any) -> KeyValue:
    return KeyValue(f"{key.key}@{key.window.start}/{key.window.end}", value)


def sliding_count_grace() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("input").group_by_key()
     .windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5))
     .count(Materialized("sliding-counts"))
     .to_stream().map(_flatten).to("output", Produced(Serdes.String(), Serdes.Long())))
    return builder.build()


def sliding_reduce_emit_final_after_map() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("input").map(lambda k, v: KeyValue(v[0], v)).group_by_key()
     .windowed_by(SlidingWindows.of_time_difference_with_no_grace(5))
     .emit_strategy(EmitStrategy.on_window_close())
     .reduce(lambda a, b: a + b)
     .to_stream().map(_flatten).to("output"))
    return builder.build()


def tumbling_count_emit_final() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("input").group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10, 2))
     .emit_strategy(EmitStrategy.on_window_close())
     .count()
     .to_stream().map(_flatten).to("output", Produced(Serdes.String(), Serdes.Long())))
    return builder.build()


def cogroup_two_streams() -> Topology:
    builder = StreamsBuilder()
    left = builder.stream("input").group_by_key()
    right = builder.stream("input2").group_by(lambda k, v: v[0], Grouped(name="by-first"))
    (left.cogroup(lambda k, v, agg: agg + "+" + v)
     .cogroup(right, lambda k, v, agg: agg + "-" + v)
     .aggregate(lambda: "", Materialized("cogrouped"))
     .to_stream().to("output"))
    return builder.build()


def cogroup_windowed_named() -> Topology:
    builder = StreamsBuilder()
    left = builder.stream("input").group_by_key()
    right = builder.stream("input2").group_by_key()
    (left.cogroup(lambda k, v, agg: agg + "+" + v)
     .cogroup(right, lambda k, v, agg: agg + "-" + v)
     .windowed_by(TimeWindows.of_size_with_no_grace(10))
     .aggregate(lambda: "", named="cg")
     .to_stream().map(_flatten).to("output"))
    return builder.build()


def cogroup_session() -> Topology:
    builder = StreamsBuilder()
    left = builder.stream("input").group_by_key()
    right = builder.stream("input2").group_by_key()
    (left.cogroup(lambda k, v, agg: agg + "+" + v)
     .cogroup(right, lambda k, v, agg: agg + "-" + v)
     .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 3))
     .aggregate(lambda: "", lambda k, a, b: a + "|" + b)
     .to_stream().map(_flatten).to("output"))
    return builder.build()


WINDOW_COGROUP_TOPOLOGIES: dict[str, Callable[[], Topology]] = {
    fn.__name__: fn
    for fn in (sliding_count_grace, sliding_reduce_emit_final_after_map, tumbling_count_emit_final,
               cogroup_two_streams, cogroup_windowed_named, cogroup_session)
}
