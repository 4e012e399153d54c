"""What every schema'd serde shares, whatever its format: the configuration state (Confluent's settings read
once, the registry client, confluent-kafka's serializer and deserializer built from them), the configure hook
the runtime calls with the application's config, and the serializer and deserializer that frame and unframe
Confluent's wire format through confluent-kafka and turn its failures into streamlet's `SerializationError`.

A format (avro.py, protobuf.py, json_schema.py) gives only a `Builder`: how to make confluent-kafka's
serializer and deserializer for its schema from the client and the settings.
"""

from __future__ import annotations

import struct
import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from streamlet.errors import SerializationError
from streamlet.schema_registry.client import RegistrySettings, registry_client, registry_failure
from streamlet.schema_registry.shipping import ShipsConfiguration
from streamlet.serdes import Deserializer, Serde, Serializer, is_serde_setting

T = TypeVar("T")
_ID = struct.Struct(">I")

ConfluentSerializer = Callable[[Any, SerializationContext], bytes | None]
"""confluent-kafka's serializer: (value, context) -> Confluent-framed bytes."""
ConfluentDeserializer = Callable[[bytes, SerializationContext], Any]
"""confluent-kafka's deserializer: (Confluent-framed bytes, context) -> value."""


class Builder(Protocol):
    """Makes a format's confluent-kafka serializer (None: this serde cannot write) and deserializer."""

    def __call__(self, client: SchemaRegistryClient, settings: RegistrySettings, is_key: bool,
                 ) -> tuple[ConfluentSerializer | None, ConfluentDeserializer]: ...


def schema_id_of(data: bytes) -> int:
    """The schema id in bytes 1-4 of Confluent-framed `data` (at least 5 bytes)."""
    return int(_ID.unpack_from(data, 1)[0])


def schema_id(data: bytes) -> str:
    """The schema id bytes 1-4 of Confluent-framed `data` carry, as text for an error message."""
    return str(schema_id_of(data)) if len(data) >= 5 else "none (fewer than 5 bytes)"


def confluent_conf(settings: RegistrySettings, is_key: bool) -> dict[str, Any]:
    """The settings every confluent-kafka serializer and deserializer takes: the subject name strategy and
    `use.latest.version`."""
    strategy = settings.key_strategy if is_key else settings.value_strategy
    return {"subject.name.strategy": strategy, "use.latest.version": settings.use_latest_version}


class RegistryState(ShipsConfiguration):
    """The configuration state shared by a serde and its serializer and deserializer (picklable: `shipping`;
    `build`, `to_wire` and `from_wire` must pickle too, e.g. module functions or their `functools.partial`)."""

    def __init__(self, kind: str, build: Builder, no_schema_hint: str,
                 to_wire: Callable[[Any], Any] | None = None, from_wire: Callable[[Any], Any] | None = None,
                 ) -> None:
        self.kind = kind
        self.build = build
        self.no_schema_hint = no_schema_hint  # how to give a serde that cannot write a schema
        self.to_wire = to_wire  # the user's value -> what confluent-kafka's serializer takes
        self.from_wire = from_wire  # what confluent-kafka's deserializer gives -> the user's value
        self.by_hand = False
        self.applied: tuple[tuple[str, str], ...] | None = None  # the settings configured with, as text
        self.is_key = False
        self.serializer: ConfluentSerializer | None = None
        self.deserializer: ConfluentDeserializer | None = None
        self._contexts: dict[str | None, SerializationContext] = {}  # per topic, made once
        self.registry: RegistrySettings | None = None  # the settings configured with, read
        self.record_name: str | None = None  # the written schema's full name (subject strategies, messages)
        self.init_shipping()

    def configure(self, config: Mapping[str, Any], is_key: bool, by_hand: bool) -> None:
        settings = self.registry = RegistrySettings.from_config(config)
        if not self.reuse(config, is_key):  # a copy pickled to this process (a Spark worker) configured it already
            self.serializer, self.deserializer = self.build(registry_client(settings), settings, is_key)
        self.is_key = is_key
        self.by_hand = by_hand
        self.applied = _fingerprint(config)
        self._contexts = {}
        self.kept(config, is_key)

    def configure_from_application(self, config: Mapping[str, Any], is_key: bool) -> None:
        """The hook the runtime calls: configure unless configured by hand or already with these settings."""
        if self.by_hand or (self.applied == _fingerprint(config) and self.is_key == is_key):
            return
        self.configure(config, is_key, by_hand=False)

    def context(self, topic: str | None) -> SerializationContext:
        context = self._contexts.get(topic)
        if context is None:
            context = SerializationContext(topic or "", MessageField.KEY if self.is_key else MessageField.VALUE)
            self._contexts[topic] = context
        return context

    def not_configured(self) -> SerializationError:
        return SerializationError(f"{self.kind} is not configured: call .configure(config, is_key) with "
                                  "schema.registry.url, or set schema.registry.url in the application's config")


def _fingerprint(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((key, repr(value)) for key, value in config.items() if is_serde_setting(key)))


class SharesConfiguration:
    """A serde, or its serializer or deserializer: configuring any of them configures all three."""

    def __init__(self, state: RegistryState) -> None:
        self._state = state

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Configure with Confluent's settings (`schema.registry.url`, ...) for keys (`is_key`) or values,
        as Java's `configure(props, isKey)`; configured so by hand, it keeps these settings."""
        self._state.configure(config, is_key, by_hand=True)

    def configure_from_application(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Called by streamlet with the application's config when tasks are built (no-op if configured by hand)."""
        self._state.configure_from_application(config, is_key)


class RegistrySerializer(SharesConfiguration, Serializer[T]):
    """Writes a value as magic byte 0, the schema's 4-byte big-endian id, then the body in the serde's format
    (Protobuf: the message indexes first)."""

    def __init__(self, state: RegistryState) -> None:
        Serializer.__init__(self)
        SharesConfiguration.__init__(self, state)

    def serialize(self, topic: str | None, data: T | None) -> bytes | None:
        if data is None:
            return None
        state = self._state
        if state.serializer is None:
            if state.deserializer is None:
                raise state.not_configured()
            raise SerializationError(f"{state.kind} has no schema to write with: {state.no_schema_hint}")
        value = state.to_wire(data) if state.to_wire is not None else data
        try:
            result = state.serializer(value, state.context(topic))
        except Exception as exc:
            raise _write_failure(state, exc, topic) from exc
        assert result is not None
        return result


def _write_failure(state: RegistryState, exc: Exception, topic: str | None) -> Exception:
    """The registry unreachable or refusing the credentials (no record's fault: `registry_failure`), else
    a `SerializationError` naming the topic and the subject."""
    where = f"for topic {topic!r}, subject {_subject(state, topic)!r}"
    assert state.registry is not None
    failure = registry_failure(exc, state.registry, f"writing {where}")
    if failure is not None:
        return failure
    if isinstance(exc, SchemaRegistryError):
        return SerializationError(f"{state.kind}: the schema registry refused the schema {where}: "
                                  f"{exc.error_message} (HTTP {exc.http_status_code}, error code {exc.error_code})")
    return SerializationError(f"{state.kind}: the value does not fit the schema {where}: {type(exc).__name__}: {exc}")


def _subject(state: RegistryState, topic: str | None) -> str | None:
    """The subject a value of `topic` is written under (for messages)."""
    assert state.registry is not None
    strategy = state.registry.key_strategy if state.is_key else state.registry.value_strategy
    try:
        return str(strategy(state.context(topic), state.record_name))
    except Exception:
        return None


class RegistryDeserializer(SharesConfiguration, Deserializer[T]):
    """Reads Confluent's wire format: the writer's schema by id from the registry (cached), resolved against
    the reader's schema when there is one."""

    def __init__(self, state: RegistryState) -> None:
        Deserializer.__init__(self)
        SharesConfiguration.__init__(self, state)

    def deserialize(self, topic: str | None, data: bytes | None) -> T | None:
        if data is None:
            return None
        state = self._state
        if state.deserializer is None:
            raise state.not_configured()
        if not data or data[0] != 0:
            raise SerializationError(f"{state.kind}: unknown magic byte {data[:1].hex() or 'none'} (expected 00) "
                                     f"in a record of topic {topic!r}, schema id {schema_id(data)}: not Confluent's "
                                     "wire format")
        try:
            value = state.deserializer(data, state.context(topic))
        except Exception as exc:
            assert state.registry is not None
            failure = registry_failure(exc, state.registry, f"fetching schema id {schema_id(data)} for a record "
                                                            f"of topic {topic!r}")
            if failure is not None:
                raise failure from exc
            raise _read_error(state, exc, topic, data) from exc
        if state.from_wire is not None and value is not None:
            return typing.cast(T, state.from_wire(value))
        return typing.cast(T, value)


def _read_error(state: RegistryState, exc: Exception, topic: str | None, data: bytes) -> SerializationError:
    if isinstance(exc, SchemaRegistryError):
        return SerializationError(f"{state.kind}: schema id {schema_id(data)} of a record of topic {topic!r} "
                                  f"could not be fetched: {exc.error_message} (HTTP {exc.http_status_code})")
    return SerializationError(f"{state.kind}: the record of topic {topic!r} does not match its writer schema "
                              f"(schema id {schema_id(data)}): {type(exc).__name__}: {exc}")


class RegistrySerde(SharesConfiguration, Serde[T], Generic[T]):
    """The base of the schema'd serdes: a `Serde` whose serializer and deserializer share one configuration."""

    def __init__(self, state: RegistryState, config: Mapping[str, Any] | None, is_key: bool) -> None:
        SharesConfiguration.__init__(self, state)
        Serde.__init__(self, RegistrySerializer(state), RegistryDeserializer(state))
        if config is not None:
            self.configure(config, is_key)

    @property
    def configured(self) -> bool:
        """True once configured, by hand or with the application's config."""
        return self._state.deserializer is not None

    def __repr__(self) -> str:
        return f"{self.name}()"
