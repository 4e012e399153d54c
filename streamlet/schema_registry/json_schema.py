"""JSON Schema serde in Confluent's wire format: `KafkaJsonSchemaSerde(schema_or_type)`.

The framing (magic byte 0, the 4-byte schema id, then the value as compact UTF-8 JSON), registration,
subject strategies and validation (jsonschema, on write and on read) are confluent-kafka's `JSONSerializer` /
`JSONDeserializer`; this module adapts them to streamlet's `Serde` interface, errors and configuration.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

from streamlet.errors import ConfigError, SerializationError
from streamlet.schema_registry.client import RegistrySettings
from streamlet.schema_registry.framing import (
    Builder,
    ConfluentDeserializer,
    ConfluentSerializer,
    RegistrySerde,
    RegistryState,
    confluent_conf,
)

JsonSchema = str | Mapping[str, Any]
"""A JSON Schema: its JSON text or the parsed JSON (a dict)."""


def _schema_text(schema: JsonSchema) -> str:
    if isinstance(schema, str):
        try:
            json.loads(schema)
        except ValueError as exc:
            raise ConfigError(f"KafkaJsonSchemaSerde: the schema is not JSON: {exc}") from exc
        return schema
    return json.dumps(schema)


def _build_for(writer: str | None) -> Builder:
    """The format's builder, picklable (a serde's state is shipped to Spark's workers: `shipping`)."""
    return functools.partial(_build, writer)


def _build(writer: str | None, client: SchemaRegistryClient, settings: RegistrySettings, is_key: bool,
           ) -> tuple[ConfluentSerializer | None, ConfluentDeserializer]:
    conf = confluent_conf(settings, is_key)
    serializer = None
    if writer is not None or settings.use_latest_version:  # else reading only; writing says why it cannot
        serializer = JSONSerializer(writer, client, json_encode=java_json, conf={
            **conf, "auto.register.schemas": settings.auto_register and writer is not None,
            "normalize.schemas": settings.normalize, "validate": True})
    # The writer's schema by id validates what is read (Confluent's json.fail.invalid.schema=true).
    return serializer, JSONDeserializer(None, conf=conf, schema_registry_client=client)


class KafkaJsonSchemaSerde(RegistrySerde[Any]):
    """JSON values checked against a JSON Schema, in Confluent's wire format (Java's `KafkaJsonSchemaSerde`).

    `schema_or_type` is the JSON Schema (JSON text or a dict) values are written with, validated against it
    before they are written (a value that does not fit is a `SerializationError`, nothing is written); or a
    dataclass with a `json_schema` class attribute (the schema), whose instances are written (as their
    fields) and read back; or None to read only (or to write with the subject's latest schema,
    `use.latest.version=true`). Read: the value comes back as the JSON it was (dicts, lists, str, numbers,
    bool, None), validated against its writer's schema fetched by id. Written as compact UTF-8 JSON, the way
    Confluent's and Apicurio's Java serializers write it. `config` and `is_key` as for `GenericAvroSerde`.
    """

    name = "KafkaJsonSchemaSerde"

    def __init__(self, schema_or_type: JsonSchema | type | None = None, *,
                 config: Mapping[str, Any] | None = None, is_key: bool = False) -> None:
        to_wire: Callable[[Any], Any] | None = None
        from_wire: Callable[[Any], Any] | None = None
        self.record_type: type | None = None
        schema: JsonSchema | None
        if isinstance(schema_or_type, type):
            record_type = schema_or_type
            schema = getattr(record_type, "json_schema", None)
            if not dataclasses.is_dataclass(record_type) or schema is None:
                raise ConfigError(f"KafkaJsonSchemaSerde needs a JSON Schema or a dataclass with a `json_schema` "
                                  f"class attribute, got {record_type!r}")
            self.record_type = record_type
            to_wire = _to_dict_for(record_type)
            from_wire = _from_dict_for(record_type)
        else:
            schema = schema_or_type
        writer = _schema_text(schema) if schema is not None else None
        state = RegistryState(self.name, _build_for(writer), "give one (KafkaJsonSchemaSerde(schema)) or set "
                              "use.latest.version=true", to_wire, from_wire)
        super().__init__(state, config, is_key)

    def __repr__(self) -> str:
        return f"KafkaJsonSchemaSerde({self.record_type.__name__})" if self.record_type else "KafkaJsonSchemaSerde()"


def java_json(value: Any) -> str:
    """`value` as compact JSON text the way the Java serializers (Jackson) write it, so the bytes are theirs:
    no spaces, non-ASCII characters as themselves (UTF-8), other control characters as `\\u001F` (upper-case
    hex), and a float as Java's `Double.toString` renders it (1.0E7, -1.0E-4, 12.5, 3.0; Python would write
    10000000.0, -0.0001, 12.5, 3.0)."""
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, dict):
        fields = (f'"{str(key).translate(_ESCAPES)}":{java_json(item)}' for key, item in value.items())
        return "{" + ",".join(fields) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(java_json(item) for item in value) + "]"
    return json.dumps(value)  # int, bool, None


_ESCAPES = {code: f"\\u{code:04X}" for code in range(32)} | {
    ord('"'): '\\"', ord("\\"): "\\\\", 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}


def _java_double(number: float) -> str:
    if not math.isfinite(number):
        return json.dumps(number)  # NaN, Infinity, -Infinity: as Jackson writes them
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    if 1e-3 <= abs(number) < 1e7:  # plain notation, at least one digit after the point
        text = format(Decimal(repr(number)), "f")
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(number)).as_tuple()  # the shortest digits that read back as `number`
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    if len(text) == 1:  # Java writes two digits then, the two nearest the value: 4.9E-324, not 5.0E-324
        mantissa, power = format(number, ".1e").split("e")
        return f"{mantissa}E{int(power)}"
    return f"{'-' if sign else ''}{text[0]}.{text[1:]}E{len(digits) + exponent - 1}"


def _to_dict_for(record_type: type) -> Callable[[Any], dict[str, Any]]:
    def to_dict(record: Any) -> dict[str, Any]:
        if not isinstance(record, record_type):
            raise SerializationError(f"KafkaJsonSchemaSerde({record_type.__name__}) expects a "
                                     f"{record_type.__name__}, got {type(record).__name__}")
        return dataclasses.asdict(record)  # type: ignore[call-overload]

    return to_dict


def _from_dict_for(record_type: type) -> Callable[[Any], Any]:
    names = {field.name for field in dataclasses.fields(record_type)}

    def from_dict(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return record_type(**{name: item for name, item in value.items() if name in names})

    return from_dict
