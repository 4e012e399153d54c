"""Avro serdes in Confluent's wire format: `GenericAvroSerde` (dicts) and `SpecificAvroSerde` (dataclasses).

The framing, registration, subject strategies and schema resolution are confluent-kafka's
`AvroSerializer` / `AvroDeserializer` (fastavro underneath); this module adapts them to streamlet's
`Serde` interface, its errors and its configuration hook.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from streamlet.errors import ConfigError, SerializationError
from streamlet.schema_registry.client import RegistrySettings, registry_client, registry_failure
from streamlet.serdes import Deserializer, Serde, Serializer, is_serde_setting

T = TypeVar("T")
_ID = struct.Struct(">I")

AvroSchema = str | Mapping[str, Any]
"""An Avro schema: its JSON text or the parsed JSON (a dict)."""


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


class _Configurable:
    """The configuration state shared by a serde and its serializer and deserializer."""

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
        self.settings: RegistrySettings | None = None
        self._contexts: dict[str | None, SerializationContext] = {}  # per topic, made once

    def configure(self, config: Mapping[str, Any], is_key: bool, by_hand: bool) -> None:
        settings = self.settings = RegistrySettings.from_config(config)
        client = registry_client(settings)
        strategy = settings.key_strategy if is_key else settings.value_strategy
        conf = {"subject.name.strategy": strategy, "use.latest.version": settings.use_latest_version}
        writer = _schema_text(self.writer_schema) if self.writer_schema is not None else None
        if writer is None and not settings.use_latest_version:
            self.serializer = None  # reading only; writing says why it cannot
        else:
            self.serializer = AvroSerializer(
                client, writer, to_dict=None,
                conf={**conf, "auto.register.schemas": settings.auto_register and writer is not None,
                      "normalize.schemas": settings.normalize})
        reader = self.reader_schema
        self.deserializer = AvroDeserializer(client, _schema_text(reader) if reader is not None else None,
                                             conf=conf)
        self.is_key = is_key
        self.by_hand = by_hand
        self.applied = _fingerprint(config)
        self._contexts = {}

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
        except Exception as exc:
            raise _write_failure(state, exc, topic) from exc
        assert result is not None
        return result


def _write_failure(state: _Configurable, exc: Exception, topic: str | None) -> Exception:
    """The registry unreachable or refusing the credentials (no record's fault: `registry_failure`), else
    a `SerializationError` naming the topic and the subject."""
    where = f"for topic {topic!r}, subject {_subject(state, topic)!r}"
    assert state.settings is not None
    failure = registry_failure(exc, state.settings, f"writing {where}")
    if failure is not None:
        return failure
    if isinstance(exc, SchemaRegistryError):
        return SerializationError(f"{state.kind}: the schema registry refused the schema {where}: "
                                  f"{exc.error_message} (HTTP {exc.http_status_code}, error code {exc.error_code})")
    return SerializationError(f"{state.kind}: the value does not fit the schema {where}: {type(exc).__name__}: {exc}")


def _subject(state: _Configurable, topic: str | None) -> str | None:
    """The subject a value of `topic` is written under (for messages)."""
    assert state.settings is not None
    strategy = state.settings.key_strategy if state.is_key else state.settings.value_strategy
    record_name = None
    if state.writer_schema is not None:
        schema = json.loads(_schema_text(state.writer_schema))
        if isinstance(schema, dict) and "name" in schema:
            name = str(schema["name"])
            record_name = f"{schema['namespace']}.{name}" if schema.get("namespace") and "." not in name else name
    try:
        return strategy(state.context(topic), record_name)
    except Exception:
        return None


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
        except Exception as exc:
            assert state.settings is not None
            failure = registry_failure(exc, state.settings, f"fetching schema id {_schema_id(data)} for a record "
                                                             f"of topic {topic!r}")
            if failure is not None:
                raise failure from exc
            raise _read_error(state, exc, topic, data) from exc
        if state.from_dict is not None and isinstance(value, dict):
            return typing.cast(T, state.from_dict(value))
        return typing.cast(T, value)


def _read_error(state: _Configurable, exc: Exception, topic: str | None, data: bytes) -> SerializationError:
    if isinstance(exc, SchemaRegistryError):
        return SerializationError(f"{state.kind}: schema id {_schema_id(data)} of a record of topic {topic!r} "
                                  f"could not be fetched: {exc.error_message} (HTTP {exc.http_status_code})")
    return SerializationError(f"{state.kind}: the record of topic {topic!r} does not match its writer schema "
                              f"(schema id {_schema_id(data)}): {type(exc).__name__}: {exc}")


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
    """Avro records as instances of a dataclass, in Confluent's wire format (Java's `SpecificAvroSerde`).

    The dataclass is bound to its Avro schema by an `avro_schema` class attribute (JSON text or a dict);
    without one, the schema is derived from its fields (see `avro_schema_of`). Values are written with that
    schema and read back as instances of `record_type`: a record written with another version of the schema
    is resolved against it (fields added with a default get the default, removed fields are dropped).
    `config` and `is_key` as for `GenericAvroSerde`.
    """

    name = "SpecificAvroSerde"

    def __init__(self, record_type: type[T], *, config: Mapping[str, Any] | None = None,
                 is_key: bool = False) -> None:
        if not (isinstance(record_type, type) and dataclasses.is_dataclass(record_type)):
            raise ConfigError(f"SpecificAvroSerde needs a dataclass, got {record_type!r}")
        self.record_type = record_type
        schema = avro_schema_of(record_type)
        state = _Configurable(self.name, schema, schema, _to_dict, _from_dict_for(record_type))
        super().__init__(state, config, is_key)

    def __repr__(self) -> str:
        return f"SpecificAvroSerde({self.record_type.__name__})"


# -- dataclasses <-> Avro -------------------------------------------------------------------------------

_PRIMITIVES: dict[Any, str] = {int: "long", str: "string", float: "double", bool: "boolean", bytes: "bytes"}


def avro_schema_of(record_type: type) -> dict[str, Any]:
    """The Avro schema of a dataclass: its `avro_schema` class attribute (parsed), else derived from the fields.

    Derived: `int` -> long, `float` -> double, `str` -> string, `bool` -> boolean, `bytes` -> bytes,
    `X | None` -> ["null", X], `list[X]` -> array, `dict[str, X]` -> map, a nested dataclass -> a record;
    the record's name is the class's, its namespace the module's; a field's default (a constant) is the
    Avro default, `X | None` fields default to null when they have no default.
    """
    given: AvroSchema | None = getattr(record_type, "avro_schema", None)
    if given is not None:
        return json.loads(given) if isinstance(given, str) else dict(given)
    return _record_schema(record_type, set())


def _record_schema(record_type: type, seen: set[str]) -> dict[str, Any]:
    hints = typing.get_type_hints(record_type)
    fields = []
    for field in dataclasses.fields(record_type):
        avro_type = _avro_type(hints[field.name], seen, f"{record_type.__name__}.{field.name}")
        entry: dict[str, Any] = {"name": field.name, "type": avro_type}
        if field.default is not dataclasses.MISSING and isinstance(field.default, str | int | float | bool | None):
            if field.default is None and isinstance(avro_type, list):
                entry["default"] = None
            elif not isinstance(avro_type, list):
                entry["default"] = field.default
        elif field.default is dataclasses.MISSING and isinstance(avro_type, list) and avro_type[0] == "null":
            entry["default"] = None
        fields.append(entry)
    seen.add(record_type.__qualname__)
    return {"type": "record", "name": record_type.__name__, "namespace": record_type.__module__, "fields": fields}


def _avro_type(hint: Any, seen: set[str], where: str) -> Any:
    if hint in _PRIMITIVES:
        return _PRIMITIVES[hint]
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [arg for arg in args if arg is not type(None)]
        if len(rest) == 1:
            return ["null", _avro_type(rest[0], seen, where)]
    if origin is list and len(args) == 1:
        return {"type": "array", "items": _avro_type(args[0], seen, where)}
    if origin is dict and len(args) == 2 and args[0] is str:
        return {"type": "map", "values": _avro_type(args[1], seen, where)}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint.__qualname__ in seen:  # a type already defined in this schema: by name
            return f"{hint.__module__}.{hint.__name__}"
        return _record_schema(hint, seen)
    raise ConfigError(f"cannot derive an Avro type for {where}: {hint!r}; give the dataclass an "
                      "`avro_schema` class attribute")


def _to_dict(record: Any) -> dict[str, Any]:
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise SerializationError(f"SpecificAvroSerde expects a dataclass instance, got {type(record).__name__}")
    return dataclasses.asdict(record)


def _from_dict_for(record_type: type[T]) -> Callable[[dict[str, Any]], T]:
    """A converter from a decoded dict (nested dicts for nested records) to `record_type`."""
    hints = typing.get_type_hints(record_type)
    converters = {field.name: _converter(hints[field.name])
                  for field in dataclasses.fields(typing.cast(Any, record_type))}

    def convert(value: dict[str, Any]) -> T:
        return record_type(**{name: converters[name](item) if name in converters else item
                              for name, item in value.items() if name in converters})

    return convert


def _identity(value: Any) -> Any:
    return value


def _converter(hint: Any) -> Callable[[Any], Any]:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        inner = _from_dict_for(hint)
        return lambda value: inner(value) if isinstance(value, dict) else value
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [arg for arg in args if arg is not type(None)]
        if len(rest) == 1:
            inner_conv = _converter(rest[0])
            return lambda value: None if value is None else inner_conv(value)
    if origin is list and len(args) == 1:
        item = _converter(args[0])
        if item is not _identity:
            return lambda value: [item(x) for x in value]
    if origin is dict and len(args) == 2:
        item = _converter(args[1])
        if item is not _identity:
            return lambda value: {k: item(x) for k, x in value.items()}
    return _identity

