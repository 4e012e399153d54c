"""KStream-KStream joins with JoinWindows (the differential suite checks the details, store changelogs
included, against Kafka Streams)."""

from __future__ import annotations

from streamlet.dsl import Consumed, JoinWindows, Produced, StreamJoined, StreamsBuilder
from streamlet.record import Record
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology

STR = Serdes.String()
CONFIG = {"application.id": "ss-join", "default.key.serde": "String", "default.value.serde": "String"}


def _topology(kind: str, windows: JoinWindows) -> Topology:
    builder = StreamsBuilder()
    left = builder.stream("l", Consumed(STR, STR))
    right = builder.stream("r", Consumed(STR, STR))
    getattr(left, kind)(right, lambda a, b: f"{a}+{b}", windows).to("out", Produced(STR, STR))
    return builder.build()


def _run(kind: str, events: list[tuple[str, str, str, int]], windows: JoinWindows | None = None) -> list[Record]:
    topology = _topology(kind, windows or JoinWindows.of_time_difference_with_no_grace(10))
    with TopologyTestDriver(topology, CONFIG) as driver:
        inputs = {t: driver.create_input_topic(t, STR, STR) for t in ("l", "r")}
        for topic, key, value, ts in events:
            inputs[topic].pipe_input(key, value, ts)
        return driver.create_output_topic("out", STR, STR).read_records_to_list()


def test_inner_join_pairs_records_within_the_window() -> None:
    records = _run("join", [("l", "k", "a", 100), ("r", "k", "x", 105), ("r", "k", "y", 111), ("l", "k", "b", 120)])
    assert records == [Record("k", "a+x", 105), Record("k", "b+y", 120)]


def test_left_join_emits_an_unmatched_record_once_its_window_has_closed() -> None:
    records = _run("left_join", [("l", "k", "a", 100), ("l", "j", "b", 105), ("l", "j", "c", 111)])
    assert records == [Record("k", "a+None", 100)]  # k@100 is due once stream time passes 110


def test_outer_join_emits_both_sides_unmatched_records() -> None:
    records = _run("outer_join", [("l", "k", "a", 100), ("r", "m", "x", 101), ("l", "z", "c", 130)])
    assert records == [Record("k", "a+None", 100), Record("m", "None+x", 101)]


def test_names_follow_kafka_streams() -> None:
    described = str(_topology("left_join", JoinWindows.of_time_difference_and_grace(5, 2)).describe())
    assert "Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, " \
           "KSTREAM-OUTERSHARED-0000000004-store])" in described
    builder = StreamsBuilder()
    (builder.stream("l").join(builder.stream("r"), lambda a, b: a, JoinWindows.of_time_difference_with_no_grace(5),
                              StreamJoined(name="j", store_name="s")).to("out"))
    named = str(builder.build().describe())
    assert "Processor: j-this-join (stores: [s-other-join-store])" in named
    assert "Processor: j-merge (stores: [])" in named
