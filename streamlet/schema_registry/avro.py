"""Avro serdes in Confluent's wire format: `GenericAvroSerde` (dicts) and `SpecificAvroSerde` (typed records:
dataclasses, pydantic models, msgspec structs; their schemas and converters are `typed`'s).

The framing, registration, subject strategies and schema resolution are confluent-kafka's
`AvroSerializer` / `AvroDeserializer` (fastavro underneath); this module adapts them to streamlet's
`Serde` interface, its errors and its configuration hook. Past a topic's first record, plain schemas are
written and read directly with fastavro, to the same bytes and values (`avro_fast`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer

from streamlet.schema_registry.avro_fast import direct
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
from streamlet.schema_registry.shipping import ConcurrentAvroSerializer
from streamlet.schema_registry.typed import AvroCodec, AvroSchema, avro_schema_of

__all__ = ["AvroRegistryDeserializer", "AvroRegistrySerializer", "AvroSchema", "GenericAvroSerde",
           "SpecificAvroSerde", "avro_schema_of"]

T = TypeVar("T")

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
    """confluent-kafka's AvroSerializer (None when there is no schema to write with) and AvroDeserializer, made
    by a picklable builder (a serde's state is shipped to Spark's workers: `shipping`)."""
    writer = _schema_text(writer_schema) if writer_schema is not None else None
    reader = _schema_text(reader_schema) if reader_schema is not None else None
    return functools.partial(_build, writer, reader)


def _build(writer: str | None, reader: str | None, client: SchemaRegistryClient, settings: RegistrySettings,
           is_key: bool) -> tuple[ConfluentSerializer | None, ConfluentDeserializer]:
    conf = confluent_conf(settings, is_key)
    serializer = None
    if writer is not None or settings.use_latest_version:  # else reading only; writing says why it cannot
        serializer = ConcurrentAvroSerializer(
            client, writer, to_dict=None,
            conf={**conf, "auto.register.schemas": settings.auto_register and writer is not None,
                  "normalize.schemas": settings.normalize})
    return direct(serializer, AvroDeserializer(client, reader, conf=conf), client, settings, is_key, writer, reader)


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
        state.record_name = _record_name(schema)
        super().__init__(state, config, is_key)


class SpecificAvroSerde(RegistrySerde[T], Generic[T]):
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
        state = RegistryState(self.name, _build_for(codec.schema, codec.schema), "", codec.to_dict,
                              functools.partial(_from_wire, codec.from_dict))
        state.record_name = _record_name(codec.schema)
        super().__init__(state, config, is_key)

    def __repr__(self) -> str:
        return f"SpecificAvroSerde({self.record_type.__name__})"


def _from_wire(from_dict: Callable[[dict[str, Any]], Any], value: Any) -> Any:
    return from_dict(value) if isinstance(value, dict) else value


def _record_name(schema: AvroSchema | None) -> str | None:
    """A record schema's full name (namespace.name), as the subject name strategies take it; else None."""
    if schema is None:
        return None
    parsed = json.loads(_schema_text(schema))
    if not isinstance(parsed, dict) or "name" not in parsed:
        return None
    name = str(parsed["name"])
    return f"{parsed['namespace']}.{name}" if parsed.get("namespace") and "." not in name else name
