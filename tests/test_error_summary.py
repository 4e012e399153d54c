"""A processing failure's one-line summary says where it happened: task, topic, partition and offset."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import Consumed, Produced, Serdes, StreamsBuilder
from streamlet.actors.record_collector import ProducedRecord
from streamlet.error_remedies import missing_serde_remedy, production_remedy, unreachable_remedy
from streamlet.errors import DeserializationError, error_summary
from streamlet.kafka.record_sender import ProductionError, RecordSender
from streamlet.kafka.topic_manager import MissingSourceTopicError
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
    # what decides that such a record stops the application, and what else it could do (KIP-1033's names)
    assert "processing.exception.handler is log_and_fail" in summary, summary
    assert "log_and_continue" in summary and "dead_letter" in summary, summary


def test_the_summary_of_a_poison_record_names_the_deserialization_handler_and_its_choices() -> None:
    builder = StreamsBuilder()
    amounts = builder.stream("amounts", Consumed(Serdes.String(), Serdes.Long()))
    amounts.to("out", Produced(Serdes.String(), Serdes.Long()))
    with TopologyTestDriver(builder.build(), {"application.id": "summary"}) as driver:
        topic = driver.create_input_topic("amounts", Serdes.String(), Serdes.Bytes())
        with pytest.raises(DeserializationError) as caught:
            topic.pipe_input("k", b"abc")  # three bytes: no Long
    summary = error_summary(caught.value)
    assert summary.startswith("DeserializationError: failed to deserialize the record at topic 'amounts' partition 0 "
                              "offset 0: "), summary
    assert "deserialization.exception.handler is log_and_fail" in summary, summary
    for choice in ("LogAndFailExceptionHandler", "log_and_continue", "LogAndContinueExceptionHandler", "dead_letter",
                   "errors.dead.letter.queue.topic.name"):
        assert choice in summary, (choice, summary)
    assert "\n" not in summary


def test_a_record_the_producer_refuses_names_the_production_handler() -> None:
    """The record sender's own refusal (a record too large for any batch) under each setting."""
    huge = ProducedRecord(None, b"x" * (RecordSender.MAX_RECORD_BYTES + 1), 0, ())
    for transactional in (False, True):
        sender = RecordSender(producer=None, skip_failed=False, transactional=transactional)
        with pytest.raises(ProductionError) as caught:
            sender._oversized("out", 0, huge)
        summary = error_summary(caught.value)
        assert "production.exception.handler is fail" in summary and "set it to continue" in summary, summary
    sender = RecordSender(producer=None, skip_failed=True)
    sender._oversized("out", 0, huge)  # continue: dropped and counted, no error
    assert sender.dropped == 1


def test_the_remedies_name_their_settings() -> None:
    assert "task.timeout.ms (3000 ms)" in unreachable_remedy("h:9092", 3000, started=True)
    assert "bootstrap.servers (h:9092)" in unreachable_remedy("h:9092", 3000, started=False)
    assert "default.key.serde" in missing_serde_remedy("key")
    assert "exactly_once_v2" in production_remedy(skip_failed=True, transactional=True)


def test_a_summary_without_notes_is_type_and_message() -> None:
    assert error_summary(ValueError("bad")) == "ValueError: bad"


def test_missing_source_topics_say_how_to_create_them() -> None:
    summary = error_summary(MissingSourceTopicError(["orders"]))
    assert "source topics ['orders'] do not exist" in summary and "streamlet topics create" in summary, summary
