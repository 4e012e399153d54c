"""A processing failure's one-line summary says where it happened: task, topic, partition and offset."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import Serdes, StreamsBuilder
from streamlet.errors import error_summary
from streamlet.testing import TopologyTestDriver


def test_the_summary_of_a_processing_error_carries_the_record_coordinates() -> None:
    builder = StreamsBuilder()
    events: Any = builder.stream("events")

    def user_of(value: str) -> str:
        record = {"user": value} if value.startswith("u") else {"name": value}
        return record["user"]  # KeyError: 'user' for a record of another shape

    events.map_values(user_of).to("users")
    with TopologyTestDriver(builder.build(), {"application.id": "summary", "default.key.serde": "String",
                                                   "default.value.serde": "String"}) as driver:
        topic = driver.create_input_topic("events", Serdes.String(), Serdes.String())
        topic.pipe_input("k", "u1")
        with pytest.raises(KeyError) as caught:
            topic.pipe_input("k", "no user here")
    summary = error_summary(caught.value)
    assert summary.startswith("KeyError: 'user' (")
    assert "topic events partition 0 offset 1" in summary, summary
    assert "\n" not in summary


def test_a_summary_without_notes_is_type_and_message() -> None:
    assert error_summary(ValueError("bad")) == "ValueError: bad"
