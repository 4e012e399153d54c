"""How a store's value objects become local bytes, and how changelog entries become local bytes again.

Two formats, as Kafka Streams has: plain (the value serde's bytes) and timestamped (an 8-byte
big-endian signed timestamp, then the value serde's bytes, as its RocksDB timestamped stores keep
them). A changelog always carries the plain bytes, with the timestamp as the Kafka record's
timestamp; restoring a timestamped store puts the prefix back from that record timestamp.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from streamlet.errors import SerializationError
from streamlet.serdes import DoubleSerde, FloatSerde, IntegerSerde, LongSerde, Serde, ShortSerde, fast_serializer
from streamlet.stores.api import AggregationWithHeaders, ChangelogEntry, ValueAndTimestamp, ValueTimestampHeaders

_TIMESTAMP: Final = struct.Struct(">q")  # Final: a C static when compiled, not a dict look-up per use
TIMESTAMP_SIZE: Final = 8
unpack_timestamp: Final = _TIMESTAMP.unpack_from
_pack_timestamp: Final = _TIMESTAMP.pack
"""`(timestamp,)` from the first 8 bytes of a timestamped local value (no length check)."""

_FIXED_WIDTHS: dict[type, int] = {ShortSerde: 2, IntegerSerde: 4, LongSerde: 8, FloatSerde: 4, DoubleSerde: 8}
"""The built-in serdes whose every non-null value has the same byte length."""


def _fixed_width(serde: Serde[Any]) -> int | None:
    return _FIXED_WIDTHS.get(type(serde))


def split_timestamped(value: bytes) -> tuple[int, bytes]:
    """(timestamp, raw value bytes) of a timestamped store's local value."""
    if len(value) < TIMESTAMP_SIZE:
        raise SerializationError(f"a timestamped store value needs at least 8 bytes, got {len(value)}")
    return _TIMESTAMP.unpack_from(value)[0], value[TIMESTAMP_SIZE:]


class PlainValueFormat:
    """Value objects <-> the value serde's bytes."""

    timestamped = False

    def __init__(self, serde: Serde[Any], topic: str | None) -> None:
        self._serialize = serde.serializer.serialize
        self._deserialize = serde.deserializer.deserialize
        self._topic = topic
        self.fixed_size: int | None = _fixed_width(serde)
        """The byte length of every non-null value's local bytes when the serde fixes it, else None (a cache
        then encodes a value to learn its size)."""

    def encode(self, value: Any) -> bytes | None:
        return self._serialize(self._topic, value)

    def decode(self, data: bytes) -> Any:
        return self._deserialize(self._topic, data)

    def from_changelog(self, value: bytes | None, timestamp: int) -> bytes | None:
        return value

    def from_changelog_entries(self, entries: list[ChangelogEntry]) -> list[tuple[bytes, bytes | None]]:
        """`from_changelog` over a restore batch: (key, local bytes or None for a delete), in order."""
        return [(key, value) for key, value, _timestamp in entries]


class TimestampedValueFormat:
    """`ValueAndTimestamp` <-> timestamp prefix + the value serde's bytes."""

    timestamped = True

    def __init__(self, serde: Serde[Any], topic: str | None) -> None:
        self._serialize = serde.serializer.serialize
        self._deserialize = serde.deserializer.deserialize
        self._topic = topic
        self._value_type, self._encode_value = fast_serializer(serde.serializer)
        width = _fixed_width(serde)
        self.fixed_size: int | None = None if width is None else TIMESTAMP_SIZE + width
        """As `PlainValueFormat.fixed_size`, the timestamp prefix included."""

    def encode(self, value: ValueAndTimestamp | None) -> bytes | None:
        if value is None:
            return None
        v = value[0]  # indexed: compiled, read directly instead of an attribute look-up
        raw: bytes | None
        if type(v) is self._value_type:  # the serde's fast path (see `serdes.FastPath`); its own call on error
            try:
                raw = self._encode_value(v)
            except Exception:
                raw = self._serialize(self._topic, v)
        else:
            raw = self._serialize(self._topic, v)
        if raw is None:
            return None
        return _pack_timestamp(value[1]) + raw

    def decode(self, data: bytes) -> Any:
        timestamp, raw = split_timestamped(data)
        return ValueAndTimestamp(self._deserialize(self._topic, raw), timestamp)

    def from_changelog(self, value: bytes | None, timestamp: int) -> bytes | None:
        return None if value is None else _TIMESTAMP.pack(timestamp) + value

    def from_changelog_entries(self, entries: list[ChangelogEntry]) -> list[tuple[bytes, bytes | None]]:
        """`from_changelog` over a restore batch: (key, local bytes or None for a delete), in order."""
        pack = _TIMESTAMP.pack
        return [(key, None if value is None else pack(timestamp) + value) for key, value, timestamp in entries]


StoredHeaders = tuple[tuple[str, bytes | None], ...]
"""A stored value's headers: (name, value) pairs in order, a value possibly None."""


def _varint(n: int) -> bytes:
    """Kafka's zig-zag varint of a 32-bit int (`ByteUtils.writeVarint`)."""
    z = ((n << 1) ^ (n >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the zig-zag varint at `pos`."""
    z = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise SerializationError("a headers-aware store value ends inside a varint")
        b = data[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            return (z >> 1) ^ -(z & 1), pos
        shift += 7
        if shift > 28:
            raise SerializationError("a headers-aware store value has a varint longer than 5 bytes")


def serialize_headers(headers: StoredHeaders) -> bytes:
    """Headers as Kafka Streams' headers-aware stores keep them: nothing for none, else varint count, then per
    header varint key length, UTF-8 key, varint value length (-1 for a null value) and the value."""
    if not headers:
        return b""
    parts = [_varint(len(headers))]
    for name, value in headers:
        key = name.encode()
        parts.append(_varint(len(key)))
        parts.append(key)
        if value is None:
            parts.append(b"\x01")
        else:
            parts.append(_varint(len(value)))
            parts.append(bytes(value))
    return b"".join(parts)


def deserialize_headers(data: bytes) -> StoredHeaders:
    """The inverse of `serialize_headers`."""
    if not data:
        return ()
    count, pos = _read_varint(data, 0)
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        key_len, pos = _read_varint(data, pos)
        name = data[pos:pos + key_len].decode()
        pos += key_len
        value_len, pos = _read_varint(data, pos)
        if value_len < 0:
            headers.append((name, None))
        else:
            headers.append((name, data[pos:pos + value_len]))
            pos += value_len
    if pos != len(data):
        raise SerializationError(f"headers of {len(data)} bytes hold {pos} bytes of {count} headers")
    return tuple(headers)


def join_headers_value(headers: StoredHeaders, timestamp: int, raw: bytes) -> bytes:
    """A headers-aware store's local value: varint length of the headers' bytes, those bytes, the 8-byte
    big-endian timestamp, the value serde's bytes (Kafka Streams' `ValueTimestampHeadersSerializer`)."""
    data = serialize_headers(headers)
    return _varint(len(data)) + data + _TIMESTAMP.pack(timestamp) + raw


def split_headers_value(value: bytes) -> tuple[StoredHeaders, int, bytes]:
    """(headers, timestamp, raw value bytes) of a headers-aware store's local value."""
    size, pos = _read_varint(value, 0)
    end = pos + size
    if size < 0 or end + TIMESTAMP_SIZE > len(value):
        raise SerializationError(f"a headers-aware store value of {len(value)} bytes cannot hold {size} bytes of "
                                 f"headers and a timestamp")
    return deserialize_headers(value[pos:end]), _TIMESTAMP.unpack_from(value, end)[0], value[end + TIMESTAMP_SIZE:]


def convert_to_header_format(value: bytes | None) -> bytes | None:
    """A timestamped store's local value as a headers-aware store's, with no headers (Kafka Streams'
    `HeadersBytesStore.convertToHeaderFormat`, how it upgrades a timestamped store)."""
    return None if value is None else b"\x00" + value


def convert_from_plain_to_header_format(value: bytes | None) -> bytes | None:
    """A plain store's local value as a headers-aware store's: no headers and timestamp -1 (Kafka Streams'
    `HeadersBytesStore.convertFromPlainToHeaderFormat`)."""
    return None if value is None else b"\x00" + _TIMESTAMP.pack(-1) + value


class _HeadersValueFormat:
    """What the formats of the stores with headers share: the serde's functions, and no fixed size."""

    def __init__(self, serde: Serde[Any], topic: str | None) -> None:
        self._serialize = serde.serializer.serialize
        self._deserialize = serde.deserializer.deserialize
        self._topic = topic
        self.fixed_size: int | None = None
        """Never fixed: the headers vary."""


class TimestampedHeadersValueFormat(_HeadersValueFormat):
    """`ValueTimestampHeaders` <-> the bytes of `join_headers_value`. The changelog carries the plain value
    bytes, the timestamp as the record timestamp and the headers as the record's headers (Kafka Streams 4.4's
    changelog of a store with headers); restoring joins them back."""

    timestamped = True

    def encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        raw = self._serialize(self._topic, value.value)
        if raw is None:
            return None
        return join_headers_value(value.headers or (), value.timestamp, raw)

    def decode(self, data: bytes) -> Any:
        headers, timestamp, raw = split_headers_value(data)
        return ValueTimestampHeaders(self._deserialize(self._topic, raw), timestamp, headers)

    def from_changelog(self, value: bytes | None, timestamp: int) -> bytes | None:
        """The local bytes of a changelog record without headers."""
        return None if value is None else join_headers_value((), timestamp, value)

    def from_changelog_entries(self, entries: list[Any]) -> list[tuple[bytes, bytes | None]]:
        """Local bytes of a restore batch of `HeadedChangelogEntry`s (the store registers `with_headers`): (key,
        local bytes or None for a delete), in order."""
        return [(key, None if value is None else join_headers_value(headers, timestamp, value))
                for key, value, timestamp, headers in entries]


def join_aggregation_headers(headers: StoredHeaders, raw: bytes) -> bytes:
    """A session store with headers' local value: varint length of the headers' bytes, those bytes, the
    aggregation serde's bytes (Kafka Streams' `AggregationWithHeadersSerializer`; no timestamp)."""
    data = serialize_headers(headers)
    return _varint(len(data)) + data + raw


def split_aggregation_headers(value: bytes) -> tuple[StoredHeaders, bytes]:
    """(headers, raw aggregation bytes) of a session store with headers' local value."""
    size, pos = _read_varint(value, 0)
    end = pos + size
    if size < 0 or end > len(value):
        raise SerializationError(f"a session store value of {len(value)} bytes cannot hold {size} bytes of headers")
    return deserialize_headers(value[pos:end]), value[end:]


class AggregationHeadersValueFormat(_HeadersValueFormat):
    """`AggregationWithHeaders` <-> the bytes of `join_aggregation_headers`. The changelog carries the plain
    aggregation bytes with the stored headers as the record's headers (Kafka Streams 4.4's changelog of a
    session store with headers); restoring joins them back."""

    timestamped = False

    def encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        raw = self._serialize(self._topic, value.aggregation)
        if raw is None:
            return None
        return join_aggregation_headers(value.headers or (), raw)

    def decode(self, data: bytes) -> Any:
        headers, raw = split_aggregation_headers(data)
        return AggregationWithHeaders(self._deserialize(self._topic, raw), headers)

    def from_changelog(self, value: bytes | None, timestamp: int) -> bytes | None:
        return None if value is None else join_aggregation_headers((), value)

    def from_changelog_entries(self, entries: list[Any]) -> list[tuple[bytes, bytes | None]]:
        """Local bytes of a restore batch of `HeadedChangelogEntry`s: (key, local bytes or None), in order."""
        return [(key, None if value is None else join_aggregation_headers(headers, value))
                for key, value, _timestamp, headers in entries]


class DslTimestampedHeadersValueFormat(TimestampedHeadersValueFormat):
    """A DSL window store's values under `dsl.store.format=HEADERS`: `ValueAndTimestamp` in and out (what the
    windowed aggregations read and write), kept as `join_headers_value` bytes without headers, as Kafka Streams
    4.4.0's windowed aggregations store them."""

    def encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        raw = self._serialize(self._topic, value.value)
        if raw is None:
            return None
        return join_headers_value((), value.timestamp, raw)

    def decode(self, data: bytes) -> Any:
        _headers, timestamp, raw = split_headers_value(data)
        return ValueAndTimestamp(self._deserialize(self._topic, raw), timestamp)


class DslAggregationHeadersValueFormat(AggregationHeadersValueFormat):
    """A DSL session store's aggregates under `dsl.store.format=HEADERS`: plain aggregates in and out (what the
    session aggregations read and write), kept as `join_aggregation_headers` bytes without headers, as Kafka
    Streams 4.4.0's session aggregations store them."""

    def encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        raw = self._serialize(self._topic, value)
        if raw is None:
            return None
        return join_aggregation_headers((), raw)

    def decode(self, data: bytes) -> Any:
        return self._deserialize(self._topic, split_aggregation_headers(data)[1])


ValueFormat = (PlainValueFormat | TimestampedValueFormat | TimestampedHeadersValueFormat
               | AggregationHeadersValueFormat)
"""Every format (the DSL formats with headers are subclasses of the formats with headers)."""
