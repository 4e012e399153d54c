"""KTable-KTable join / left_join / outer_join (the differential suite checks the details, timestamps and
changelogs included, against Kafka Streams)."""

from __future__ import annotations

import pytest

from streamlet.dsl import Consumed, Materialized, Produced, StreamsBuilder
from streamlet.record import Record
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver

STR = Serdes.String()
CONFIG = {"application.id": "tt-join", "statestore.cache.max.bytes": 0, "default.key.serde": "String",
          "default.value.serde": "String"}


def _run(kind: str) -> list[Record]:
    builder = StreamsBuilder()
    left = builder.table("l", Consumed(STR, STR))
    right = builder.table("r", Consumed(STR, STR))
    join = getattr(left, kind)
    join(right, lambda a, b: f"{a}+{b}", Materialized("joined")).to_stream().to("out", Produced(STR, STR))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        ltopic, rtopic = driver.create_input_topic("l", STR, STR), driver.create_input_topic("r", STR, STR)
        ltopic.pipe_input("k", "a", 1)
        rtopic.pipe_input("k", "x", 5)
        ltopic.pipe_input("k", None, 3)
        rtopic.pipe_input("k", None, 9)
        return driver.create_output_topic("out", STR, STR).read_records_to_list()


@pytest.mark.parametrize(("kind", "expected"), [
    ("join", [Record("k", "a+x", 5), Record("k", None, 5)]),
    ("left_join", [Record("k", "a+None", 1), Record("k", "a+x", 5), Record("k", None, 5)]),
    ("outer_join", [Record("k", "a+None", 1), Record("k", "a+x", 5), Record("k", "None+x", 5),
                    Record("k", None, 9)]),
])
def test_rows_and_timestamps(kind: str, expected: list[Record]) -> None:
    assert _run(kind) == expected
