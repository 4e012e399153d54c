"""Kafka Streams' bytes for one buffered record: `BufferValue` around a `ProcessorRecordContext`.

A stream-table join with a grace period keeps each waiting stream record under a time-first key and
this value, and writes both to its changelog as Kafka Streams 4.x does, so the changelog of a buffer
can move between a Java application and a streamlet one. The layout (all integers big-endian):

- the record context: timestamp (8), offset (8), topic (4-byte length + UTF-8), partition (4), header
  count (4), then per header its name (4-byte length + UTF-8) and value (4-byte length, -1 for none);
- the prior value and the old value (4-byte length, -1 for none, -2 for an old value equal to the
  prior one), then the new value; the join buffer keeps only a new value (prior and old are -1);
- in the changelog only: an 8-byte buffer time after it (always 0 for the join buffer).

The key is `0x00` (the time-first schema's prefix), the timestamp (8), the serialized key and a 4-byte
sequence number, so byte order is time order.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from streamlet.errors import StreamsError
from streamlet.record import Headers

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_CONTEXT_HEAD = struct.Struct(">qqi")
TIME_FIRST_PREFIX = b"\x00"
_KEY_OVERHEAD = 1 + 8 + 4


class BufferedRecord(NamedTuple):
    """A decoded buffer entry: the stream record's key and value bytes and its record context."""

    key: bytes
    value: bytes | None
    timestamp: int
    offset: int
    topic: str | None
    partition: int
    headers: Headers


def buffer_key(key: bytes, timestamp: int, seqnum: int) -> bytes:
    """Kafka Streams' `TimeFirstWindowKeySchema.toStoreKeyBinary`: prefix, timestamp, key, sequence number."""
    return TIME_FIRST_PREFIX + _LONG.pack(timestamp) + key + _INT.pack(seqnum)


def key_timestamp(store_key: bytes) -> int:
    """The timestamp a buffer key was written with."""
    if len(store_key) < _KEY_OVERHEAD or store_key[:1] != TIME_FIRST_PREFIX:
        raise StreamsError(f"not a time-first buffer key: {store_key.hex()}")
    return int(_LONG.unpack_from(store_key, 1)[0])


def key_bytes(store_key: bytes) -> bytes:
    """The serialized record key inside a buffer key."""
    key_timestamp(store_key)  # checks the layout
    return store_key[9:-4]


def time_bound(timestamp: int) -> bytes:
    """The shortest key after every buffer key with a timestamp at most `timestamp` (exclusive upper bound)."""
    return TIME_FIRST_PREFIX + _LONG.pack(timestamp + 1)


def _sized(data: bytes | None) -> bytes:
    return _INT.pack(-1) if data is None else _INT.pack(len(data)) + data


def encode_changelog_value(value: bytes, timestamp: int, offset: int, topic: str | None, partition: int,
                           headers: Headers) -> bytes:
    """The changelog value of one buffered record (`BufferValue.serialize` plus the buffer time 0).

    A record without a source topic (forwarded from a punctuator) is written with an empty topic name,
    which no Kafka topic has: Kafka Streams would fail on it instead."""
    topic_bytes = (topic or "").encode()
    out = bytearray(_CONTEXT_HEAD.pack(timestamp, offset, len(topic_bytes)))
    out += topic_bytes
    out += _INT.pack(partition)
    out += _INT.pack(len(headers))
    for name, header_value in headers:
        out += _sized(name.encode())
        out += _sized(header_value)
    out += _INT.pack(-1)  # prior value
    out += _INT.pack(-1)  # old value
    out += _sized(value)
    out += _LONG.pack(0)  # buffer time
    return bytes(out)


def decode(store_key: bytes, data: bytes) -> BufferedRecord:
    """Read a buffer entry back (the changelog form; the trailing buffer time is not needed)."""
    try:
        timestamp, offset, topic_length = _CONTEXT_HEAD.unpack_from(data, 0)
        pos = _CONTEXT_HEAD.size
        topic = data[pos:pos + topic_length].decode()
        pos += topic_length
        partition, count = struct.unpack_from(">ii", data, pos)
        pos += 8
        headers = []
        for _ in range(max(count, 0)):
            name, pos = _take(data, pos)
            header_value, pos = _take(data, pos)
            headers.append(((name or b"").decode(), header_value if header_value is not None else b""))
        _prior, pos = _take(data, pos)
        (old_length,) = _INT.unpack_from(data, pos)
        pos += 4
        if old_length >= 0:
            pos += old_length
        value, pos = _take(data, pos)
    except (struct.error, UnicodeDecodeError) as error:
        raise StreamsError(f"corrupt join buffer value for key {store_key.hex()}: {error}") from error
    return BufferedRecord(key_bytes(store_key), value, timestamp, offset, topic or None, partition, tuple(headers))


def _take(data: bytes, pos: int) -> tuple[bytes | None, int]:
    (length,) = _INT.unpack_from(data, pos)
    pos += 4
    if length < 0:
        return None, pos
    if pos + length > len(data):
        raise struct.error("length past the end")
    return data[pos:pos + length], pos + length
