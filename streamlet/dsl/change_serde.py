"""The serde of a table grouping's repartition topic: a `Change` (new and old value) in Kafka Streams'
`ChangedSerializer` format, so a Java application reads the topic streamlet writes and back.

The last byte says what is there: 0 old value only, 1 new only, 2 both (the new value's length as a
zig-zag varint first, then new, then old), byte for byte what Kafka Streams 3.9 writes (checked
against it by the differential suite, which reads the repartition topic). The inner value serde may
be left unset (None): the task fills it in with `default.value.serde` (Kafka Streams' `setIfUnset`).
"""

from __future__ import annotations

from typing import Any

from streamlet.dsl.change import Change
from streamlet.errors import SerializationError
from streamlet.serdes import Deserializer, InnerDefaulted, Serde, Serializer


def _varint(value: int) -> bytes:
    """Kafka's zig-zag varint of an int (`ByteUtils.writeVarint`)."""
    n = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_varint(data: bytes) -> tuple[int, int]:
    """(value, bytes used) of a zig-zag varint at the start of `data`."""
    n = shift = 0
    for i, byte in enumerate(data[:5]):
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (n >> 1) ^ -(n & 1), i + 1
        shift += 7
    raise SerializationError("a Change's length varint is malformed")


class ChangeSerializer(Serializer[Change], InnerDefaulted):
    def __init__(self, inner: Serializer[Any] | None) -> None:
        super().__init__()
        self.inner = inner

    def use_default_inner(self, serde: Serde[Any]) -> None:
        if self.inner is None:
            self.inner = serde.serializer

    def serialize(self, topic: str | None, data: Change | None) -> bytes | None:
        if data is None:
            return None
        inner = self.inner
        if inner is None:
            raise SerializationError("the Change serializer has no inner value serializer")
        new = None if data.new_value is None else inner.serialize(topic, data.new_value)
        old = None if data.old_value is None else inner.serialize(topic, data.old_value)
        if new is not None and old is not None:
            return _varint(len(new)) + new + old + b"\x02"
        if new is not None:
            return new + b"\x01"
        if old is not None:
            return old + b"\x00"
        return None


class ChangeDeserializer(Deserializer[Change], InnerDefaulted):
    def __init__(self, inner: Deserializer[Any] | None) -> None:
        super().__init__()
        self.inner = inner

    def use_default_inner(self, serde: Serde[Any]) -> None:
        if self.inner is None:
            self.inner = serde.deserializer

    def deserialize(self, topic: str | None, data: bytes | None) -> Change | None:
        if data is None:
            return None
        inner = self.inner
        if inner is None or not data:
            raise SerializationError("cannot read a Change: no inner value deserializer, or no bytes")
        flag, body = data[-1], data[:-1]
        if flag == 0:
            return Change(None, inner.deserialize(topic, body))
        if flag == 1:
            return Change(inner.deserialize(topic, body), None)
        if flag == 2:
            n, used = _read_varint(body)
            return Change(inner.deserialize(topic, body[used:used + n]), inner.deserialize(topic, body[used + n:]))
        raise SerializationError(f"unknown Change format flag {flag}")
