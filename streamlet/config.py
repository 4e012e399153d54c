"""`StreamsConfig`: Kafka Streams' configuration keys, dotted or snake_case, with its defaults.

Keys are stored in their dotted form so that a config printed or logged reads like a Java one.
Unknown keys are kept (they may be client settings passed through), but a known key with a bad value
fails fast, at construction, with the key's name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from streamlet.errors import ConfigError
from streamlet.serdes import Serde, resolve_serde

AT_LEAST_ONCE = "at_least_once"
OUTER_JOIN_EMIT_INTERVAL_MS = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"
"""Kafka Streams' internal setting: how often (wall-clock ms) a left/outer stream join looks for late results."""
EXACTLY_ONCE_V2 = "exactly_once_v2"

DEFAULTS: dict[str, Any] = {
    "application.id": None,
    "bootstrap.servers": "127.0.0.1:9092",
    "default.key.serde": None,
    "default.value.serde": None,
    "default.timestamp.extractor": None,
    "default.deserialization.exception.handler": "log_and_fail",
    "default.production.exception.handler": "fail",
    "processing.exception.handler": "log_and_fail",
    "errors.dead.letter.queue.topic.name": None,  # <application.id>-dlq when a handler is dead_letter
    "processing.guarantee": AT_LEAST_ONCE,
    "commit.interval.ms": None,  # 30000 under at_least_once, 100 under exactly_once_v2
    "statestore.cache.max.bytes": 10 * 1024 * 1024,
    "state.dir": None,  # <tmp>/streamlet by default, as Kafka Streams uses <tmp>/kafka-streams
    "num.standby.replicas": 0,
    "num.stream.threads": 1,
    "replication.factor": -1,
    "auto.offset.reset": "earliest",
    "max.poll.records": 1000,
    "poll.ms": 100,
    "session.timeout.ms": 45000,
    "heartbeat.interval.ms": 3000,
    "max.task.idle.ms": 0,
    # A partition whose task holds this many records not yet processed (a join waiting for its table)
    # is paused until the task works its queue down, as in Kafka Streams.
    "buffered.records.per.partition": 1000,
    "repartition.purge.interval.ms": 30000,
    "client.id": "",
    "transaction.timeout.ms": 10000,
    # What a failure of the running client does when no handler function is set (KafkaStreams.
    # set_uncaught_exception_handler): shutdown_client | replace_thread | shutdown_application.
    "uncaught.exception.handler": "shutdown_client",  # Kafka Streams' producer default under exactly-once
}

_INT_KEYS = {
    "commit.interval.ms", "statestore.cache.max.bytes", "num.standby.replicas", "num.stream.threads",
    "replication.factor", "max.poll.records", "poll.ms", "session.timeout.ms", "heartbeat.interval.ms",
    "max.task.idle.ms", "transaction.timeout.ms", "buffered.records.per.partition",
}


def normalize_key(key: str) -> str:
    """`application_id` -> `application.id`; dotted keys pass unchanged."""
    return key.replace("_", ".") if "." not in key else key


class StreamsConfig(Mapping[str, Any]):
    """Configuration of a streams application; a read-only mapping of dotted keys."""

    def __init__(self, mapping: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        values: dict[str, Any] = dict(DEFAULTS)
        for source in (mapping or {}, kwargs):
            for key, value in source.items():
                values[normalize_key(str(key))] = value
        for key in _INT_KEYS:
            if values.get(key) is not None:
                try:
                    values[key] = int(values[key])
                except (TypeError, ValueError) as exc:
                    raise ConfigError(f"{key} must be an integer, got {values[key]!r}") from exc
        guarantee = str(values["processing.guarantee"]).lower()
        if guarantee == "exactly_once_beta":
            guarantee = EXACTLY_ONCE_V2
        if guarantee not in (AT_LEAST_ONCE, EXACTLY_ONCE_V2):
            raise ConfigError(
                f"processing.guarantee must be {AT_LEAST_ONCE} or {EXACTLY_ONCE_V2}, got {guarantee!r}"
            )
        values["processing.guarantee"] = guarantee
        if values["commit.interval.ms"] is None:
            values["commit.interval.ms"] = 100 if guarantee == EXACTLY_ONCE_V2 else 30000
        if values["statestore.cache.max.bytes"] < 0:
            raise ConfigError("statestore.cache.max.bytes must not be negative")
        self._values = values

    @classmethod
    def of(cls, config: StreamsConfig | Mapping[str, Any] | None) -> StreamsConfig:
        """Every place that takes a config also takes a plain dict (or nothing)."""
        if isinstance(config, StreamsConfig):
            return config
        return cls(config)

    def __getitem__(self, key: str) -> Any:
        return self._values[normalize_key(key)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(normalize_key(key), default)

    def with_overrides(self, **overrides: Any) -> StreamsConfig:
        merged = dict(self._values)
        for key, value in overrides.items():
            merged[normalize_key(key)] = value
        return StreamsConfig(merged)

    @property
    def application_id(self) -> str:
        app_id = self._values.get("application.id")
        if not app_id:
            raise ConfigError("application.id is required")
        return str(app_id)

    @property
    def exactly_once(self) -> bool:
        return bool(self._values["processing.guarantee"] == EXACTLY_ONCE_V2)

    def default_key_serde(self) -> Serde[Any] | None:
        return resolve_serde(self._values.get("default.key.serde"))

    def default_value_serde(self) -> Serde[Any] | None:
        return resolve_serde(self._values.get("default.value.serde"))

    def __repr__(self) -> str:
        """Secrets (passwords, sasl.jaas.config, keys, tokens) show as [hidden]: configs get logged."""
        from streamlet.runtime.client_settings import redact

        return f"StreamsConfig({redact(self._values)!r})"
