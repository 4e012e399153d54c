"""What a task does with a record it cannot deserialize, process or produce: the configured handler
decides (see `streamlet.error_handling` for the handler API and the built-ins), and this module carries
its answer out.

Configured as Kafka Streams 4.x configures it; the older `default.`-prefixed names still work, and a
name given both ways takes the newer one, as in Kafka Streams:

- `deserialization.exception.handler` (`default.deserialization.exception.handler`): `log_and_fail`
  (default) | `log_and_continue` | `dead_letter` | a handler.
- `processing.exception.handler`: `log_and_fail` (default) | `log_and_continue` | `dead_letter` | a handler.
  It also covers punctuations. In the global task it applies only with
  `processing.exception.handler.global.enabled=true` (default false: the error fails the instance), as
  in Kafka Streams 4.4.
- `production.exception.handler` (`default.production.exception.handler`): `fail` (default) | `continue`
  | a handler. A handler is asked about a record its sink cannot serialize (Kafka Streams'
  `handleSerializationError`); when it fails, the sink's error goes on to the processing handler, as in
  Kafka Streams. Records the producer itself cannot deliver (larger than a batch, refused by the broker)
  are decided in `streamlet.kafka.record_sender` by `fail` / `continue` alone (a handler counts as fail).
- Failures that are no record's fault never reach a handler: the schema registry unreachable
  (`RetriableError`: a task reading its input holds the records and retries, see
  `streamlet.actors.partition_group`; anywhere else the task fails) or refusing the credentials
  (`SchemaRegistryAuthError`: the task fails). A handler would skip or dead-letter good records.
- `errors.dead.letter.queue.topic.name`: default none. When set, the built-in handlers send the failed
  record there (also `log_and_fail`, before failing: under at-least-once the task delivers its output
  before it fails, as Kafka Streams' producer does on close; under exactly-once that transaction aborts,
  so a read_committed reader sees dead-letter records only from runs that go on).

`dead_letter` is streamlet's older setting, kept as an alias: `log_and_continue` with the dead-letter
topic defaulting to `<application.id>-dlq`. Names Kafka Streams users know also work:
`LogAndContinueExceptionHandler`, `LogAndFailProcessingExceptionHandler`, ... (with or without
`org.apache.kafka.streams.errors.`), and the short forms `continue`, `fail`, `dlq`.

Dead-letter records go through the task's `RecordCollector`, so under exactly-once they commit in the
same transaction as the offsets that skip their record: a poison record is never both skipped and lost,
nor written twice. The global task has no producer: its handlers' dead-letter records are logged and
dropped (Kafka Streams 4.4 logs the same for global processors).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from streamlet.actors.partition_group import ConsumedRecord
from streamlet.actors.record_collector import ProducedRecord, RecordCollector
from streamlet.config import StreamsConfig
from streamlet.error_handling import (
    DLQ_TOPIC_CONFIG,
    ContinueProductionExceptionHandler,
    DeadLetterRecord,
    DefaultProductionExceptionHandler,
    ErrorHandlerContext,
    ExceptionHandler,
    LogAndContinueExceptionHandler,
    LogAndContinueProcessingExceptionHandler,
    LogAndFailExceptionHandler,
    LogAndFailProcessingExceptionHandler,
    ProducerRecord,
    Response,
    Result,
)
from streamlet.errors import ConfigError, SinkSerializationError, never_handled
from streamlet.partitioner import default_partition
from streamlet.record import Headers, Record
from streamlet.stores.api import RecordContext

log = logging.getLogger(__name__)

DESERIALIZATION_HANDLER = "deserialization.exception.handler"
PROCESSING_HANDLER = "processing.exception.handler"
PRODUCTION_HANDLER = "production.exception.handler"
PROCESSING_HANDLER_GLOBAL = "processing.exception.handler.global.enabled"
DLQ_TOPIC = DLQ_TOPIC_CONFIG
_DEPRECATED = {DESERIALIZATION_HANDLER: "default.deserialization.exception.handler",
               PRODUCTION_HANDLER: "default.production.exception.handler"}
_KS_PACKAGE = "org.apache.kafka.streams.errors."

_BUILT_INS: dict[str, dict[str, type]] = {
    DESERIALIZATION_HANDLER: {
        "log_and_fail": LogAndFailExceptionHandler, "fail": LogAndFailExceptionHandler,
        "logandfailexceptionhandler": LogAndFailExceptionHandler,
        "log_and_continue": LogAndContinueExceptionHandler, "continue": LogAndContinueExceptionHandler,
        "logandcontinueexceptionhandler": LogAndContinueExceptionHandler,
    },
    PROCESSING_HANDLER: {
        "log_and_fail": LogAndFailProcessingExceptionHandler, "fail": LogAndFailProcessingExceptionHandler,
        "logandfailprocessingexceptionhandler": LogAndFailProcessingExceptionHandler,
        "log_and_continue": LogAndContinueProcessingExceptionHandler,
        "continue": LogAndContinueProcessingExceptionHandler,
        "logandcontinueprocessingexceptionhandler": LogAndContinueProcessingExceptionHandler,
    },
    PRODUCTION_HANDLER: {
        "fail": DefaultProductionExceptionHandler, "log_and_fail": DefaultProductionExceptionHandler,
        "defaultproductionexceptionhandler": DefaultProductionExceptionHandler,
        "continue": ContinueProductionExceptionHandler, "log_and_continue": ContinueProductionExceptionHandler,
    },
}
_DEAD_LETTER_ALIASES = ("dead_letter", "dlq")
_DEFAULTS = {DESERIALIZATION_HANDLER: "log_and_fail", PROCESSING_HANDLER: "log_and_fail", PRODUCTION_HANDLER: "fail"}


def handler_setting(config: Mapping[str, Any], key: str) -> tuple[str, Any]:
    """(the key in force, its value): the 4.x name, else its deprecated `default.` name, else the default."""
    value = config.get(key)
    if value is None and key in _DEPRECATED:
        old = config.get(_DEPRECATED[key])
        if old is not None:
            return _DEPRECATED[key], old
    return key, _DEFAULTS[key] if value is None else value


def _uses_dead_letter_alias(config: Mapping[str, Any], key: str) -> bool:
    _, value = handler_setting(config, key)
    return isinstance(value, str) and value.strip().lower() in _DEAD_LETTER_ALIASES


def dead_letter_topic(config: StreamsConfig) -> str | None:
    """The dead-letter topic the built-in handlers write to: `errors.dead.letter.queue.topic.name`, or
    `<application.id>-dlq` when a handler is streamlet's `dead_letter`; None without a dead-letter queue."""
    topic = config.get(DLQ_TOPIC)
    if topic:
        return str(topic)
    if any(_uses_dead_letter_alias(config, key) for key in (DESERIALIZATION_HANDLER, PROCESSING_HANDLER)):
        return f"{config.application_id}-dlq"
    return None


def resolve_handler(config: StreamsConfig, key: str) -> ExceptionHandler:
    """The handler `key` names: a built-in by name, a handler class (instantiated), or a callable; one with
    a `configure(configs)` method gets the application's settings, the dead-letter topic resolved."""
    setting, value = handler_setting(config, key)
    configs = {**config, DLQ_TOPIC: dead_letter_topic(config)}
    handler: Any
    if isinstance(value, str):
        name = value.strip()
        lowered = name.lower().removeprefix(_KS_PACKAGE.lower())
        if lowered in _DEAD_LETTER_ALIASES and key != PRODUCTION_HANDLER:
            lowered = "log_and_continue"
        cls = _BUILT_INS[key].get(lowered)
        if cls is None:
            choices = ", ".join(sorted(n for n in _BUILT_INS[key] if "_" in n or n in ("fail", "continue")))
            extra = "" if key == PRODUCTION_HANDLER else ", dead_letter"
            raise ConfigError(f"{setting} must be one of {choices}{extra}, a Kafka Streams handler class name "
                              f"or a handler callable; got {value!r}")
        handler = cls()
    elif isinstance(value, type):
        handler = value()
    elif callable(value):
        handler = value
    else:
        raise ConfigError(f"{setting} must be a handler name or a callable (context, record, exception) -> "
                          f"Response; got {value!r}")
    configure = getattr(handler, "configure", None)
    if callable(configure):
        configure(configs)
    return handler


def skip_failed_productions(config: StreamsConfig) -> bool:
    """`production.exception.handler` is `continue`: records the producer cannot send are logged, counted
    and dropped (a handler callable decides per record instead: see `streamlet.kafka.record_sender`)."""
    return isinstance(resolve_handler(config, PRODUCTION_HANDLER), ContinueProductionExceptionHandler)


def global_processing_handler_enabled(config: Mapping[str, Any]) -> bool:
    """`processing.exception.handler.global.enabled` (Kafka Streams 4.x, default false)."""
    value = config.get(PROCESSING_HANDLER_GLOBAL, False)
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


@dataclass
class ErrorCounts:
    """What a task's handlers let go: skipped and dead-lettered records by where they failed."""

    deserialization_skipped: int = 0
    processing_skipped: int = 0
    deserialization_dead_lettered: int = 0
    processing_dead_lettered: int = 0
    production_dropped: int = 0
    """Records a sink could not serialize that the production handler dropped (dead-lettered or not)."""
    production_dead_lettered: int = 0

    @property
    def skipped(self) -> int:
        return self.deserialization_skipped + self.processing_skipped

    @property
    def dead_lettered(self) -> int:
        return self.deserialization_dead_lettered + self.processing_dead_lettered + self.production_dead_lettered


class HandlerFailedError(Exception):
    """A handler itself raised (Kafka Streams: "Fatal user code error in ... error callback")."""


class RecordErrorHandler:
    """One task's handling of records it cannot deserialize or process (see the module docstring).
    `is_global`: the global task, where the processing handler applies only when enabled and dead-letter
    records cannot be sent."""

    def __init__(self, config: StreamsConfig, task_id: str, collector: RecordCollector,
                 is_global: bool = False) -> None:
        self.task_id = task_id
        self.deserialization = resolve_handler(config, DESERIALIZATION_HANDLER)
        self.processing: ExceptionHandler | None = resolve_handler(config, PROCESSING_HANDLER)
        self.production = resolve_handler(config, PRODUCTION_HANDLER)
        if is_global and not global_processing_handler_enabled(config):
            self.processing = None
        self.is_global = is_global
        self.dlq_topic = dead_letter_topic(config)
        self._collector = collector
        self.counts = ErrorCounts()
        self.failed_with_dead_letters = False
        """A failing response sent dead-letter records: under at-least-once the task delivers its output
        before it fails (as Kafka Streams' producer does when it closes), so they are not lost."""

    def on_deserialization_error(self, raw: ConsumedRecord, exc: BaseException) -> bool:
        """True: the record is dealt with (skipped, maybe dead-lettered) and processing goes on."""
        if not isinstance(exc, Exception) or never_handled(exc):
            return False
        context = ErrorHandlerContext(raw.topic, raw.partition, raw.offset, tuple(raw.headers or ()), None,
                                      self.task_id, raw.timestamp, raw.key, raw.value)
        return self._carry_out(self._ask(self.deserialization, "deserialization", context, raw, exc), False)

    def on_processing_error(self, ctx: RecordContext, raw: ConsumedRecord | None, record: Record | None,
                            node: str, exc: BaseException) -> bool:
        """True: `node`'s processing of `record` (None: its punctuation) is dropped and processing goes on.
        `ctx` is the failing node's record context (topic, partition, offset, timestamp, headers) and `raw`
        the consumed record it is about, whose bytes the handler's context carries (None when it is not
        the one being processed: a punctuation, a cache flush)."""
        if self.processing is None or not isinstance(exc, Exception) or never_handled(exc):
            return False
        context = self._context(ctx, raw, node)
        return self._carry_out(self._ask(self.processing, "processing", context, record, exc), True)

    def on_production_error(self, ctx: RecordContext, raw: ConsumedRecord | None, exc: SinkSerializationError) -> bool:
        """A sink could not serialize its record: the production handler decides (in the sink, as Kafka
        Streams' record collector asks it). True: the record is dropped (maybe dead-lettered) and the sink
        returns; retry is fail."""
        if never_handled(exc):  # the registry unreachable or refusing the credentials: no record's fault
            return False
        cause = exc.cause or (exc.__cause__ if isinstance(exc.__cause__, Exception) else exc)
        context = self._context(ctx._replace(timestamp=exc.timestamp, headers=exc.headers), raw, exc.node)
        record = ProducerRecord(exc.topic, None, exc.key, exc.value, exc.timestamp, exc.headers)
        response = self._ask(self.production, "production", context, record, cause)
        sent = self._send_dead_letters(response)
        if response.result is not Result.RESUME:
            self.failed_with_dead_letters = self.failed_with_dead_letters or bool(sent)
            return False
        self.counts.production_dropped += 1
        self.counts.production_dead_lettered += bool(sent)
        return True

    def _context(self, ctx: RecordContext, raw: ConsumedRecord | None, node: str) -> ErrorHandlerContext:
        return ErrorHandlerContext(ctx.topic, ctx.partition, ctx.offset, tuple(ctx.headers or ()), node, self.task_id,
                                   ctx.timestamp, None if raw is None else raw.key, None if raw is None else raw.value)

    def _carry_out(self, response: Response, processing: bool) -> bool:
        """Send the response's dead-letter records, count the record; True when processing goes on."""
        sent = self._send_dead_letters(response)
        if response.result is not Result.RESUME:
            self.failed_with_dead_letters = self.failed_with_dead_letters or bool(sent)
            return False
        counts = self.counts
        if processing:
            counts.processing_skipped += not sent
            counts.processing_dead_lettered += bool(sent)
        else:
            counts.deserialization_skipped += not sent
            counts.deserialization_dead_lettered += bool(sent)
        return True

    def _ask(self, handler: ExceptionHandler, what: str, context: ErrorHandlerContext, record: Any,
             exc: Exception) -> Response:
        try:
            response = handler(context, record, exc)
        except Exception as failure:
            raise HandlerFailedError(f"the {what} exception handler raised while handling {type(exc).__name__}: "
                                     f"{exc}") from failure
        if not isinstance(response, Response):
            raise HandlerFailedError(f"the {what} exception handler returned {response!r}, not a Response")
        return response

    def _send_dead_letters(self, response: Response) -> int:
        records = response.dead_letter_queue_records
        if not records:
            return 0
        if self.is_global:
            log.warning("dead-letter records cannot be sent from the global task (global stores and tables); "
                        "%d dropped", len(records))
            return 0
        for r in records:
            send_dead_letter(self._collector, r)
        return len(records)


def send_dead_letter(collector: RecordCollector, r: DeadLetterRecord) -> None:
    """Hand a dead-letter record to the collector, partitioned as a Kafka producer's default partitioner
    would when it names no partition (murmur2 of the key, round robin without one)."""
    if not isinstance(r, DeadLetterRecord):
        raise HandlerFailedError(f"a handler's dead-letter records must be DeadLetterRecord, got {r!r}")
    headers = cast(Headers, tuple(r.headers))  # a None header value is legal: aiokafka writes it as null
    if r.partition is not None:
        collector.send(r.topic, r.key, r.value, r.timestamp, headers, r.partition)
        return
    n = collector.known_partition_count(r.topic)
    if n is None:
        collector.defer(r.topic, ProducedRecord(r.key, r.value, r.timestamp, headers), r.key, r.value, None)
        return
    partition = collector.next_round_robin(r.topic) if r.key is None else default_partition(r.key, n)
    collector.send(r.topic, r.key, r.value, r.timestamp, headers, partition)
