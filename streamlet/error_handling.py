"""Exception handlers as Kafka Streams 4.x has them (KIP-1033, KIP-1034): what a handler sees, what it
answers, the built-in handlers, and the dead-letter records they build.

A handler is a callable `handler(context, record, exception) -> Response`:

- `deserialization.exception.handler`: a consumed record the source's serdes (or timestamp extractor)
  cannot read; `record` is the record as consumed (`ConsumedRecord`: topic, partition, offset,
  timestamp, key and value bytes, headers).
- `processing.exception.handler`: a processor (or punctuation) raised; `record` is the `Record` the
  failing node got (None for a punctuation's own error) and `context.processor_node_id` that node. As in
  Kafka Streams 4.x the error is handled at that node: `resume()` drops only that node's processing of the
  record; what the record produced elsewhere stands and the node's later siblings still get it.
- `production.exception.handler`: a record the producer could not send; `record` is the
  `ProducerRecord` (serialized key and value bytes).

`Response.resume()` skips the record and goes on, `Response.fail()` fails the task (the uncaught
exception handler decides what then), `Response.retry()` (production only) is treated as fail for
errors that are not retriable, as in Kafka Streams. A response may carry dead-letter records
(`DeadLetterRecord`), which streamlet sends through the task's collector *whatever the result* — so
under exactly-once they commit or abort with the task's output, and a failing record is dead-lettered
once its transaction commits, never lost and never twice.

The built-in handlers build one dead-letter record when `errors.dead.letter.queue.topic.name` is set
(default: none, no dead-letter queue), with the source record's key and value bytes, its headers, and
six headers saying what failed, named and valued as Kafka Streams' `ExceptionHandlerUtils` does:
`__streams.errors.exception` (the exception's class name), `.message` (its message; no value when the
exception has none), `.stacktrace` (the formatted traceback), `.topic`, `.partition` and `.offset` (of
the source record, as decimal text). The record has no partition of its own: like a Kafka producer's
default partitioner, the collector hashes its key (murmur2), or spreads keyless records round-robin.

A handler class with a `configure(configs)` method (Kafka Streams' `Configurable`) is instantiated and
configured with the application's settings; this is how the built-ins learn the dead-letter topic.
"""

from __future__ import annotations

import enum
import logging
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamlet.record import Headers

log = logging.getLogger(__name__)

DLQ_TOPIC_CONFIG = "errors.dead.letter.queue.topic.name"

HEADER_ERRORS_EXCEPTION_NAME = "__streams.errors.exception"
HEADER_ERRORS_EXCEPTION_MESSAGE_NAME = "__streams.errors.message"
HEADER_ERRORS_STACKTRACE_NAME = "__streams.errors.stacktrace"
HEADER_ERRORS_TOPIC_NAME = "__streams.errors.topic"
HEADER_ERRORS_PARTITION_NAME = "__streams.errors.partition"
HEADER_ERRORS_OFFSET_NAME = "__streams.errors.offset"


class Result(enum.Enum):
    """What a handler decides: go on without the record, fail, or (production only) retry."""

    RESUME = "resume"
    FAIL = "fail"
    RETRY = "retry"


@dataclass(frozen=True)
class ErrorHandlerContext:
    """Where the failure happened (Kafka Streams' `ErrorHandlerContext`): the source record's topic,
    partition, offset, headers and timestamp, the processor node and task, and the source record's raw
    key and value bytes. A punctuation has no source record: topic None, partition and offset -1."""

    topic: str | None
    partition: int
    offset: int
    headers: Headers
    processor_node_id: str | None
    task_id: str
    timestamp: int
    source_raw_key: bytes | None
    source_raw_value: bytes | None


DeadLetterHeaders = tuple[tuple[str, bytes | None], ...]
"""A dead-letter record's headers: a header without a value (None) is legal in Kafka, and the message
header of an exception without a message has none."""


@dataclass(frozen=True)
class DeadLetterRecord:
    """A record a handler asks to be sent, typically to the dead-letter topic. `partition` None lets the
    collector choose as a producer's default partitioner would."""

    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: DeadLetterHeaders = ()
    partition: int | None = None


@dataclass(frozen=True)
class ProducerRecord:
    """What the production exception handler is shown: the output record that could not be sent."""

    topic: str
    partition: int | None
    key: Any
    value: Any
    timestamp: int
    headers: Headers = ()


@dataclass(frozen=True)
class Response:
    """A handler's answer: its `result` and the `dead_letter_queue_records` to send either way."""

    result: Result
    dead_letter_queue_records: tuple[DeadLetterRecord, ...] = field(default=())

    @classmethod
    def resume(cls, dead_letter_queue_records: Sequence[DeadLetterRecord] = ()) -> Response:
        """Skip the record and go on."""
        return cls(Result.RESUME, tuple(dead_letter_queue_records))

    @classmethod
    def fail(cls, dead_letter_queue_records: Sequence[DeadLetterRecord] = ()) -> Response:
        """Fail the task."""
        return cls(Result.FAIL, tuple(dead_letter_queue_records))

    @classmethod
    def retry(cls) -> Response:
        """Production only: send the record again (a retriable error); treated as fail otherwise."""
        return cls(Result.RETRY)


ExceptionHandler = Callable[[ErrorHandlerContext, Any, Exception], Response]
"""`handler(context, record, exception) -> Response`."""


def exception_class_name(exc: BaseException) -> str:
    """The exception's class as Python names it in a traceback: `module.QualName`, the module left out
    for built-in exceptions (Kafka Streams writes Java's fully qualified class name)."""
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ in ("builtins", "__main__") else f"{cls.__module__}.{cls.__qualname__}"


def _text(value: str | None) -> bytes | None:
    return None if value is None else value.encode("utf-8", errors="replace")


def build_dead_letter_record(topic: str, key: bytes | None, value: bytes | None, context: ErrorHandlerContext,
                             exc: BaseException) -> DeadLetterRecord:
    """The record Kafka Streams' built-in handlers send to the dead-letter `topic`: `key` and `value`, the
    context's timestamp and headers, then the six `__streams.errors.*` headers (module docstring)."""
    if not topic:
        raise ValueError(f"{DLQ_TOPIC_CONFIG} must be set to build a dead-letter record")
    message = str(exc) if exc.args else None
    headers = (*context.headers,
               (HEADER_ERRORS_EXCEPTION_NAME, _text(exception_class_name(exc))),
               (HEADER_ERRORS_EXCEPTION_MESSAGE_NAME, _text(message)),
               (HEADER_ERRORS_STACKTRACE_NAME, _text("".join(traceback.format_exception(exc)))),
               (HEADER_ERRORS_TOPIC_NAME, _text(context.topic)),
               (HEADER_ERRORS_PARTITION_NAME, _text(str(context.partition))),
               (HEADER_ERRORS_OFFSET_NAME, _text(str(context.offset))))
    return DeadLetterRecord(topic, key, value, context.timestamp, headers)


def maybe_build_dead_letter_records(topic: str | None, key: bytes | None, value: bytes | None,
                                    context: ErrorHandlerContext, exc: BaseException) -> list[DeadLetterRecord]:
    """`[build_dead_letter_record(...)]` when `topic` is set, else no record."""
    return [] if not topic else [build_dead_letter_record(topic, key, value, context, exc)]


class _DeadLetterConfigured:
    """A built-in handler: reads the dead-letter topic in `configure`, builds its record from the source's
    raw key and value."""

    dead_letter_queue_topic: str | None = None

    def __init__(self, dead_letter_queue_topic: str | None = None) -> None:
        self.dead_letter_queue_topic = dead_letter_queue_topic

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Takes `errors.dead.letter.queue.topic.name` from the application's settings."""
        topic = configs.get(DLQ_TOPIC_CONFIG)
        if topic is not None:
            self.dead_letter_queue_topic = str(topic)

    def _records(self, context: ErrorHandlerContext, exc: Exception) -> list[DeadLetterRecord]:
        return maybe_build_dead_letter_records(self.dead_letter_queue_topic, context.source_raw_key,
                                               context.source_raw_value, context, exc)


class _LoggingHandler(_DeadLetterConfigured):
    """A built-in deserialization or processing handler: logs (a warning when it resumes, an error when it
    fails) in Kafka Streams' words, then answers with the dead-letter record when a topic is set."""

    _fails = False
    _processing = False

    def __call__(self, context: ErrorHandlerContext, record: Any, exc: Exception) -> Response:
        level = logging.ERROR if self._fails else logging.WARNING
        if self._processing:
            log.log(level, "Exception caught during message processing, processor node %s, task %s, source topic "
                    "%s, source partition %s, source offset %s: %s: %s", context.processor_node_id, context.task_id,
                    context.topic, context.partition, context.offset, type(exc).__name__, exc)
        else:
            log.log(level, "Exception caught during deserialization, task %s, topic %s, partition %s, offset %s: "
                    "%s: %s", context.task_id, context.topic, context.partition, context.offset,
                    type(exc).__name__, exc)
        records = self._records(context, exc)
        return Response.fail(records) if self._fails else Response.resume(records)


class LogAndContinueExceptionHandler(_LoggingHandler):
    """Deserialization: log a warning, dead-letter the record when a topic is set, skip it."""


class LogAndFailExceptionHandler(_LoggingHandler):
    """Deserialization (the default): log an error, dead-letter the record when a topic is set, fail."""

    _fails = True


class LogAndContinueProcessingExceptionHandler(_LoggingHandler):
    """Processing: log a warning, dead-letter the source record when a topic is set, skip it."""

    _processing = True


class LogAndFailProcessingExceptionHandler(_LoggingHandler):
    """Processing (the default): log an error, dead-letter the source record when a topic is set, fail."""

    _fails = True
    _processing = True


class DefaultProductionExceptionHandler(_DeadLetterConfigured):
    """Production (the default): fail, dead-lettering the *source* record when a topic is set (as Kafka
    Streams' does: the output could not be sent, the input is what can be replayed)."""

    def __call__(self, context: ErrorHandlerContext, record: Any, exc: Exception) -> Response:
        return Response.fail(self._records(context, exc))


class ContinueProductionExceptionHandler(_DeadLetterConfigured):
    """Production, streamlet's `continue`: log, dead-letter the source record when a topic is set, drop
    the output record and go on. Kafka Streams has no built-in twin (its users write this one)."""

    def __call__(self, context: ErrorHandlerContext, record: Any, exc: Exception) -> Response:
        log.warning("dropped a record for %s that could not be produced: %s: %s",
                    getattr(record, "topic", "?"), type(exc).__name__, exc)
        return Response.resume(self._records(context, exc))
