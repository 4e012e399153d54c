"""Serializers, deserializers and serdes, byte-identical to Kafka's Java serdes.

Why byte-identical: streamlet's topics are shared with Java producers, consumers and Kafka Streams
apps, and a changelog or repartition topic written here must read the same there. `None` maps to
`None` in both directions, as Java maps `null` (a tombstone).
"""

from __future__ import annotations

import base64
import datetime
import struct
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Generic, TypeVar

import orjson

from streamlet.errors import SerializationError
from streamlet.typed_records import from_plain, is_enum, record_kind

T = TypeVar("T")

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_DOUBLE = struct.Struct(">d")
_FLOAT = struct.Struct(">f")


class Serializer(Generic[T]):
    """Turns an object into bytes; `topic` is passed for serializers that depend on it."""

    def __init__(self, fn: Callable[[T], bytes] | None = None) -> None:
        self._fn = fn

    def serialize(self, topic: str | None, data: T | None) -> bytes | None:
        """`data` as bytes for `topic` (None stays None: a null key or a tombstone)."""
        if data is None:
            return None
        if self._fn is None:
            raise NotImplementedError
        return self._fn(data)


class Deserializer(Generic[T]):
    """Turns bytes into an object; `topic` is passed for deserializers that depend on it."""

    def __init__(self, fn: Callable[[bytes], T] | None = None) -> None:
        self._fn = fn

    def deserialize(self, topic: str | None, data: bytes | None) -> T | None:
        """Bytes from `topic` (None for a null key or a tombstone) back into an object."""
        if data is None:
            return None
        if self._fn is None:
            raise NotImplementedError
        return self._fn(data)


class Serde(Generic[T]):
    """A serializer and deserializer pair."""

    name = "Serde"

    def __init__(self, serializer: Serializer[T], deserializer: Deserializer[T]) -> None:
        self.serializer = serializer
        self.deserializer = deserializer

    def __repr__(self) -> str:
        return f"Serdes.{self.name}()"


def _fixed(width: int, packer: struct.Struct, kind: str) -> Callable[[bytes], Any]:
    def unpack(data: bytes) -> Any:
        if len(data) != width:
            raise SerializationError(f"size of data received by {kind}Deserializer is not {width}: {len(data)}")
        return packer.unpack(data)[0]

    return unpack


def _pack(packer: struct.Struct, kind: str, check: Callable[[Any], bool]) -> Callable[[Any], bytes]:
    def pack(value: Any) -> bytes:
        if not check(value):
            raise SerializationError(f"{kind}Serializer cannot serialize {type(value).__name__}: {value!r}")
        try:
            return packer.pack(value)
        except struct.error as exc:
            raise SerializationError(f"{kind}Serializer: {exc}") from exc

    return pack


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _encode_str(value: Any) -> bytes:
    if not isinstance(value, str):
        raise SerializationError(f"StringSerializer cannot serialize {type(value).__name__}: {value!r}")
    return value.encode("utf-8")


def _decode_str(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SerializationError(f"StringDeserializer: {exc}") from exc


def _encode_bytes(value: Any) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise SerializationError(f"BytesSerializer cannot serialize {type(value).__name__}: {value!r}")
    return bytes(value)


def _encode_json(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError as exc:
        raise SerializationError(f"JsonSerializer: {exc}") from exc


def _decode_json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SerializationError(f"JsonDeserializer: {exc}") from exc


# One-frame fast paths for the serdes every record meets (keys, counts, JSON values): the common
# exact type is handled inline and anything else falls back to the checked conversion above, which
# also raises the error. Measured on WordCount at-least-once: see benchmarks/RESULTS.md's performance log.

def _serialize_str(topic: str | None, data: Any) -> bytes | None:
    if type(data) is str:
        return data.encode()
    return None if data is None else _encode_str(data)


def _deserialize_str(topic: str | None, data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return _decode_str(data)


_PACK_LONG_CHECKED = _pack(_LONG, "Long", _is_int)
_UNPACK_LONG_CHECKED = _fixed(8, _LONG, "Long")


def _serialize_long(topic: str | None, data: Any, _pack_long: Callable[[int], bytes] = _LONG.pack) -> bytes | None:
    if type(data) is int and -0x8000000000000000 <= data <= 0x7FFFFFFFFFFFFFFF:
        return _pack_long(data)
    return None if data is None else _PACK_LONG_CHECKED(data)


def _deserialize_long(topic: str | None, data: bytes | None,
                      _unpack: Callable[[bytes], tuple[int]] = _LONG.unpack) -> int | None:
    if data is None:
        return None
    if len(data) == 8:
        return _unpack(data)[0]
    return _UNPACK_LONG_CHECKED(data)


def _serialize_json(topic: str | None, data: Any, _dumps: Callable[[Any], bytes] = orjson.dumps) -> bytes | None:
    if data is None:
        return None
    try:
        return _dumps(data)
    except TypeError:
        return _encode_json(data)


def _deserialize_json(topic: str | None, data: bytes | None, _loads: Callable[[bytes], Any] = orjson.loads) -> Any:
    if data is None:
        return None
    try:
        return _loads(data)
    except orjson.JSONDecodeError:
        return _decode_json(data)


class NoFastPath:
    """A type no value has: where `fast_serializer` / `fast_deserializer` return it, the fast path never applies."""


def _no_fast_path(data: Any) -> Any:  # pragma: no cover - never called: no value has type NoFastPath
    raise AssertionError("no fast path")


FastPath = tuple[type, Callable[[Any], Any]]
"""`(T, f)`: for data of exactly type `T`, `f(data)` (a C function, no Python frame) returns what the
serializer's or deserializer's own call returns; for other data, and on any error, call that instead
(it gives the serde's own result or error)."""


def fast_serializer(serializer: Serializer[Any]) -> FastPath:
    """The built-in String (`str.encode`) and Long (`struct.Struct(">q").pack`, which fails outside the
    serde's range, so the serde's own call gives its error there) serializers' fast paths, else
    `(NoFastPath, ...)`."""
    serialize = getattr(serializer, "serialize", None)
    if serialize is _serialize_str:
        return str, str.encode
    if serialize is _serialize_long:
        return int, _LONG.pack
    return NoFastPath, _no_fast_path


def fast_deserializer(deserializer: Deserializer[Any]) -> FastPath:
    """The built-in String (`bytes.decode`) and Bytes (`bytes`, which returns a `bytes` unchanged)
    deserializers' fast paths, else `(NoFastPath, ...)`."""
    if getattr(deserializer, "deserialize", None) is _deserialize_str:
        return bytes, bytes.decode
    if type(deserializer) is Deserializer and "deserialize" not in vars(deserializer) and deserializer._fn is bytes:
        return bytes, bytes
    return NoFastPath, _no_fast_path


class StringSerde(Serde[str]):
    """UTF-8 text, as Java's `Serdes.String()`."""
    name = "String"

    def __init__(self) -> None:
        super().__init__(Serializer(_encode_str), Deserializer(_decode_str))
        self.serializer.serialize = _serialize_str  # type: ignore[method-assign]
        self.deserializer.deserialize = _deserialize_str  # type: ignore[method-assign]


class BytesSerde(Serde[bytes]):
    """Raw bytes, unchanged."""
    name = "Bytes"

    def __init__(self) -> None:
        super().__init__(Serializer(_encode_bytes), Deserializer(bytes))


class ShortSerde(Serde[int]):
    """A 2-byte big-endian signed integer, as Java's `Serdes.Short()`."""
    name = "Short"

    def __init__(self) -> None:
        super().__init__(Serializer(_pack(_SHORT, "Short", _is_int)), Deserializer(_fixed(2, _SHORT, "Short")))


class IntegerSerde(Serde[int]):
    """A 4-byte big-endian signed integer, as Java's `Serdes.Integer()`."""
    name = "Integer"

    def __init__(self) -> None:
        super().__init__(Serializer(_pack(_INT, "Integer", _is_int)), Deserializer(_fixed(4, _INT, "Integer")))


class LongSerde(Serde[int]):
    """An 8-byte big-endian signed integer, as Java's `Serdes.Long()` (WordCount's counts)."""
    name = "Long"

    def __init__(self) -> None:
        super().__init__(Serializer(_pack(_LONG, "Long", _is_int)), Deserializer(_fixed(8, _LONG, "Long")))
        self.serializer.serialize = _serialize_long  # type: ignore[method-assign]
        self.deserializer.deserialize = _deserialize_long  # type: ignore[method-assign]


class FloatSerde(Serde[float]):
    """A 4-byte IEEE 754 float, as Java's `Serdes.Float()`."""
    name = "Float"

    def __init__(self) -> None:
        super().__init__(
            Serializer(_pack(_FLOAT, "Float", _is_number)), Deserializer(_fixed(4, _FLOAT, "Float"))
        )


class DoubleSerde(Serde[float]):
    """An 8-byte IEEE 754 double, as Java's `Serdes.Double()`."""
    name = "Double"

    def __init__(self) -> None:
        super().__init__(
            Serializer(_pack(_DOUBLE, "Double", _is_number)), Deserializer(_fixed(8, _DOUBLE, "Double"))
        )


class JsonSerde(Serde[Any]):
    """JSON via orjson. Not a Java built-in; bytes are compact UTF-8 JSON."""

    name = "Json"

    def __init__(self) -> None:
        super().__init__(Serializer(_encode_json), Deserializer(_decode_json))
        self.serializer.serialize = _serialize_json  # type: ignore[method-assign]
        self.deserializer.deserialize = _deserialize_json  # type: ignore[method-assign]


# -- typed JSON records ---------------------------------------------------------------------------------

def _json_default(value: Any) -> Any:
    """What orjson does not write by itself: a Decimal as its text, a set as a list, bytes as base64."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, set | frozenset):
        return list(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _json_leaf(hint: Any) -> Callable[[Any], Any] | None:
    """Reads a JSON scalar back as the annotated type (the text orjson or `_json_default` wrote)."""
    if hint is datetime.datetime:
        return lambda v: datetime.datetime.fromisoformat(v) if isinstance(v, str) else v
    if hint is datetime.date:
        return lambda v: datetime.date.fromisoformat(v) if isinstance(v, str) else v
    if hint is Decimal:
        return lambda v: Decimal(str(v))
    if hint is uuid.UUID:
        return lambda v: uuid.UUID(v) if isinstance(v, str) else v
    if hint is bytes:
        return lambda v: base64.b64decode(v) if isinstance(v, str) else v
    if hint is float:
        return lambda v: float(v) if type(v) is int else v
    if is_enum(hint):
        return hint  # by value, as orjson writes an enum member
    return None


class _TypedJsonCodec:
    """The encoder and decoder for one record type, made on first use (after unpickling too: a Spark worker
    gets the type, not the library objects)."""

    def __init__(self, record_type: type) -> None:
        self.record_type = record_type
        self.kind = record_kind(record_type)
        if self.kind is None:
            raise SerializationError(f"Serdes.json needs a dataclass, pydantic model or msgspec struct, "
                                     f"got {record_type!r}")
        self._encode: Callable[[Any], bytes] | None = None
        self._decode: Callable[[bytes], Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"record_type": self.record_type, "kind": self.kind, "_encode": None, "_decode": None}

    def _make(self) -> None:
        tp = self.record_type
        if self.kind == "pydantic":
            import pydantic  # the model exists, so pydantic is installed

            adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(tp)
            self._encode, self._decode = adapter.dump_json, adapter.validate_json
        elif self.kind == "msgspec":
            import msgspec  # the struct exists, so msgspec is installed

            self._encode, self._decode = msgspec.json.Encoder().encode, msgspec.json.Decoder(tp).decode
        else:
            build = from_plain(tp, _json_leaf)
            self._encode = lambda obj: orjson.dumps(obj, default=_json_default)
            self._decode = lambda data: build(orjson.loads(data))

    def encode(self, value: Any) -> bytes:
        if not isinstance(value, self.record_type):
            raise SerializationError(f"Serdes.json({self.record_type.__name__}) cannot serialize "
                                     f"{type(value).__name__}: {value!r}")
        if self._encode is None:
            self._make()
        assert self._encode is not None
        try:
            return self._encode(value)
        except Exception as exc:
            raise SerializationError(f"Serdes.json({self.record_type.__name__}): {type(exc).__name__}: {exc}"
                                     ) from exc

    def decode(self, data: bytes) -> Any:
        if self._decode is None:
            self._make()
        assert self._decode is not None
        try:
            return self._decode(data)
        except Exception as exc:
            raise SerializationError(f"Serdes.json({self.record_type.__name__}) cannot read "
                                     f"{bytes(data[:60])!r}: {type(exc).__name__}: {exc}") from exc


class TypedJsonSerde(Serde[T], Generic[T]):
    """JSON values as instances of a dataclass, pydantic model or msgspec struct (`Serdes.json(MyType)`).

    A pydantic model is written and read by pydantic (its JSON, validated on read), a msgspec struct by
    msgspec, a dataclass by orjson (datetimes in ISO 8601, enums by value, decimals as text) and read back
    into the dataclass, nested dataclasses, enums, datetimes, decimals and UUIDs included. No registry and
    no schema: the bytes are plain UTF-8 JSON.
    """

    name = "TypedJson"

    def __init__(self, record_type: type[T]) -> None:
        codec = _TypedJsonCodec(record_type)
        self.record_type = record_type
        super().__init__(Serializer(codec.encode), Deserializer(codec.decode))

    def __repr__(self) -> str:
        return f"Serdes.json({self.record_type.__name__})"


class Serdes:
    """Factories for the built-in serdes, named as Java's `Serdes.String()` etc."""

    String = StringSerde
    Bytes = BytesSerde
    ByteArray = BytesSerde
    Short = ShortSerde
    Integer = IntegerSerde
    Long = LongSerde
    Float = FloatSerde
    Double = DoubleSerde
    Json = JsonSerde

    @staticmethod
    def json(record_type: type[T]) -> TypedJsonSerde[T]:
        """JSON values as instances of `record_type`: a dataclass, pydantic model or msgspec struct."""
        return TypedJsonSerde(record_type)


_BY_NAME: dict[str, type[Serde[Any]]] = {}
for _cls in (StringSerde, BytesSerde, ShortSerde, IntegerSerde, LongSerde, FloatSerde, DoubleSerde, JsonSerde):
    for _alias in (_cls.name, _cls.__name__, f"Serdes${_cls.__name__}",
                   f"org.apache.kafka.common.serialization.Serdes${_cls.__name__}"):
        _BY_NAME[_alias.lower()] = _cls
_BY_NAME["bytearray"] = _BY_NAME["bytearrayserde"] = BytesSerde
_BY_NAME["org.apache.kafka.common.serialization.serdes$bytearrayserde"] = BytesSerde


def resolve_serde(value: Any) -> Serde[Any] | None:
    """Accept a Serde instance, a Serde class, or a name ("String", "Serdes$LongSerde", Java's class name)."""
    if value is None:
        return None
    if isinstance(value, Serde):
        return value
    if isinstance(value, type) and issubclass(value, Serde):
        return value()  # type: ignore[call-arg]
    if isinstance(value, str):
        cls = _BY_NAME.get(value.strip().lower())
        if cls is None:
            raise SerializationError(f"unknown serde {value!r}; use a Serde, a Serde class or one of "
                                     f"String, Bytes, Short, Integer, Long, Float, Double, Json")
        return cls()  # type: ignore[call-arg]
    raise SerializationError(f"not a serde: {value!r}")


class InnerDefaulted:
    """A wrapping serializer or deserializer (a table grouping's `Change` serde) whose inner value serde
    may be left unset: the task that builds the node fills it in with `default.value.serde`, as Kafka
    Streams' `WrappingNullableSerializer.setIfUnset` does. Only then: a wrapper whose inner serde came
    from upstream (`Consumed`, `Grouped`, `Materialized`) needs no default serde configured."""

    inner: Any  # the wrapped serde (or serializer / deserializer); None until set

    def use_default_inner(self, serde: Serde[Any]) -> None:
        raise NotImplementedError


class KeyDefaulted:
    """A wrapping serializer or deserializer whose inner serde is a *key* serde that may be left unset (a
    foreign-key join's subscriptions carry the primary key): the task that builds the node fills it in
    with `default.key.serde`, as `InnerDefaulted` does with the value serde."""

    inner: Any  # the wrapped key serde; None until set

    def use_default_key(self, serde: Serde[Any]) -> None:
        raise NotImplementedError


def configure_from_application(part: object, config: Mapping[str, Any], is_key: bool) -> None:
    """Hand the application's config to a serde, serializer or deserializer that asks for it.

    One with a `configure_from_application(config, is_key)` method (the schema'd serdes of
    `streamlet.schema_registry`) is configured with the application's settings, as Kafka Streams' Java
    serdes get `configure(props, isKey)`; one configured by hand keeps its own settings (the method decides).
    A wrapper (`inner`: a `Change` serde, a windowed key serde) passes it on to what it wraps. Tasks call
    this when they are built, never per record.
    """
    for _depth in range(4):
        if part is None:
            return
        hook = getattr(part, "configure_from_application", None)
        if callable(hook):
            hook(config, is_key)
            return
        part = getattr(part, "inner", None)


SERDE_SETTINGS = frozenset({
    "auto.register.schemas", "use.latest.version", "normalize.schemas", "basic.auth.credentials.source",
    "basic.auth.user.info", "key.subject.name.strategy", "value.subject.name.strategy", "specific.avro.reader",
})
"""Confluent's serde settings (with every `schema.registry.*` key): the application's config carries them to
the serdes that take them (`configure_from_application`); they are no Kafka client's settings."""


def is_serde_setting(key: str) -> bool:
    """True for a setting the schema'd serdes read (`schema.registry.url`, `auto.register.schemas`, ...)."""
    return key in SERDE_SETTINGS or key.startswith("schema.registry.")
