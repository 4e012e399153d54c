"""The exception-handler API (streamlet.error_handling, Kafka Streams 4.x's KIP-1033/KIP-1034): handler
callables and classes, their responses and dead-letter records, the settings' names and aliases."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import Processor, Record, Serdes, Topology
from streamlet.actors.error_handlers import HandlerFailedError, dead_letter_topic, resolve_handler
from streamlet.config import StreamsConfig
from streamlet.error_handling import (
    DeadLetterRecord,
    ErrorHandlerContext,
    LogAndContinueExceptionHandler,
    LogAndContinueProcessingExceptionHandler,
    LogAndFailExceptionHandler,
    Response,
)
from streamlet.errors import ConfigError
from streamlet.testing import TopologyTestDriver

S, INT, B = Serdes.String(), Serdes.Integer(), Serdes.ByteArray()


class _RaiseOnSeven(Processor):
    def process(self, record: Record) -> None:
        if record.value == 7:
            raise ValueError("seven")
        self.context.forward(record)


def _driver(config: dict[str, Any]) -> TopologyTestDriver:
    topology = Topology()
    topology.add_source("src", "in", key_deserializer=S.deserializer, value_deserializer=INT.deserializer)
    topology.add_processor("proc", _RaiseOnSeven, "src")
    topology.add_sink("out", "out", "proc", key_serializer=S.serializer, value_serializer=INT.serializer)
    return TopologyTestDriver(topology, {"application.id": "api", **config})


def test_a_handler_callable_sees_the_context_and_its_dead_letter_records_are_sent() -> None:
    seen: list[tuple[ErrorHandlerContext, Any, Exception]] = []

    def handler(context: ErrorHandlerContext, record: Any, exc: Exception) -> Response:
        seen.append((context, record, exc))
        return Response.resume([DeadLetterRecord("mine", b"k", context.source_raw_value, 5, (("why", b"7"),))])

    with _driver({"processing.exception.handler": handler}) as driver:
        pipe = driver.create_input_topic("in", S, INT)
        pipe.pipe_input("a", 7, 100, headers=(("h", b"1"),))
        pipe.pipe_input("b", 1, 101)
        got = driver.create_output_topic("mine", B, B).read_records_to_list()
        assert driver.create_output_topic("out", S, INT).read_values_to_list() == [1]
    [(context, record, exc)] = seen
    assert (context.topic, context.partition, context.offset, context.timestamp) == ("in", 0, 0, 100)
    assert context.headers == (("h", b"1"),) and context.source_raw_key == b"a"
    assert context.source_raw_value == b"\0\0\0\x07" and context.task_id == "0_0"
    assert record.value == 7 and isinstance(exc, ValueError)
    assert [(r.key, r.value, r.timestamp, tuple(r.headers)) for r in got] == [
        (b"k", b"\0\0\0\x07", 5, (("why", b"7"),))]


def test_a_failing_response_fails_after_sending_its_dead_letter_records() -> None:
    def handler(context: ErrorHandlerContext, record: Any, exc: Exception) -> Response:
        return Response.fail([DeadLetterRecord("mine", None, b"x", 1)])

    with _driver({"processing.exception.handler": handler}) as driver:
        with pytest.raises(ValueError, match="seven"):
            driver.create_input_topic("in", S, INT).pipe_input("a", 7, 100)
        assert driver.create_output_topic("mine", B, B).read_values_to_list() == [b"x"]


@pytest.mark.parametrize("answer", [None, "continue", lambda: 1])
def test_a_handler_that_answers_no_response_fails_naming_it(answer: Any) -> None:
    with (_driver({"processing.exception.handler": lambda c, r, e: answer}) as driver,
          pytest.raises(HandlerFailedError, match="not a Response")):
        driver.create_input_topic("in", S, INT).pipe_input("a", 7, 100)


def test_a_handler_that_raises_fails_with_both_errors() -> None:
    def handler(context: ErrorHandlerContext, record: Any, exc: Exception) -> Response:
        raise KeyError("inside the handler")

    with (_driver({"deserialization.exception.handler": handler}) as driver,
          pytest.raises(HandlerFailedError, match="deserialization exception handler raised") as info):
        driver.create_input_topic("in", S, B).pipe_input("a", b"abc", 100)
    assert isinstance(info.value.__cause__, KeyError)


class _Configured(LogAndContinueExceptionHandler):
    configured: dict[str, Any] = {}

    def configure(self, configs: Any) -> None:
        type(self).configured = dict(configs)
        super().configure(configs)


def test_a_handler_class_is_instantiated_and_configured_with_the_settings() -> None:
    with _driver({"deserialization.exception.handler": _Configured,
                  "errors.dead.letter.queue.topic.name": "bad-input"}) as driver:
        driver.create_input_topic("in", S, B).pipe_input("a", b"abc", 100)
        assert driver.create_output_topic("bad-input", B, B).read_values_to_list() == [b"abc"]
    assert _Configured.configured["errors.dead.letter.queue.topic.name"] == "bad-input"


def test_settings_names_aliases_and_defaults() -> None:
    config = StreamsConfig({"application.id": "app"})
    assert isinstance(resolve_handler(config, "deserialization.exception.handler"), LogAndFailExceptionHandler)
    assert dead_letter_topic(config) is None  # Kafka Streams' default: no dead-letter queue
    old = StreamsConfig({"application.id": "app", "default.deserialization.exception.handler": "log_and_continue"})
    assert isinstance(resolve_handler(old, "deserialization.exception.handler"), LogAndContinueExceptionHandler)
    both = StreamsConfig({"application.id": "app", "default.deserialization.exception.handler": "log_and_continue",
                          "deserialization.exception.handler": "log_and_fail"})
    assert isinstance(resolve_handler(both, "deserialization.exception.handler"), LogAndFailExceptionHandler)
    java = StreamsConfig({"application.id": "app", "processing.exception.handler":
                          "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler"})
    assert isinstance(resolve_handler(java, "processing.exception.handler"), LogAndContinueProcessingExceptionHandler)
    alias = StreamsConfig({"application.id": "app", "processing.exception.handler": "dead_letter"})
    handler = resolve_handler(alias, "processing.exception.handler")
    assert isinstance(handler, LogAndContinueProcessingExceptionHandler)
    assert handler.dead_letter_queue_topic == dead_letter_topic(alias) == "app-dlq"
    named = StreamsConfig({"application.id": "app", "processing.exception.handler": "dead_letter",
                           "errors.dead.letter.queue.topic.name": "poison"})
    assert dead_letter_topic(named) == "poison"
    with pytest.raises(ConfigError, match="processing.exception.handler must be one of"):
        resolve_handler(StreamsConfig({"application.id": "app", "processing.exception.handler": "skip"}),
                        "processing.exception.handler")
    with pytest.raises(ConfigError, match="default.production.exception.handler must be one of"):
        resolve_handler(StreamsConfig({"application.id": "app", "default.production.exception.handler": "dlq"}),
                        "production.exception.handler")
