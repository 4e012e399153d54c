"""Kafka Streams' commit metadata: what a task keeps in the metadata string of each committed offset.

Kafka Streams commits, with every input partition's offset, a `TopicPartitionMetadata`: the partition
time and the task's `ProcessorMetadata`, a map of string keys to 64-bit integers in which an
`on_window_close` aggregation keeps, under its store's name, the window close time of its last emit.
A task starting reads them back: partition times (and from them stream time) and the merged map, so
that final results already sent are not sent again. streamlet writes and reads the same bytes, so that
either side (the asyncio runtime, the Spark engine, Kafka Streams itself) continues from the others'
commits. This module is the format only; which times a task commits and restores is the runtime's.

The string (Kafka Streams 4.x, version 2): standard base64, padded, of
    version byte 2 | partition time (int64, big-endian) | processor metadata
and the processor metadata, empty when the map is, of
    entry count (int32) | per entry: key length (int32) | key (UTF-8) | value (int64)
Version 1 (Kafka Streams before 3.3) is the first two fields only. Decoding follows Kafka Streams'
`TopicPartitionMetadata.decode`: nothing, an unknown version or anything unreadable is "no partition
time, no metadata" (logged once per partition, never an error: a foreign or damaged string must not stop
a task), and a readable partition time followed by unreadable metadata keeps the partition time.

Kafka Streams writes its map in `java.util.HashMap` order; `encode` writes entries in the order such a map
(grown from the default capacity) iterates, so a map Kafka Streams would commit comes out byte for byte
alike. Readers do not depend on the order.

What streamlet carries beyond Kafka Streams goes into the same map under keys starting with
`STREAMLET_KEY_PREFIX` ("streamlet:"). Kafka Streams' processors look up only their stores' names,
which can never contain ':' (store and processor names are limited to letters, digits, '.', '_' and
'-'), and Kafka Streams keeps keys it does not know: it merges every partition's map (the larger value
per key) and commits the merged map again. Such keys are therefore only trusted together with a stamp
(see `STAMP_KEY`) that says which commit wrote them.
"""

from __future__ import annotations

import base64
import binascii
import logging
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

NO_TIMESTAMP = -1
"""Kafka Streams' `RecordQueue.UNKNOWN`: no partition time."""
LATEST_VERSION = 2
STREAMLET_KEY_PREFIX = "streamlet:"
"""Keys of streamlet's own entries in the processor metadata (never a Kafka Streams store name)."""
STAMP_KEY = STREAMLET_KEY_PREFIX + "at"
"""Written by the Spark engine into each partition's metadata: the offset committed with it. Kafka Streams
re-commits foreign keys merged across partitions, so streamlet's entries count only where every input
partition's stamp equals its committed offset (see `stamped_extras`)."""
METADATA_LIMIT = 4096
"""The broker's default `offset.metadata.max.bytes`: a longer string fails the whole commit."""

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_HASHMAP_CAPACITY = 16  # java.util.HashMap's default capacity; it doubles past 3/4 full
_warned: set[str] = set()
_WARN_LIMIT = 1000
_NONE = ": taken as none (no partition time, no processor metadata), as Kafka Streams does"


@dataclass(frozen=True, slots=True)
class TopicPartitionMetadata:
    """The metadata Kafka Streams commits with one partition's offset: that partition's time
    (`NO_TIMESTAMP` when unknown) and the task's processor metadata (key -> 64-bit integer)."""

    partition_time: int = NO_TIMESTAMP
    processor_metadata: Mapping[str, int] = field(default_factory=dict)

    def encode(self) -> str:
        """The metadata string Kafka Streams 4.x writes for this (version 2)."""
        if not _INT64_MIN <= self.partition_time <= _INT64_MAX:
            raise ValueError(f"partition time {self.partition_time} does not fit in 64 bits")
        raw = bytes([LATEST_VERSION]) + _LONG.pack(self.partition_time) + encode_processor_metadata(
            self.processor_metadata)
        return base64.b64encode(raw).decode("ascii")

    @classmethod
    def decode(cls, text: str | None, where: str = "") -> TopicPartitionMetadata:
        """Read a committed metadata string as Kafka Streams does (see the module docstring); `where`
        (e.g. "topic-0") names the partition in the one warning an unreadable string gets."""
        if not text:
            return _ABSENT
        try:
            raw = _b64decode(text)
        except ValueError:
            _warn_once(where, "base64", f"is not Kafka Streams' commit metadata (not base64){_NONE}")
            return _ABSENT
        if not raw:
            _warn_once(where, "empty", f"is empty after base64 decoding{_NONE}")
            return _ABSENT
        version = struct.unpack_from(">b", raw)[0]
        if version not in (1, LATEST_VERSION):
            _warn_once(where, "version", f"has version {version}, not 1 or {LATEST_VERSION}{_NONE}")
            return _ABSENT
        if len(raw) < 1 + _LONG.size:
            _warn_once(where, "short", f"is too short for a partition time{_NONE}")
            return _ABSENT
        partition_time = _LONG.unpack_from(raw, 1)[0]
        rest = raw[1 + _LONG.size:]
        if version == 1 or not rest:
            return cls(partition_time, {})
        try:
            return cls(partition_time, decode_processor_metadata(rest))
        except ValueError as exc:
            _warn_once(where, "processor",
                       f"has unreadable processor metadata ({exc}): only its partition time is used")
            return cls(partition_time, {})


_ABSENT = TopicPartitionMetadata()


def encode_processor_metadata(entries: Mapping[str, int]) -> bytes:
    """Kafka Streams' `ProcessorMetadata.serialize`: nothing for an empty map."""
    if not entries:
        return b""
    parts = [_INT.pack(len(entries))]
    for key in java_hashmap_order(entries):
        value = entries[key]
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"processor metadata {key!r} = {value} does not fit in 64 bits")
        try:
            encoded = key.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"processor metadata key {key!r} is not encodable as UTF-8") from exc
        parts += [_INT.pack(len(encoded)), encoded, _LONG.pack(value)]
    return b"".join(parts)


def decode_processor_metadata(data: bytes) -> dict[str, int]:
    """Kafka Streams' `ProcessorMetadata.deserialize`; ValueError where it would throw. Bytes after the
    last entry are ignored, and a repeated key keeps its last value, as there."""
    if not data:
        return {}
    view = memoryview(data)
    count = _read(_INT, view, 0)
    if count < 0:
        raise ValueError(f"negative entry count {count}")
    entries: dict[str, int] = {}
    at = _INT.size
    for _ in range(count):
        size = _read(_INT, view, at)
        at += _INT.size
        if size < 0 or at + size > len(view):
            raise ValueError(f"key of {size} bytes at byte {at} does not fit in {len(view)} bytes")
        key = bytes(view[at:at + size]).decode("utf-8", errors="replace")
        at += size
        entries[key] = _read(_LONG, view, at)
        at += _LONG.size
    return entries


def _read(fmt: struct.Struct, view: memoryview, at: int) -> int:
    if at + fmt.size > len(view):
        raise ValueError(f"{fmt.size} bytes expected at byte {at} of {len(view)}")
    value: int = fmt.unpack_from(view, at)[0]
    return value


def _b64decode(text: str) -> bytes:
    """`java.util.Base64.getDecoder()`: the standard alphabet; padding optional but, where present, complete."""
    try:
        data = text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise ValueError("not ASCII") from exc
    if b"=" not in data:
        if len(data) % 4 == 1:
            raise ValueError("a lone trailing base64 character")
        data += b"=" * (-len(data) % 4)
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from exc


def _java_string_hash(key: str) -> int:
    """`String.hashCode()` (over UTF-16 code units), spread as `HashMap.hash` does."""
    h = 0
    units = key.encode("utf-16-be", errors="surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h ^ (h >> 16)


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """`keys` (in insertion order) in the order a `java.util.HashMap` grown from its default capacity
    iterates them: by bucket, then by insertion within a bucket."""
    ordered = list(keys)
    capacity = _HASHMAP_CAPACITY
    while len(ordered) > capacity * 3 // 4:
        capacity *= 2
    return sorted(ordered, key=lambda k: _java_string_hash(k) & (capacity - 1))


def merge_processor_metadata(into: dict[str, int], other: Mapping[str, int]) -> None:
    """Kafka Streams' `ProcessorMetadata.update`: keys `into` lacks are added, others keep the larger value."""
    for key, value in other.items():
        known = into.get(key)
        if known is None or known < value:
            into[key] = value


def is_streamlet_key(key: str) -> bool:
    return key.startswith(STREAMLET_KEY_PREFIX)


def fit_to_limit(meta: TopicPartitionMetadata, limit: int = METADATA_LIMIT, where: str = "") -> str:
    """`meta` encoded; if longer than `limit`, first without streamlet's own entries, then without any
    processor metadata (logged once): a commit the broker refuses would stop the task for good."""
    encoded = meta.encode()
    if len(encoded) <= limit:
        return encoded
    kafka_streams_only = {k: v for k, v in meta.processor_metadata.items() if not is_streamlet_key(k)}
    encoded = TopicPartitionMetadata(meta.partition_time, kafka_streams_only).encode()
    if len(encoded) <= limit:
        return encoded
    _warn_once(where, "limit", f"would be {len(encoded)} characters, over the limit of {limit}: only the "
               "partition time is committed (on_window_close aggregations may send final results again after "
               "a restart)")
    return TopicPartitionMetadata(meta.partition_time, {}).encode()


def _warn_once(where: str, kind: str, problem: str) -> None:
    """Warn about `problem` the first time a partition (`where`) shows this `kind` of it; later: debug."""
    message = f"the committed offset metadata of {where or 'a partition'} {problem}"
    tag = f"{kind}|{where}"
    if tag in _warned:
        log.debug(message)
        return
    if len(_warned) < _WARN_LIMIT:
        _warned.add(tag)
    log.warning(message)


Partition = tuple[str, int]


def encode_commit_metadata(partition_times: Mapping[Partition, int], processor_metadata: Mapping[str, int],
                           partitions: Iterable[Partition]) -> dict[Partition, str]:
    """The metadata to commit with each of `partitions`' offsets, as Kafka Streams writes it: the
    partition's time (`NO_TIMESTAMP` when unknown) and the task's whole processor metadata."""
    return {tp: fit_to_limit(TopicPartitionMetadata(partition_times.get(tp, NO_TIMESTAMP), processor_metadata),
                             where=f"{tp[0]}-{tp[1]}")
            for tp in partitions}


def decode_committed(metadata: Mapping[Partition, str]) -> tuple[dict[Partition, int], dict[str, int]]:
    """What a task starting takes from the metadata committed with its partitions' offsets (Kafka Streams'
    `initializeTaskTimeAndProcessorMetadata`): each partition's time, and the processor metadata of all
    of them merged, the larger value per key."""
    partition_times: dict[Partition, int] = {}
    merged: dict[str, int] = {}
    for tp, text in metadata.items():
        decoded = TopicPartitionMetadata.decode(text, f"{tp[0]}-{tp[1]}")
        partition_times[tp] = decoded.partition_time
        merge_processor_metadata(merged, decoded.processor_metadata)
    return partition_times, merged
