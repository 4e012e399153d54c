"""How a store's value objects become local bytes, and how changelog entries become local bytes again.

Two formats, as Kafka Streams has: plain (the value serde's bytes) and timestamped (an 8-byte
big-endian signed timestamp, then the value serde's bytes, as its RocksDB timestamped stores keep
them). A changelog always carries the plain bytes, with the timestamp as the Kafka record's
timestamp; restoring a timestamped store puts the prefix back from that record timestamp.
"""

from __future__ import annotations

import struct
from typing import Any

from streamlet.errors import SerializationError
from streamlet.serdes import DoubleSerde, FloatSerde, IntegerSerde, LongSerde, Serde, ShortSerde, fast_serializer
from streamlet.stores.api import ChangelogEntry, ValueAndTimestamp

_TIMESTAMP = struct.Struct(">q")
TIMESTAMP_SIZE = _TIMESTAMP.size
unpack_timestamp = _TIMESTAMP.unpack_from
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

    def encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        v = value.value
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
        return _TIMESTAMP.pack(value.timestamp) + raw

    def decode(self, data: bytes) -> Any:
        timestamp, raw = split_timestamped(data)
        return ValueAndTimestamp(self._deserialize(self._topic, raw), timestamp)

    def from_changelog(self, value: bytes | None, timestamp: int) -> bytes | None:
        return None if value is None else _TIMESTAMP.pack(timestamp) + value

    def from_changelog_entries(self, entries: list[ChangelogEntry]) -> list[tuple[bytes, bytes | None]]:
        """`from_changelog` over a restore batch: (key, local bytes or None for a delete), in order."""
        pack = _TIMESTAMP.pack
        return [(key, None if value is None else pack(timestamp) + value) for key, value, timestamp in entries]


ValueFormat = PlainValueFormat | TimestampedValueFormat
