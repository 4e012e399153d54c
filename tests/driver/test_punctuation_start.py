"""A punctuation's start time (KIP-1146): `context.schedule(interval, type, callback, start_time=...)`
anchors the punctuations to `start_time`, on the wall clock and on stream time, as Kafka Streams 4.x does.

Differential: hypothesis draws cases (clock, start before or after now, interval, the steps: wall-clock
advances or record timestamps, late ones included); each runs in Kafka Streams 4.4.0's TopologyTestDriver
(PunctuationCheck in tests/java/streams4) and in streamlet's, and the punctuations (with the timestamp each
is called with) and where they came between the steps must be the same.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlet import Processor, ProcessorContext, PunctuationType, Record, Serdes, Topology
from streamlet.processor import epoch_millis
from streamlet.testing import TopologyTestDriver
from tests.streams4_java import run_check

BASE = 1_700_000_000_000  # the drivers' initial wall-clock time, as in PunctuationCheck
S = Serdes.String()
Case = tuple[str, bool, int, int, list[int]]


def _streamlet_lines(label: str, wall: bool, start: int, interval: int, steps: list[int]) -> list[str]:
    lines: list[str] = []

    class Anchored(Processor):
        def init(self, context: ProcessorContext) -> None:
            super().init(context)
            kind = PunctuationType.WALL_CLOCK_TIME if wall else PunctuationType.STREAM_TIME
            context.schedule(interval, kind, lambda ts: lines.append(f"{label} punct {ts - BASE if wall else ts}"),
                             start_time=BASE + start if wall else start)

        def process(self, record: Record) -> None:
            pass

    topology = Topology()
    topology.add_source("src", "in", key_deserializer=S.deserializer, value_deserializer=S.deserializer)
    topology.add_processor("proc", Anchored, "src")
    with TopologyTestDriver(topology, {"application.id": "punctuation"}, initial_wall_clock_time=BASE) as driver:
        pipe = driver.create_input_topic("in", S.serializer, S.serializer)
        for step in steps:
            if wall:
                driver.advance_wall_clock_time(step)
            else:
                pipe.pipe_input("k", "v", step)
            lines.append(f"{label} step {step}")
    return lines


def _kafka_streams_lines(cases: list[Case]) -> dict[str, list[str]]:
    stdin = "".join(f"{label} {'wall' if wall else 'stream'} {start} {interval} {' '.join(map(str, steps))}\n"
                    for label, wall, start, interval, steps in cases)
    found: dict[str, list[str]] = {label: [] for label, *_ in cases}
    for line in run_check("PunctuationCheck", stdin).splitlines():
        found[line.split(" ", 1)[0]].append(line)
    return found


_wall = st.tuples(st.just(True), st.integers(-1000, 1000), st.integers(1, 300),
                  st.lists(st.integers(0, 700), min_size=1, max_size=8))
_stream = st.tuples(st.just(False), st.integers(0, 2000), st.integers(1, 300),
                    st.lists(st.integers(0, 2500), min_size=1, max_size=10))
_cases = st.lists(st.one_of(_wall, _stream), min_size=1, max_size=25)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=_cases)
def test_anchored_punctuations_fire_as_in_kafka_streams(drawn: list[tuple[bool, int, int, list[int]]]) -> None:
    cases: list[Case] = [(f"c{i}", wall, start, interval, steps) for i, (wall, start, interval, steps)
                         in enumerate(drawn)]
    expected = _kafka_streams_lines(cases)
    for label, wall, start, interval, steps in cases:
        assert _streamlet_lines(label, wall, start, interval, steps) == expected[label], (wall, start, interval,
                                                                                          steps)


def test_a_datetime_start_is_an_instant_and_a_naive_one_is_refused() -> None:
    aware = datetime.fromtimestamp((BASE + 250) / 1000, tz=UTC)

    class Datetimed(Processor):
        def init(self, context: ProcessorContext) -> None:
            super().init(context)
            context.schedule(timedelta(milliseconds=100), PunctuationType.WALL_CLOCK_TIME, fired.append,
                             start_time=aware)

        def process(self, record: Record) -> None:
            pass

    fired: list[int] = []
    topology = Topology()
    topology.add_source("src", "in", key_deserializer=S.deserializer, value_deserializer=S.deserializer)
    topology.add_processor("proc", Datetimed, "src")
    with TopologyTestDriver(topology, {"application.id": "p"}, initial_wall_clock_time=BASE) as driver:
        driver.advance_wall_clock_time(249)
        assert fired == []
        driver.advance_wall_clock_time(1)
        assert fired == [BASE + 250]
    with pytest.raises(ValueError, match="timezone"):
        epoch_millis(aware.replace(tzinfo=None))
