"""The foreign-key join's wire formats (KIP-213), byte for byte as Kafka Streams 3.9 writes them.

The join sends subscriptions (left row -> foreign key's partition) and responses (foreign value ->
left row's partition) through two internal topics, and keeps subscriptions in a store keyed by
(foreign key, primary key). Byte-identical formats let a streamlet instance and a Java one read each
other's topics, and make the internal topics comparable in the differential suite:

- subscription: `[version | 0x80 if no hash][instruction][hash: 2 big-endian longs, if any]
  [primary key bytes][primary partition: int32]` (version 1);
- response: `[version | 0x80 if no hash][hash, if any][foreign value bytes, if any]` (version 0);
- combined key: `[int32 length of the foreign key bytes][foreign key bytes][primary key bytes]`.

The hash is Murmur3 x64 128 (seed 104729, Kafka Streams' `Murmur3.hash128`) of the serialized left
value; a response whose hash no longer matches the left row's current value is stale and dropped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from streamlet.serdes import Deserializer, InnerDefaulted, KeyDefaulted, Serde, Serializer

DELETE_KEY_NO_PROPAGATE = 0
DELETE_KEY_AND_PROPAGATE = 1
PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2
PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3

SUBSCRIPTION_VERSION = 1
RESPONSE_VERSION = 0

Hash = tuple[int, int]

_MASK = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F
_SEED = 104729


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    return h ^ (h >> 33)


def _signed(x: int) -> int:
    return x - (1 << 64) if x & (1 << 63) else x


def murmur3_hash128(data: bytes) -> Hash:
    """MurmurHash3 x64 128-bit with Kafka Streams' seed, as two signed longs (Java's `long[2]`)."""
    h1 = h2 = _SEED
    n = len(data)
    nblocks = n >> 4
    for i in range(nblocks):
        k1, k2 = struct.unpack_from("<QQ", data, i << 4)
        k1 = (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK
        h1 = (_rotl(h1 ^ k1, 27) + h2) & _MASK
        h1 = (h1 * 5 + 0x52DCE729) & _MASK
        k2 = (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK
        h2 = (_rotl(h2 ^ k2, 31) + h1) & _MASK
        h2 = (h2 * 5 + 0x38495AB5) & _MASK
    tail = data[nblocks << 4:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    return _signed(h1), _signed(h2)


@dataclass(frozen=True, slots=True)
class SubscriptionWrapper:
    """A left row's subscription to a foreign key: what to do, for which primary key, from which partition."""

    hash: Hash | None
    instruction: int
    primary_key: Any
    primary_partition: int
    version: int = SUBSCRIPTION_VERSION


@dataclass(frozen=True, slots=True)
class SubscriptionResponseWrapper:
    """A foreign value on its way back to a left row, with the hash of the left value it answers."""

    hash: Hash | None
    foreign_value: Any
    primary_partition: int | None = None
    version: int = RESPONSE_VERSION


@dataclass(frozen=True, slots=True)
class CombinedKey:
    """The subscription store's key: the foreign key, then the primary key."""

    foreign_key: Any
    primary_key: Any


def _put_hash(out: bytearray, version: int, h: Hash | None) -> None:
    if h is None:
        out.append((version | 0x80) & 0xFF)
    else:
        out.append(version)


def encode_subscription(w: SubscriptionWrapper, primary_key: bytes) -> bytes:
    out = bytearray()
    _put_hash(out, w.version, w.hash)
    out.append(w.instruction)
    if w.hash is not None:
        out += struct.pack(">qq", *w.hash)
    out += primary_key
    out += struct.pack(">i", w.primary_partition)
    return bytes(out)


def decode_subscription(data: bytes) -> tuple[Hash | None, int, bytes, int | None, int]:
    """(hash, instruction, primary key bytes, primary partition, version)."""
    version = data[0] & 0x7F
    has_hash = not data[0] & 0x80
    instruction = data[1]
    pos = 2
    h: Hash | None = None
    if has_hash:
        h = struct.unpack_from(">qq", data, pos)
        pos += 16
    end = len(data) - 4 if version > 0 else len(data)
    partition = struct.unpack_from(">i", data, end)[0] if version > 0 else None
    return h, instruction, data[pos:end], partition, version


class _KeyDefaultedSerde(KeyDefaulted):
    """A wrapper whose inner serde, when not given, is the configured default *key* serde."""

    def __init__(self, inner: Serde[Any] | None) -> None:
        self.inner = inner

    def use_default_key(self, serde: Serde[Any]) -> None:
        if self.inner is None:
            self.inner = serde

    def _inner(self) -> Serde[Any]:
        if self.inner is None:
            raise RuntimeError("the foreign-key join's primary key serde is not set")
        return self.inner


class SubscriptionWrapperSerializer(_KeyDefaultedSerde, Serializer[SubscriptionWrapper]):
    def serialize(self, topic: str | None, data: SubscriptionWrapper | None) -> bytes | None:
        if data is None:
            return None
        pk = self._inner().serializer.serialize(f"{topic}-pk", data.primary_key)
        return encode_subscription(data, pk or b"")


class SubscriptionWrapperDeserializer(_KeyDefaultedSerde, Deserializer[SubscriptionWrapper]):
    def deserialize(self, topic: str | None, data: bytes | None) -> SubscriptionWrapper | None:
        if data is None:
            return None
        h, instruction, pk, partition, version = decode_subscription(data)
        primary_key = self._inner().deserializer.deserialize(f"{topic}-pk", pk)
        return SubscriptionWrapper(h, instruction, primary_key, -1 if partition is None else partition, version)


class ResponseWrapperSerializer(InnerDefaulted, Serializer[SubscriptionResponseWrapper]):
    def __init__(self, inner: Serde[Any] | None) -> None:
        self.inner = inner

    def use_default_inner(self, serde: Serde[Any]) -> None:
        if self.inner is None:
            self.inner = serde

    def serialize(self, topic: str | None, data: SubscriptionResponseWrapper | None) -> bytes | None:
        if data is None:
            return None
        assert self.inner is not None, "the foreign value serde is set by the task"
        out = bytearray()
        _put_hash(out, data.version, data.hash)
        if data.hash is not None:
            out += struct.pack(">qq", *data.hash)
        if data.foreign_value is not None:
            out += self.inner.serializer.serialize(topic, data.foreign_value) or b""
        return bytes(out)


class ResponseWrapperDeserializer(InnerDefaulted, Deserializer[SubscriptionResponseWrapper]):
    def __init__(self, inner: Serde[Any] | None) -> None:
        self.inner = inner

    def use_default_inner(self, serde: Serde[Any]) -> None:
        if self.inner is None:
            self.inner = serde

    def deserialize(self, topic: str | None, data: bytes | None) -> SubscriptionResponseWrapper | None:
        if data is None:
            return None
        assert self.inner is not None, "the foreign value serde is set by the task"
        version = data[0] & 0x7F
        pos = 1
        h: Hash | None = None
        if not data[0] & 0x80:
            h = struct.unpack_from(">qq", data, pos)
            pos += 16
        value = self.inner.deserializer.deserialize(topic, data[pos:]) if len(data) > pos else None
        return SubscriptionResponseWrapper(h, value, None, version)


def combined_key_prefix(foreign_key: bytes) -> bytes:
    return struct.pack(">i", len(foreign_key)) + foreign_key


def split_combined_key(data: bytes) -> tuple[bytes, bytes]:
    """(foreign key bytes, primary key bytes)."""
    n = struct.unpack_from(">i", data, 0)[0]
    return data[4:4 + n], data[4 + n:]
