"""Session windows in the DSL (the differential suite checks the details against Kafka Streams)."""

from __future__ import annotations

import pytest

from streamlet.dsl import (
    BufferConfig,
    Consumed,
    Grouped,
    Materialized,
    Produced,
    SessionWindows,
    StreamsBuilder,
    Suppressed,
)
from streamlet.errors import TopologyError
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver
from streamlet.windowed import SessionWindow, Windowed
from streamlet.windowed_serdes import WindowedSerdes

STR, LONG = Serdes.String(), Serdes.Long()
KEYS = WindowedSerdes.session_windowed_serde_from(STR)
CONFIG = {"application.id": "sessions", "statestore.cache.max.bytes": 0}


def test_a_bridging_record_merges_two_sessions() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", Consumed(STR, STR)).group_by_key(Grouped(STR, STR))
     .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 10)).count(Materialized("s"))
     .to_stream().to("out", Produced(KEYS, LONG)))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        out = driver.create_output_topic("out", KEYS, LONG)
        for ts in (0, 10, 5):
            inp.pipe_input("a", "v", ts)
        assert [(r.key.window.start, r.key.window.end, r.value, r.timestamp) for r in out.read_records_to_list()] == [
            (0, 0, 1, 0), (10, 10, 1, 10), (0, 0, None, 0), (10, 10, None, 10), (0, 10, 3, 10)]
        assert [kv.value for kv in driver.get_session_store("s").fetch("a")] == [3]


def test_a_session_past_the_store_retention_is_not_merged() -> None:
    """As Kafka Streams: retention defaults to gap + grace, and the store no longer returns [0, 0]
    once stream time is 10, so the record at 5 only merges with [10, 10]."""
    builder = StreamsBuilder()
    (builder.stream("in", Consumed(STR, STR)).group_by_key(Grouped(STR, STR))
     .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5)).count()
     .to_stream().to("out", Produced(KEYS, LONG)))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        out = driver.create_output_topic("out", KEYS, LONG)
        for ts in (0, 10, 5):
            inp.pipe_input("a", "v", ts)
        assert [(r.key.window.start, r.key.window.end, r.value) for r in out.read_records_to_list()] == [
            (0, 0, 1), (10, 10, 1), (10, 10, None), (5, 10, 2)]


def test_final_session_counts_with_suppress() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", Consumed(STR, STR)).group_by_key(Grouped(STR, STR))
     .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 2)).count()
     .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
     .to_stream().to("out", Produced(KEYS, LONG)))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        out = driver.create_output_topic("out", KEYS, LONG)
        inp.pipe_input("a", "v", 0)
        inp.pipe_input("a", "v", 3)
        inp.pipe_input("b", "v", 9)
        assert out.is_empty()  # the session [0, 3] closes at 3 + gap 5 + grace 2 = 10
        inp.pipe_input("b", "v", 10)
        assert out.read_key_values_to_list() == [(Windowed("a", SessionWindow(0, 3)), 2)]


def test_retention_shorter_than_gap_plus_grace_is_refused() -> None:
    grouped = StreamsBuilder().stream("in").group_by_key()
    with pytest.raises(TopologyError, match="inactivity gap plus the grace period"):
        grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 5)).count(Materialized("s", retention=12))
    with pytest.raises(TopologyError, match="Gap time cannot be zero"):
        SessionWindows.of_inactivity_gap_with_no_grace(0)
