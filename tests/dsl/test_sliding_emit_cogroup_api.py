"""The API rules of sliding windows, emit strategies and cogroup that the differential suite does not
reach (it only builds well-formed topologies): argument checks, retention checks, when an emit
strategy takes effect, and re-cogrouping a grouped stream."""

from __future__ import annotations

from datetime import timedelta

import pytest

from streamlet import (
    Consumed,
    EmitStrategy,
    Materialized,
    Produced,
    Serdes,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
    TopologyError,
)
from streamlet.testing import TopologyTestDriver

STRING = Serdes.String()
CONFIG = {"application.id": "api", "statestore.cache.max.bytes": 0, "default.key.serde": "String",
          "default.value.serde": "String"}


def test_sliding_windows_take_timedelta_or_ms_and_refuse_negative_values() -> None:
    windows = SlidingWindows.of_time_difference_and_grace(timedelta(seconds=2), 500)
    assert (windows.time_difference(), windows.grace_period_ms()) == (2000, 500)
    assert SlidingWindows.of_time_difference_with_no_grace(10) == SlidingWindows(10, 0)
    with pytest.raises(TopologyError):
        SlidingWindows.of_time_difference_with_no_grace(-1)
    with pytest.raises(TopologyError):
        SlidingWindows.of_time_difference_and_grace(10, -1)


def test_a_sliding_store_must_keep_twice_the_time_difference_plus_grace() -> None:
    grouped = StreamsBuilder().stream("in").group_by_key()
    windowed = grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5))
    with pytest.raises(TopologyError, match="2 \\* time difference"):
        windowed.count(Materialized("counts", retention=24))
    windowed.count(Materialized("counts", retention=25))  # exactly enough


def test_emit_strategy_takes_an_emit_strategy() -> None:
    windowed = StreamsBuilder().stream("in").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10))
    with pytest.raises(TypeError):
        windowed.emit_strategy("on_window_close")  # type: ignore[arg-type]
    assert windowed.emit_strategy(EmitStrategy.on_window_close()) is windowed


def _counts(emit_later: bool) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Two counts of one windowed stream, the strategy switched to on_window_close between them or not."""
    builder = StreamsBuilder()
    windowed = builder.stream("in", Consumed(STRING, STRING)).group_by_key().windowed_by(
        TimeWindows.of_size_with_no_grace(10))
    first = windowed.count()
    if emit_later:
        windowed.emit_strategy(EmitStrategy.on_window_close())
    second = windowed.count()
    for table, topic in ((first, "first"), (second, "second")):
        table.to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}", v)).to(topic, Produced(STRING, Serdes.Long()))
    with TopologyTestDriver(builder.build(), CONFIG, initial_wall_clock_time=0) as driver:
        inp = driver.create_input_topic("in", STRING, STRING)
        for ts in (1, 2, 15):
            inp.pipe_input("k", "v", ts)
        return tuple(driver.create_output_topic(t, STRING, Serdes.Long()).read_key_values_to_list()  # type: ignore[return-value]
                     for t in ("first", "second"))


def test_an_emit_strategy_applies_to_the_aggregations_made_after_it() -> None:
    first, second = _counts(emit_later=True)
    assert first == [("k@0", 1), ("k@0", 2), ("k@10", 1)]  # every update
    assert second == [("k@0", 2)]  # [0, 10) closed at stream time 15: its final count only
    assert _counts(emit_later=False) == (first, first)


def test_cogrouping_a_grouped_stream_again_replaces_its_aggregator() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in", Consumed(STRING, STRING)).group_by_key()
    other = builder.stream("in2", Consumed(STRING, STRING)).group_by_key()
    cogrouped = grouped.cogroup(lambda k, v, agg: agg + "a").cogroup(other, lambda k, v, agg: agg + "b")
    assert cogrouped.cogroup(other, lambda k, v, agg: agg + "c") is cogrouped
    cogrouped.aggregate(lambda: "").to_stream().to("out", Produced(STRING, STRING))
    topology = builder.build()
    assert str(topology.describe()).count("Processor: COGROUPKSTREAM-AGGREGATE-") == 2
    with TopologyTestDriver(topology, CONFIG, initial_wall_clock_time=0) as driver:
        driver.create_input_topic("in", STRING, STRING).pipe_input("k", "x", 1)
        driver.create_input_topic("in2", STRING, STRING).pipe_input("k", "y", 2)
        assert driver.create_output_topic("out", STRING, STRING).read_values_to_list() == ["a", "ac"]


def test_a_session_cogroup_needs_a_merger() -> None:
    from streamlet import SessionWindows

    cogrouped = StreamsBuilder().stream("in").group_by_key().cogroup(lambda k, v, agg: agg)
    with pytest.raises(TypeError, match="merger"):
        cogrouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5)).aggregate(lambda: "")
