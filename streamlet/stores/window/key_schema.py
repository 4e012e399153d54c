"""Kafka Streams' window key schema: the bytes a window store's changelog is keyed by.

Why these exact bytes: the changelog topic is shared with anything that reads it (a Java
application restoring the same store, tools inspecting it), and Kafka Streams writes window
changelog keys as the serialized key, then the window start as an 8-byte big-endian long, then a
4-byte big-endian sequence number (non-zero only for stores that retain duplicates).
"""

from __future__ import annotations

import struct

from streamlet.errors import SerializationError

_SUFFIX = struct.Struct(">qi")
SUFFIX_SIZE = _SUFFIX.size


def to_store_key(key: bytes, window_start: int, seqnum: int) -> bytes:
    return key + _SUFFIX.pack(window_start, seqnum)


def from_store_key(data: bytes) -> tuple[bytes, int, int]:
    """(key bytes, window start, seqnum) of a changelog key."""
    if len(data) < SUFFIX_SIZE:
        raise SerializationError(f"a window store key needs at least {SUFFIX_SIZE} bytes, got {len(data)}")
    start, seqnum = _SUFFIX.unpack_from(data, len(data) - SUFFIX_SIZE)
    return data[:-SUFFIX_SIZE], start, seqnum
