"""`SegmentRow`: the versions of one key kept in one segment of a versioned store, and their bytes.

Kafka Streams' versioned store files a key's older versions by their validTo timestamp, in segments
of `segment_interval`; all of one key's versions in one segment form one row, so that the row can
be read and rewritten whole. A row holds `next_timestamp` (the validTo of its newest version) and
its versions newest first, each `(valid_from, value or None for a tombstone)`: a version is valid
until the next newer one's timestamp. The row's oldest timestamp is its `min_timestamp`.

One case breaks the rule that timestamps strictly increase: a tombstone put for a key with no
version to end is kept as a "degenerate" row of itself alone, with `next_timestamp` equal to its own
timestamp (Kafka Streams' `RocksDBVersionedStoreSegmentValueFormatter` documents the same rows).

The bytes layout is streamlet's own (local files only; the changelog carries plain records):
`next_timestamp`, `min_timestamp` (8-byte big-endian each), then per version, newest first, its
timestamp (8 bytes), its value's length (4 bytes, -1 for a tombstone) and the value. The two
leading timestamps let a reader decide whether to look into a row without decoding it.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

_HEADER = struct.Struct(">qq")
_VERSION = struct.Struct(">qi")
_TIMESTAMP = struct.Struct(">q")


def next_timestamp(row: bytes) -> int:
    """The validTo of the newest version in an encoded row."""
    return int(_TIMESTAMP.unpack_from(row, 0)[0])


def min_timestamp(row: bytes) -> int:
    """The timestamp of the oldest version in an encoded row."""
    return int(_TIMESTAMP.unpack_from(row, 8)[0])


class Found(NamedTuple):
    """A version found in a row: its position (0 = newest), validity interval and value."""

    position: int
    valid_from: int
    valid_to: int
    value: bytes | None


class SegmentRow:
    """One key's versions in one segment; see the module docstring."""

    __slots__ = ("next_timestamp", "versions")

    def __init__(self, next_ts: int, versions: list[tuple[int, bytes | None]]) -> None:
        self.next_timestamp = next_ts
        self.versions = versions  # newest first

    @classmethod
    def with_version(cls, value: bytes | None, valid_from: int, valid_to: int) -> SegmentRow:
        """A row of one version (a degenerate row when `value` is None and `valid_from == valid_to`)."""
        return cls(valid_to, [(valid_from, value)])

    @classmethod
    def decode(cls, data: bytes) -> SegmentRow:
        next_ts, min_ts = _HEADER.unpack_from(data, 0)
        versions: list[tuple[int, bytes | None]] = []
        pos = _HEADER.size
        while True:
            timestamp, size = _VERSION.unpack_from(data, pos)
            pos += _VERSION.size
            if size < 0:
                versions.append((timestamp, None))
            else:
                versions.append((timestamp, data[pos:pos + size]))
                pos += size
            if timestamp == min_ts or pos >= len(data):
                break
        return cls(next_ts, versions)

    def encode(self) -> bytes:
        parts = [_HEADER.pack(self.next_timestamp, self.min_timestamp)]
        for timestamp, value in self.versions:
            if value is None:
                parts.append(_VERSION.pack(timestamp, -1))
            else:
                parts.append(_VERSION.pack(timestamp, len(value)))
                parts.append(value)
        return b"".join(parts)

    @property
    def min_timestamp(self) -> int:
        return self.versions[-1][0]

    @property
    def degenerate(self) -> bool:
        return self.next_timestamp == self.min_timestamp

    def find(self, timestamp: int) -> Found:
        """The version valid at `timestamp`, which must lie in `[min_timestamp, next_timestamp)`."""
        if not self.min_timestamp <= timestamp < self.next_timestamp:
            raise ValueError(f"timestamp {timestamp} is outside this segment row "
                             f"[{self.min_timestamp}, {self.next_timestamp})")
        valid_to = self.next_timestamp
        for index, (valid_from, value) in enumerate(self.versions):
            if valid_from <= timestamp:
                return Found(index, valid_from, valid_to, value)
            valid_to = valid_from
        raise AssertionError("unreachable: the oldest version starts at min_timestamp")

    def insert_as_latest(self, valid_from: int, valid_to: int, value: bytes | None) -> None:
        """Add a version newer than every other in the row; a gap between the row's `next_timestamp`
        and `valid_from` becomes a tombstone. Versions at or after `valid_from` (left by an
        interrupted earlier write) are cut off first."""
        if valid_from < self.next_timestamp:
            self._truncate_to(valid_from)
        if self.next_timestamp == valid_from:
            if self.degenerate:
                self.versions = [(valid_from, value)]
            else:
                self.versions.insert(0, (valid_from, value))
        else:
            if self.degenerate:
                self.versions = [(self.next_timestamp, None)]
            else:
                self.versions.insert(0, (self.next_timestamp, None))
            self.versions.insert(0, (valid_from, value))
        self.next_timestamp = valid_to

    def insert_as_earliest(self, timestamp: int, value: bytes | None) -> None:
        """Add a version older than every other in the row (valid until the oldest one's timestamp)."""
        if self.degenerate:
            self.versions = [(timestamp, value)]
        else:
            self.versions.append((timestamp, value))

    def insert(self, timestamp: int, value: bytes | None, index: int) -> None:
        """Add a version at `index` (the index `find` returned for its timestamp)."""
        self.versions.insert(index, (timestamp, value))

    def update(self, timestamp: int, value: bytes | None, index: int) -> None:
        """Replace the version at `index`."""
        self.versions[index] = (timestamp, value)

    def _truncate_to(self, timestamp: int) -> None:
        """Drop the versions from `timestamp` on; the row then ends at `timestamp`."""
        if timestamp <= self.min_timestamp:
            self.next_timestamp, self.versions = timestamp, [(timestamp, None)]
            return
        found = self.find(timestamp)
        del self.versions[:found.position + (1 if found.valid_from == timestamp else 0)]
        self.next_timestamp = timestamp
