"""What a task does with a record it cannot deserialize or process: fail, skip, or dead-letter it.

Configured as Kafka Streams configures it:

- `default.deserialization.exception.handler`: `log_and_fail` (default) | `log_and_continue` | `dead_letter`
- `processing.exception.handler`: `log_and_fail` (default) | `log_and_continue` | `dead_letter`
- `default.production.exception.handler`: `fail` (default) | `continue` (applied by the `RecordSender`)
- `errors.dead.letter.queue.topic.name`: the dead-letter topic (default `<application.id>-dlq`; created by
  the runtime when a handler is `dead_letter`).

A dead-lettered record keeps the original key and value bytes and headers, and gains headers naming
where it came from and why (the names of KIP-1034): `__streams.errors.topic`, `.partition`, `.offset`,
`.exception`, `.message`. It goes through the task's `RecordCollector`, so under exactly-once it is
committed in the same transaction as the offsets that skip it: a poison record is never both skipped
and lost, nor written twice. Every skipped or dead-lettered record is counted and logged once, with its
coordinates.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from streamlet.actors.partition_group import ConsumedRecord
from streamlet.actors.record_collector import RecordCollector
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError

log = logging.getLogger(__name__)

DESERIALIZATION_HANDLER = "default.deserialization.exception.handler"
PROCESSING_HANDLER = "processing.exception.handler"
DLQ_TOPIC = "errors.dead.letter.queue.topic.name"
PRODUCTION_HANDLER = "default.production.exception.handler"


class Response(enum.Enum):
    FAIL = "log_and_fail"
    CONTINUE = "log_and_continue"
    DEAD_LETTER = "dead_letter"


_ALIASES = {"fail": Response.FAIL, "continue": Response.CONTINUE, "dlq": Response.DEAD_LETTER}


def parse_response(key: str, value: object) -> Response:
    text = str(value).strip().lower()
    if text in _ALIASES:
        return _ALIASES[text]
    try:
        return Response(text)
    except ValueError:
        choices = ", ".join(r.value for r in Response)
        raise ConfigError(f"{key} must be one of {choices}; got {value!r}") from None


def dead_letter_topic(config: StreamsConfig) -> str | None:
    """The dead-letter topic if any handler uses it, else None."""
    if Response.DEAD_LETTER not in (parse_response(DESERIALIZATION_HANDLER, config[DESERIALIZATION_HANDLER]),
                                    parse_response(PROCESSING_HANDLER, config[PROCESSING_HANDLER])):
        return None
    return str(config.get(DLQ_TOPIC) or f"{config.application_id}-dlq")


def skip_failed_productions(config: StreamsConfig) -> bool:
    """`default.production.exception.handler`: `fail` (default) or `continue` (log, count, go on);
    a record that could not be produced has no dead-letter option."""
    response = parse_response(PRODUCTION_HANDLER, config[PRODUCTION_HANDLER])
    if response is Response.DEAD_LETTER:
        raise ConfigError(f"{PRODUCTION_HANDLER} must be fail or continue; got {config[PRODUCTION_HANDLER]!r}")
    return response is Response.CONTINUE


@dataclass
class ErrorCounts:
    deserialization_skipped: int = 0
    processing_skipped: int = 0
    deserialization_dead_lettered: int = 0
    processing_dead_lettered: int = 0

    @property
    def skipped(self) -> int:
        return self.deserialization_skipped + self.processing_skipped

    @property
    def dead_lettered(self) -> int:
        return self.deserialization_dead_lettered + self.processing_dead_lettered


class RecordErrorHandler:
    """One task's handling of poison records (see the module docstring)."""

    def __init__(self, config: StreamsConfig, task_id: str, collector: RecordCollector) -> None:
        self.task_id = task_id
        self.deserialization = parse_response(DESERIALIZATION_HANDLER, config[DESERIALIZATION_HANDLER])
        self.processing = parse_response(PROCESSING_HANDLER, config[PROCESSING_HANDLER])
        self.dlq_topic = dead_letter_topic(config)
        self._collector = collector
        self.counts = ErrorCounts()

    def on_deserialization_error(self, raw: ConsumedRecord, exc: BaseException) -> bool:
        """True: the record is dealt with (skipped or dead-lettered) and processing goes on."""
        return self._handle(self.deserialization, "deserialize", raw, exc)

    def on_processing_error(self, raw: ConsumedRecord, exc: BaseException) -> bool:
        return self._handle(self.processing, "process", raw, exc)

    def _handle(self, response: Response, what: str, raw: ConsumedRecord, exc: BaseException) -> bool:
        if response is Response.FAIL:
            return False
        where = f"topic {raw.topic} partition {raw.partition} offset {raw.offset}"
        if response is Response.CONTINUE:
            log.warning("task %s skipped a record it could not %s at %s: %s: %s", self.task_id, what, where,
                        type(exc).__name__, exc)
            if what == "deserialize":
                self.counts.deserialization_skipped += 1
            else:
                self.counts.processing_skipped += 1
            return True
        assert self.dlq_topic is not None
        headers = [*(raw.headers or ()),
                   ("__streams.errors.topic", raw.topic.encode()),
                   ("__streams.errors.partition", str(raw.partition).encode()),
                   ("__streams.errors.offset", str(raw.offset).encode()),
                   ("__streams.errors.exception", type(exc).__name__.encode()),
                   ("__streams.errors.message", str(exc).encode(errors="replace")[:4096])]
        partition = raw.partition % max(1, self._collector.partition_count(self.dlq_topic))
        self._collector.send(self.dlq_topic, raw.key, raw.value, raw.timestamp, tuple(headers), partition)
        if what == "deserialize":
            self.counts.deserialization_dead_lettered += 1
        else:
            self.counts.processing_dead_lettered += 1
        log.warning("task %s sent a record it could not %s to %s, from %s: %s: %s", self.task_id, what,
                    self.dlq_topic, where, type(exc).__name__, exc)
        return True
