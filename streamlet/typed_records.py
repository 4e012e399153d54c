"""Typed records: dataclasses, pydantic models and msgspec structs, read the same way.

A serde from a type (`Serdes.json(MyType)`, the registry's `SpecificAvroSerde(MyType)`) needs three things
of the type: its fields (name, annotation, default), a way to build an instance from field values, and
converters between instances and plain values (dicts for records, lists, scalars) that walk the
annotations once, when the serde is made, so that each record costs one call per field that needs one.

The kind of a type is recognised by duck typing (`model_fields` for pydantic, `__struct_fields__` for
msgspec), so this module imports neither library: an application without them installs nothing more.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import types
import typing
from collections.abc import Callable
from typing import Any, NamedTuple

MISSING: Any = dataclasses.MISSING
"""A field without a default."""

Convert = Callable[[Any], Any]
LeafConverter = Callable[[Any], "Convert | None"]
"""Given a leaf annotation (not a record, container, union), a converter for its values, or None to keep them."""


class RecordField(NamedTuple):
    """One field of a record type: its attribute name, annotation (without `Annotated`), the `Annotated` /
    pydantic metadata, and its default (`MISSING` if none; `default_factory` likewise)."""

    name: str
    hint: Any
    metadata: tuple[Any, ...]
    default: Any
    default_factory: Any


def record_kind(tp: Any) -> str | None:
    """"dataclass", "pydantic", "msgspec" for a record type of those libraries, else None."""
    if not isinstance(tp, type):
        return None
    if dataclasses.is_dataclass(tp):
        return "dataclass"
    if isinstance(getattr(tp, "model_fields", None), dict) and callable(getattr(tp, "model_validate", None)):
        return "pydantic"
    if isinstance(getattr(tp, "__struct_fields__", None), tuple):
        return "msgspec"
    return None


def _strip(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    if typing.get_origin(hint) is typing.Annotated:
        return hint.__origin__, tuple(hint.__metadata__)
    return hint, ()


def record_fields(tp: type) -> list[RecordField]:
    """The fields of a dataclass, pydantic model or msgspec struct, in declaration order."""
    kind = record_kind(tp)
    if kind == "dataclass":
        hints = typing.get_type_hints(tp, localns={tp.__name__: tp}, include_extras=True)
        out = []
        for field in dataclasses.fields(tp):
            hint, metadata = _strip(hints[field.name])
            out.append(RecordField(field.name, hint, metadata, field.default, field.default_factory))
        return out
    if kind == "pydantic":
        out = []
        for name, info in typing.cast(Any, tp).model_fields.items():
            hint, metadata = _strip(info.annotation)
            required = info.is_required()
            factory = info.default_factory if info.default_factory is not None else MISSING
            default = MISSING if required or factory is not MISSING else info.default
            out.append(RecordField(name, hint, (*metadata, *info.metadata), default, factory))
        return out
    if kind == "msgspec":
        import msgspec  # a struct exists, so msgspec is installed

        out = []
        hints = typing.get_type_hints(tp, localns={tp.__name__: tp}, include_extras=True)
        for info in msgspec.structs.fields(tp):
            hint, metadata = _strip(hints.get(info.name, info.type))
            default = MISSING if info.default is msgspec.NODEFAULT else info.default
            factory = MISSING if info.default_factory is msgspec.NODEFAULT else info.default_factory
            out.append(RecordField(info.name, hint, metadata, default, factory))
        return out
    raise TypeError(f"{tp!r} is not a dataclass, pydantic model or msgspec struct")


def constructor(tp: type) -> Callable[[dict[str, Any]], Any]:
    """Builds an instance of `tp` from a dict of field values (by attribute name): a pydantic model is
    validated (by field name, not alias), a dataclass or struct called with them."""
    if record_kind(tp) == "pydantic":
        validate = typing.cast(Any, tp).model_validate
        return lambda values: validate(values, by_name=True)
    return lambda values: tp(**values)


def optional_inner(hint: Any) -> Any | None:
    """`X` for `X | None` / `Optional[X]` (one type besides None), else None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(rest) == 1 and len(rest) < len(typing.get_args(hint)):
            return rest[0]
    return None


def identity(value: Any) -> Any:
    """The converter that keeps a value as it is."""
    return value


class _Builder:
    """Walks annotations into converters; a record type met again (a recursive type) reuses its converter."""

    def __init__(self, leaf: LeafConverter, to_plain: bool) -> None:
        self.leaf = leaf
        self.to_plain = to_plain
        self.records: dict[type, Convert] = {}

    def convert(self, hint: Any) -> Convert:
        hint, _ = _strip(hint)
        if record_kind(hint) is not None:
            return self.record(hint)
        inner = optional_inner(hint)
        if inner is not None:
            item = self.convert(inner)
            return identity if item is identity else (lambda v: None if v is None else item(v))
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (typing.Union, types.UnionType):
            if all(self.convert(arg) is identity for arg in args):
                return identity
            raise TypeError(f"a union of several types that need converting ({hint!r}) is not supported")
        if origin in (list, tuple, set, frozenset) and args:
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                raise TypeError(f"only homogeneous tuples (tuple[X, ...]) are supported, not {hint!r}")
            item = self.convert(args[0])
            container: Callable[[Any], Any] = list if self.to_plain else origin
            if item is identity:
                return identity if container is list else container
            return lambda v: container(item(x) for x in v)
        if origin is dict and len(args) == 2:
            item = self.convert(args[1])
            if item is identity:
                return identity
            return lambda v: {k: item(x) for k, x in v.items()}
        converter = self.leaf(hint)
        return identity if converter is None else converter

    def record(self, tp: type) -> Convert:
        known = self.records.get(tp)
        if known is not None:
            return known
        cell: list[Convert] = []
        self.records[tp] = lambda v: cell[0](v)  # for a recursive type, until the converter below is made
        fields = [(f.name, self.convert(f.hint)) for f in record_fields(tp)]
        cell.append(self._to_plain(fields) if self.to_plain else self._from_plain(tp, fields))
        self.records[tp] = cell[0]
        return cell[0]

    @staticmethod
    def _to_plain(fields: list[tuple[str, Convert]]) -> Convert:
        names = [name for name, _ in fields]
        if all(c is identity for _, c in fields):
            if len(names) == 1:
                only = names[0]
                return lambda obj: {only: getattr(obj, only)}
            get = operator.attrgetter(*names)
            return lambda obj: dict(zip(names, get(obj), strict=True))
        return lambda obj: {name: convert(getattr(obj, name)) for name, convert in fields}

    @staticmethod
    def _from_plain(tp: type, fields: list[tuple[str, Convert]]) -> Convert:
        build = constructor(tp)
        converters = dict(fields)

        def from_plain(value: Any) -> Any:
            if not isinstance(value, dict):
                return value  # already an instance (or not a record: the constructor says why)
            return build({name: converters[name](item) for name, item in value.items() if name in converters})

        return from_plain


def to_plain(tp: Any, leaf: LeafConverter) -> Convert:
    """A converter from instances of `tp` to plain values: records to dicts (by attribute name), tuples
    and sets to lists, a leaf value through `leaf(its annotation)`."""
    return _Builder(leaf, to_plain=True).convert(tp)


def from_plain(tp: Any, leaf: LeafConverter) -> Convert:
    """A converter from plain values back to `tp`: dicts to records, lists to the annotated container,
    a leaf value through `leaf(its annotation)`; fields the type does not have are dropped."""
    return _Builder(leaf, to_plain=False).convert(tp)


def is_enum(hint: Any) -> bool:
    """True for an `enum.Enum` subclass."""
    return isinstance(hint, type) and issubclass(hint, enum.Enum)
