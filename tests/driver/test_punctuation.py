"""Punctuation as Kafka Streams schedules it, observed through the test driver."""

from __future__ import annotations

from datetime import timedelta

from streamlet.processor import Cancellable, Processor, ProcessorContext, PunctuationType
from streamlet.record import Record
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology

CONFIG = {"application.id": "punctuation", "default.key.serde": Serdes.String, "default.value.serde": Serdes.Long}


def punctuating_topology(kind: PunctuationType, interval_ms: int, fired: list[int],
                         cancel_after: int | None = None) -> Topology:
    class Punctuating(Processor):
        handle: Cancellable

        def init(self, context: ProcessorContext) -> None:
            super().init(context)
            self.handle = context.schedule(interval_ms, kind, self.punctuate)

        def punctuate(self, ts: int) -> None:
            fired.append(ts)
            self.context.forward(Record("tick", ts, ts))
            if cancel_after is not None and len(fired) >= cancel_after:
                self.handle.cancel()

        def process(self, record: Record) -> None:
            self.context.forward(record)

    topology = Topology()
    topology.add_source("src", "in")
    topology.add_processor("p", Punctuating, "src")
    topology.add_sink("sink", "out", "p")
    return topology


def test_stream_time_fires_at_first_record_then_every_interval() -> None:
    fired: list[int] = []
    with TopologyTestDriver(punctuating_topology(PunctuationType.STREAM_TIME, 10_000, fired), CONFIG) as d:
        inp = d.create_input_topic("in")
        for second in range(1, 61):
            inp.pipe_input("k", second, second * 1000)
    # Kafka Streams: aligned to 0, fires at the first record (1 s), then at 10 s, 20 s, ... 60 s.
    assert fired == [1000, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000]


def test_stream_time_never_moves_backwards_and_gaps_fire_once() -> None:
    fired: list[int] = []
    with TopologyTestDriver(punctuating_topology(PunctuationType.STREAM_TIME, 10_000, fired), CONFIG) as d:
        inp = d.create_input_topic("in")
        inp.pipe_input("k", 1, 5_000)
        inp.pipe_input("k", 1, 45_000)  # spans 4 intervals: fires once
        inp.pipe_input("k", 1, 2_000)  # out of order: stream time stays at 45 s
        inp.pipe_input("k", 1, 49_999)
        inp.pipe_input("k", 1, 50_000)
        out = d.create_output_topic("out")
        ticks = [r.value for r in out.read_records_to_list() if r.key == "tick"]
    assert fired == [5_000, 45_000, 50_000]
    assert ticks == fired


def test_wall_clock_fires_one_interval_after_scheduling_and_missed_intervals_once() -> None:
    fired: list[int] = []
    topo = punctuating_topology(PunctuationType.WALL_CLOCK_TIME, 1_000, fired)
    with TopologyTestDriver(topo, CONFIG, initial_wall_clock_time=100_000) as d:
        d.advance_wall_clock_time(999)
        assert fired == []
        d.advance_wall_clock_time(1)
        assert fired == [101_000]
        d.advance_wall_clock_time(timedelta(seconds=5, milliseconds=500))  # 5.5 intervals: once
        assert fired == [101_000, 106_500]
        d.advance_wall_clock_time(500)
        assert fired == [101_000, 106_500, 107_000]


def test_wall_clock_is_not_driven_by_records() -> None:
    fired: list[int] = []
    topo = punctuating_topology(PunctuationType.WALL_CLOCK_TIME, 1_000, fired)
    with TopologyTestDriver(topo, CONFIG, initial_wall_clock_time=0) as d:
        inp = d.create_input_topic("in")
        for i in range(10):
            inp.pipe_input("k", i, i * 10_000)
        assert fired == []


def test_cancel_stops_punctuation() -> None:
    fired: list[int] = []
    topo = punctuating_topology(PunctuationType.STREAM_TIME, 1_000, fired, cancel_after=2)
    with TopologyTestDriver(topo, CONFIG) as d:
        inp = d.create_input_topic("in")
        for i in range(10):
            inp.pipe_input("k", i, i * 1_000)
    assert fired == [0, 1_000]


def test_output_timestamps_follow_input_and_punctuation_time() -> None:
    fired: list[int] = []
    with TopologyTestDriver(punctuating_topology(PunctuationType.STREAM_TIME, 10_000, fired), CONFIG) as d:
        inp = d.create_input_topic("in")
        inp.pipe_input("a", 7, 12_345)
        out = d.create_output_topic("out")
        records = out.read_records_to_list()
    # The forwarded input keeps its timestamp; the punctuation's output carries stream time.
    assert [(r.key, r.timestamp) for r in records] == [("a", 12_345), ("tick", 12_345)]
