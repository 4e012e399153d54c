"""Typed records in Avro: the schema of a dataclass, pydantic model or msgspec struct, and the converters
between its instances and the dicts fastavro reads and writes.

The schema is the type's own when it has one (an `avro_schema` class attribute, or the `schema=` a user
passes), else derived from its fields once, when the serde is made. Values keep their Python types where
fastavro handles the Avro logical type (datetimes, dates, decimals, UUIDs); records become dicts and enum
members their symbols (the member's name), and back.
"""

from __future__ import annotations

import datetime
import json
import typing
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from streamlet.errors import ConfigError, SerializationError
from streamlet.typed_records import (
    MISSING,
    Convert,
    RecordField,
    from_plain,
    is_enum,
    optional_inner,
    record_fields,
    record_kind,
    to_plain,
)

AvroSchema = str | Mapping[str, Any]
"""An Avro schema: its JSON text or the parsed JSON (a dict)."""

_PRIMITIVES: dict[Any, str] = {int: "long", str: "string", float: "double", bool: "boolean", bytes: "bytes"}
_LOGICAL: dict[Any, dict[str, str]] = {
    datetime.datetime: {"type": "long", "logicalType": "timestamp-millis"},
    datetime.date: {"type": "int", "logicalType": "date"},
    uuid.UUID: {"type": "string", "logicalType": "uuid"},
}


def avro_schema_of(record_type: type) -> dict[str, Any]:
    """The Avro schema of a dataclass, pydantic model or msgspec struct: its `avro_schema` class attribute
    (JSON text or a dict; a `ClassVar` on a pydantic model), else derived from its fields.

    Derived: `int` -> long, `float` -> double, `str` -> string, `bool` -> boolean, `bytes` -> bytes,
    `datetime` -> long with logical type timestamp-millis (naive datetimes are taken as UTC; they come back
    aware, in UTC, to the millisecond), `date` -> int/date, `UUID` -> string/uuid, `Decimal` with
    `max_digits` and `decimal_places` (pydantic's `Field` or `condecimal`, or any `Annotated` metadata with
    those attributes) -> bytes/decimal, an `Enum` -> an enum of its members' names, `X | None` -> a union
    with null (null first and default null unless the field has another default), `list[X]`,
    `tuple[X, ...]`, `set[X]` -> array, `dict[str, X]` -> map, a nested record type -> a record (by name
    where it appears again). A record is named after its class, in its module's namespace; a field's
    default (a constant, an enum member, or an empty list or dict from a factory) becomes the Avro default.
    """
    given: AvroSchema | None = getattr(record_type, "avro_schema", None)
    if given is not None:
        return parse_schema_json(given)
    if record_kind(record_type) is None:
        raise ConfigError(f"{record_type!r} is not a dataclass, pydantic model or msgspec struct")
    return _record_schema(record_type, set())


def parse_schema_json(schema: AvroSchema) -> dict[str, Any]:
    """A schema given as JSON text or a mapping, as a dict."""
    return json.loads(schema) if isinstance(schema, str) else dict(schema)


def _name(tp: type) -> str:
    return f"{tp.__module__}.{tp.__name__}"


def _record_schema(record_type: type, seen: set[str]) -> dict[str, Any]:
    seen.add(_name(record_type))
    fields = [_field_schema(field, seen, f"{record_type.__name__}.{field.name}")
              for field in record_fields(record_type)]
    return {"type": "record", "name": record_type.__name__, "namespace": record_type.__module__, "fields": fields}


def _field_schema(field: RecordField, seen: set[str], where: str) -> dict[str, Any]:
    inner = optional_inner(field.hint)
    default = _avro_default(field)
    if inner is not None:  # a union with null: its first branch is the default's type
        inner_type = _avro_type(inner, field.metadata, seen, where)
        if default is MISSING or default is None:
            return {"name": field.name, "type": ["null", inner_type], "default": None}
        return {"name": field.name, "type": [inner_type, "null"], "default": default}
    entry: dict[str, Any] = {"name": field.name, "type": _avro_type(field.hint, field.metadata, seen, where)}
    if default is not MISSING:
        entry["default"] = default
    return entry


def _avro_default(field: RecordField) -> Any:
    """The field's default as Avro JSON, or MISSING when it has none Avro can say."""
    if field.default_factory in (list, dict):
        return field.default_factory()
    value = field.default
    if value is MISSING:
        return MISSING
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if is_enum(type(value)):
        return value.name
    if isinstance(value, list | dict) and not value:
        return type(value)()
    return MISSING


def _decimal(metadata: tuple[Any, ...], where: str) -> dict[str, Any]:
    # pydantic's Field(...) in Annotated carries its constraints in its own `metadata` list
    metadata = (*metadata, *(m for item in metadata for m in getattr(item, "metadata", None) or ()))
    digits = next((m.max_digits for m in metadata if getattr(m, "max_digits", None) is not None), None)
    places = next((m.decimal_places for m in metadata if getattr(m, "decimal_places", None) is not None), None)
    if digits is None or places is None:
        raise ConfigError(f"cannot derive an Avro type for {where}: a Decimal needs max_digits and decimal_places "
                          "(e.g. pydantic's Field(max_digits=10, decimal_places=2)) for the Avro decimal's "
                          "precision and scale; or give the type an explicit schema")
    return {"type": "bytes", "logicalType": "decimal", "precision": digits, "scale": places}


def _avro_type(hint: Any, metadata: tuple[Any, ...], seen: set[str], where: str) -> Any:
    hint, extra = _annotated(hint)
    metadata = (*metadata, *extra)
    if hint in _PRIMITIVES:
        return _PRIMITIVES[hint]
    if hint in _LOGICAL:
        return dict(_LOGICAL[hint])
    if hint is Decimal:
        return _decimal(metadata, where)
    if is_enum(hint):
        if _name(hint) in seen:
            return _name(hint)
        seen.add(_name(hint))
        return {"type": "enum", "name": hint.__name__, "namespace": hint.__module__,
                "symbols": [member.name for member in hint]}
    if record_kind(hint) is not None:
        return _name(hint) if _name(hint) in seen else _record_schema(hint, seen)
    origin, args = _origin_args(hint)
    inner = optional_inner(hint)
    if inner is not None:
        return ["null", _avro_type(inner, (), seen, where)]
    if (origin in (list, set, frozenset) and len(args) == 1) or (origin is tuple and args[1:] == (Ellipsis,)):
        return {"type": "array", "items": _avro_type(args[0], (), seen, where)}
    if origin is dict and len(args) == 2 and args[0] is str:
        return {"type": "map", "values": _avro_type(args[1], (), seen, where)}
    raise ConfigError(f"cannot derive an Avro type for {where}: {hint!r}; give the type an `avro_schema` class "
                      "attribute or pass schema= to the serde")


def _annotated(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    if typing.get_origin(hint) is typing.Annotated:
        return hint.__origin__, tuple(hint.__metadata__)
    return hint, ()


def _origin_args(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    return typing.get_origin(hint), typing.get_args(hint)


def _avro_leaf_out(hint: Any) -> Convert | None:
    """An enum member is written as its symbol (its name); datetimes, decimals, UUIDs go to fastavro as they are."""
    if is_enum(hint):
        return lambda member: member.name
    return None


def _avro_leaf_in(hint: Any) -> Convert | None:
    if is_enum(hint):
        return lambda symbol: hint[symbol] if isinstance(symbol, str) else symbol
    if hint is float:
        return lambda v: float(v) if type(v) is int else v
    return None


class AvroCodec:
    """A record type's Avro schema and its converters (instance -> dict, dict -> instance), made once."""

    def __init__(self, record_type: type, schema: AvroSchema | None = None) -> None:
        if record_kind(record_type) is None:
            raise ConfigError(f"SpecificAvroSerde needs a dataclass, pydantic model or msgspec struct, "
                              f"got {record_type!r}")
        self.record_type = record_type
        self.schema = parse_schema_json(schema) if schema is not None else avro_schema_of(record_type)
        self._make()

    def _make(self) -> None:
        try:
            self._to_dict = to_plain(self.record_type, _avro_leaf_out)
            self._from_dict = from_plain(self.record_type, _avro_leaf_in)
        except TypeError as exc:
            raise ConfigError(f"SpecificAvroSerde({self.record_type.__name__}): {exc}") from exc

    def __getstate__(self) -> dict[str, Any]:  # the converters are closures: made again where unpickled
        return {"record_type": self.record_type, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._make()

    def from_dict(self, value: dict[str, Any]) -> Any:
        return self._from_dict(value)

    def to_dict(self, record: Any) -> dict[str, Any]:
        if not isinstance(record, self.record_type):
            raise SerializationError(f"SpecificAvroSerde({self.record_type.__name__}) expects an instance of it, "
                            f"got {type(record).__name__}")
        result: dict[str, Any] = self._to_dict(record)
        return result
