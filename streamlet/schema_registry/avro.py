"""Avro serdes in Confluent's wire format: `GenericAvroSerde` (dicts) and `SpecificAvroSerde` (typed records:
dataclasses, pydantic models, msgspec structs; their schemas and converters are `typed`'s).

The framing, registration, subject strategies and schema resolution are confluent-kafka's
`AvroSerializer` / `AvroDeserializer` (fastavro underneath); this module adapts them to streamlet's
`Serde` interface, its errors and its configuration hook.
"""

from __future__ import annotations

import json
import struct
import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from streamlet.errors import SerializationError
from streamlet.schema_registry.client import RegistrySettings, registry_client
from streamlet.schema_registry.shipping import ConcurrentAvroSerializer, ShipsConfiguration
from streamlet.schema_registry.typed import AvroCodec, AvroSchema, avro_schema_of
from streamlet.serdes import Deserializer, Serde, Serializer, is_serde_setting

__all__ = ["AvroRegistryDeserializer", "AvroRegistrySerializer", "AvroSchema", "GenericAvroSerde",
           "SpecificAvroSerde", "avro_schema_of"]

T = TypeVar("T")
_ID = struct.Struct(">I")

def _schema_text(schema: AvroSchema) -> str:
    """The schema's JSON text; a bare primitive name ("string", "long") is taken as that type."""
    if not isinstance(schema, str):
        return json.dumps(schema)
    try:
        json.loads(schema)
    except ValueError:
        return json.dumps(schema.strip())
    return schema


def _schema_id(data: bytes) -> str:
    return str(_ID.unpack_from(data, 1)[0]) if len(data) >= 5 else "none (fewer than 5 bytes)"


class _Configurable(ShipsConfiguration):
    """The configuration state shared by a serde and its serializer and deserializer (picklable: `shipping`)."""

    def __init__(self, kind: str, writer_schema: AvroSchema | None, reader_schema: AvroSchema | None,
                 to_dict: Callable[[Any], dict[str, Any]] | None, from_dict: Callable[[dict[str, Any]], Any] | None,
                 ) -> None:
        self.kind = kind
        self.writer_schema = writer_schema
        self.reader_schema = reader_schema
        self.to_dict = to_dict
        self.from_dict = from_dict
        self.by_hand = False
        self.applied: tuple[tuple[str, str], ...] | None = None  # the settings configured with, as text
        self.is_key = False
        self.serializer: AvroSerializer | None = None
        self.deserializer: AvroDeserializer | None = None
        self._contexts: dict[str | None, SerializationContext] = {}  # per topic, made once
        self.init_shipping()

    def configure(self, config: Mapping[str, Any], is_key: bool, by_hand: bool) -> None:
        if not self.reuse(config, is_key):  # a copy pickled to this process (a Spark worker) configured it already
            self._make(config, is_key)
        self.is_key = is_key
        self.by_hand = by_hand
        self.applied = _fingerprint(config)
        self._contexts = {}
        self.kept(config, is_key)

    def _make(self, config: Mapping[str, Any], is_key: bool) -> None:
        settings = RegistrySettings.from_config(config)
        client = registry_client(settings)
        strategy = settings.key_strategy if is_key else settings.value_strategy
        conf = {"subject.name.strategy": strategy, "use.latest.version": settings.use_latest_version}
        writer = _schema_text(self.writer_schema) if self.writer_schema is not None else None
        if writer is None and not settings.use_latest_version:
            self.serializer = None  # reading only; writing says why it cannot
        else:
            self.serializer = ConcurrentAvroSerializer(
                client, writer, to_dict=None,
                conf={**conf, "auto.register.schemas": settings.auto_register and writer is not None,
                      "normalize.schemas": settings.normalize})
        reader = self.reader_schema
        self.deserializer = AvroDeserializer(client, _schema_text(reader) if reader is not None else None,
                                             conf=conf)

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


class _SharesConfiguration:
    """A serde, or its serializer or deserializer: configuring any of them configures all three."""

    def __init__(self, state: _Configurable) -> None:
        self._state = state

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Configure with Confluent's settings (`schema.registry.url`, ...) for keys (`is_key`) or values,
        as Java's `configure(props, isKey)`; configured so by hand, it keeps these settings."""
        self._state.configure(config, is_key, by_hand=True)

    def configure_from_application(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Called by streamlet with the application's config when tasks are built (no-op if configured by hand)."""
        self._state.configure_from_application(config, is_key)


class AvroRegistrySerializer(_SharesConfiguration, Serializer[T]):
    """Writes a value as magic byte 0, the schema's 4-byte big-endian id, then the Avro body."""

    def __init__(self, state: _Configurable) -> None:
        Serializer.__init__(self)
        _SharesConfiguration.__init__(self, state)

    def serialize(self, topic: str | None, data: T | None) -> bytes | None:
        if data is None:
            return None
        state = self._state
        if state.serializer is None:
            if state.deserializer is None:
                raise state.not_configured()
            raise SerializationError(f"{state.kind} has no schema to write with: give one (GenericAvroSerde(schema)) "
                                     "or set use.latest.version=true")
        value = state.to_dict(data) if state.to_dict is not None else data
        try:
            result = state.serializer(value, state.context(topic))
        except SchemaRegistryError as exc:
            raise SerializationError(f"{state.kind}: the schema registry refused the schema for topic "
                                     f"{topic!r}: {exc.error_message} (HTTP {exc.http_status_code}, "
                                     f"error code {exc.error_code})") from exc
        except Exception as exc:
            raise SerializationError(f"{state.kind} cannot serialize {type(data).__name__} for topic {topic!r}: "
                                     f"{type(exc).__name__}: {exc}") from exc
        assert result is not None
        return result


class AvroRegistryDeserializer(_SharesConfiguration, Deserializer[T]):
    """Reads Confluent's wire format: the writer's schema by id from the registry (cached), resolved against
    the reader's schema when there is one."""

    def __init__(self, state: _Configurable) -> None:
        Deserializer.__init__(self)
        _SharesConfiguration.__init__(self, state)

    def deserialize(self, topic: str | None, data: bytes | None) -> T | None:
        if data is None:
            return None
        state = self._state
        if state.deserializer is None:
            raise state.not_configured()
        if not data or data[0] != 0:
            raise SerializationError(f"{state.kind}: unknown magic byte {data[:1].hex() or 'none'} (expected 00) "
                                     f"in a record of topic {topic!r}, schema id {_schema_id(data)}: not Confluent's "
                                     "wire format")
        try:
            value = state.deserializer(data, state.context(topic))
        except SchemaRegistryError as exc:
            raise SerializationError(f"{state.kind}: schema id {_schema_id(data)} of a record of topic {topic!r} "
                                     f"could not be fetched: {exc.error_message} (HTTP {exc.http_status_code})"
                                     ) from exc
        except Exception as exc:
            raise SerializationError(f"{state.kind}: the record of topic {topic!r} does not match its writer schema "
                                     f"(schema id {_schema_id(data)}): {type(exc).__name__}: {exc}") from exc
        if state.from_dict is not None and isinstance(value, dict):
            return typing.cast(T, state.from_dict(value))
        return typing.cast(T, value)


class _AvroSerde(_SharesConfiguration, Serde[T]):
    def __init__(self, state: _Configurable, config: Mapping[str, Any] | None, is_key: bool) -> None:
        _SharesConfiguration.__init__(self, state)
        Serde.__init__(self, AvroRegistrySerializer(state), AvroRegistryDeserializer(state))
        if config is not None:
            self.configure(config, is_key)

    @property
    def configured(self) -> bool:
        """True once configured, by hand or with the application's config."""
        return self._state.deserializer is not None

    def __repr__(self) -> str:
        return f"{self.name}()"


class GenericAvroSerde(_AvroSerde[dict[str, Any]]):
    """Avro records as dicts, in Confluent's wire format (Java's `GenericAvroSerde`).

    `schema` (JSON text or a dict) is the schema values are written with; without it, set
    `use.latest.version=true` to write with the subject's latest registered schema. Reading needs no schema:
    a record comes back as the dict its writer's schema (fetched by id) describes, unless `reader_schema`
    is given, then it is resolved against that (schema evolution). `config` and `is_key` configure it at
    once (as `.configure(config, is_key)`); without them, the application's config does when it runs.
    """

    name = "GenericAvroSerde"

    def __init__(self, schema: AvroSchema | None = None, *, reader_schema: AvroSchema | None = None,
                 config: Mapping[str, Any] | None = None, is_key: bool = False) -> None:
        super().__init__(_Configurable(self.name, schema, reader_schema, None, None), config, is_key)


class SpecificAvroSerde(_AvroSerde[T], Generic[T]):
    """Avro records as instances of a dataclass, pydantic model or msgspec struct, in Confluent's wire format
    (Java's `SpecificAvroSerde`).

    The type is bound to its Avro schema by `schema` (JSON text or a dict), else by an `avro_schema` class
    attribute, else the schema is derived from its fields (see `avro_schema_of`). Values are written with
    that schema and read back as instances of `record_type`: a record written with another version of the
    schema is resolved against it (fields added with a default get the default, removed fields are
    dropped). `config` and `is_key` as for `GenericAvroSerde`.
    """

    name = "SpecificAvroSerde"

    def __init__(self, record_type: type[T], *, schema: AvroSchema | None = None,
                 config: Mapping[str, Any] | None = None, is_key: bool = False) -> None:
        codec = AvroCodec(record_type, schema)
        self.record_type = record_type
        state = _Configurable(self.name, codec.schema, codec.schema, codec.to_dict, codec.from_dict)
        super().__init__(state, config, is_key)

    def __repr__(self) -> str:
        return f"SpecificAvroSerde({self.record_type.__name__})"
