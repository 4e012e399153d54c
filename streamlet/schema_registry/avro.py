"""Avro serdes in Confluent's wire format: `GenericAvroSerde` (dicts) and `SpecificAvroSerde` (dataclasses).

The framing, registration, subject strategies and schema resolution are confluent-kafka's
`AvroSerializer` / `AvroDeserializer` (fastavro underneath); this module adapts them to streamlet's
`Serde` interface, its errors and its configuration hook.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

from streamlet.errors import ConfigError, SerializationError
from streamlet.schema_registry.client import RegistrySettings
from streamlet.schema_registry.framing import (
    Builder,
    ConfluentDeserializer,
    ConfluentSerializer,
    RegistryDeserializer,
    RegistrySerde,
    RegistrySerializer,
    RegistryState,
    confluent_conf,
)

T = TypeVar("T")

AvroSchema = str | Mapping[str, Any]
"""An Avro schema: its JSON text or the parsed JSON (a dict)."""


def _schema_text(schema: AvroSchema) -> str:
    """The schema's JSON text; a bare primitive name ("string", "long") is taken as that type. A parsed schema
    is written compact, as Java's Avro `Schema.toString()` writes it: a registry that ids schemas by their text
    (Apicurio) then gives streamlet the id Java's serializers registered for the same schema."""
    if not isinstance(schema, str):
        return json.dumps(schema, separators=(",", ":"))
    try:
        json.loads(schema)
    except ValueError:
        return json.dumps(schema.strip())
    return schema


def _build_for(writer_schema: AvroSchema | None, reader_schema: AvroSchema | None) -> Builder:
    """confluent-kafka's AvroSerializer (None when there is no schema to write with) and AvroDeserializer."""
    writer = _schema_text(writer_schema) if writer_schema is not None else None
    reader = _schema_text(reader_schema) if reader_schema is not None else None

    def build(client: SchemaRegistryClient, settings: RegistrySettings, is_key: bool,
              ) -> tuple[ConfluentSerializer | None, ConfluentDeserializer]:
        conf = confluent_conf(settings, is_key)
        serializer = None
        if writer is not None or settings.use_latest_version:  # else reading only; writing says why it cannot
            serializer = AvroSerializer(
                client, writer, to_dict=None,
                conf={**conf, "auto.register.schemas": settings.auto_register and writer is not None,
                      "normalize.schemas": settings.normalize})
        return serializer, AvroDeserializer(client, reader, conf=conf)

    return build


AvroRegistrySerializer = RegistrySerializer
"""Writes a value as magic byte 0, the schema's 4-byte big-endian id, then the Avro body."""
AvroRegistryDeserializer = RegistryDeserializer
"""Reads Confluent's wire format: the writer's schema by id (cached), resolved against the reader's schema."""


class GenericAvroSerde(RegistrySerde[dict[str, Any]]):
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
        state = RegistryState(self.name, _build_for(schema, reader_schema),
                              "give one (GenericAvroSerde(schema)) or set use.latest.version=true")
        super().__init__(state, config, is_key)


class SpecificAvroSerde(RegistrySerde[T], Generic[T]):
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
        from_dict = _from_dict_for(record_type)
        state = RegistryState(self.name, _build_for(schema, schema), "", _to_dict,
                              lambda value: from_dict(value) if isinstance(value, dict) else value)
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

