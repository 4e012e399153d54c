"""The suppression buffer: updates held in time order until `KTable.suppress` lets them go.

Kafka Streams' `InMemoryTimeOrderedKeyValueChangeBuffer`, whose rules a user sees in the output:

- one entry per key (its serialized bytes), ordered by (buffer time, key bytes);
- a key buffered again keeps its place in that order (non-resetting: a window that keeps changing
  is still emitted when its first buffer time comes due), takes the new update's value and record
  context, and keeps the *prior* value it had when it was first buffered;
- `evict_while` hands entries over, oldest first, as long as the caller's condition holds;
- its size in bytes is estimated with Kafka Streams' formula, so `BufferConfig.max_bytes` trips at
  the same record.

Entries are kept as bytes (key, and the prior, old and new values serialized with the table's
serdes) so that size accounting and ordering are Kafka Streams'. With logging on, each key changed
since the last commit is written to the changelog at flush: the entry, or a tombstone once it was
emitted, in the order Kafka Streams' set of changed keys (a `HashSet<Bytes>`) iterates them
(`JavaHashSetOrder`). The changelog is Kafka Streams' own, so a buffer moves between a Java application and streamlet
like every other store: a value is its v3 buffer layout (`_encode`: the record context as
`ProcessorRecordContext.serialize` writes it, the prior, old and new values, the buffer time) under the header
`v` = 3, and a tombstone has no headers. Restoring reads that layout, and streamlet's earlier layout
(no `v` header) for changelogs written before.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import StreamsError
from streamlet.record import Headers
from streamlet.stores.api import HeadedChangelogEntry, StateStore, StateStoreContext
from streamlet.stores.builders import DEFAULT_CHANGELOG_CONFIG, ConfigurableStoreBuilder
from streamlet.stores.suppression.java_hash_order import JavaHashSetOrder

_LONGS = struct.Struct(">qq")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_V3_HEADERS: Headers = (("v", b"\x03"),)
"""Kafka Streams' `CHANGELOG_HEADERS` on a buffer's changelog values: the value layout's version."""
_NULL, _SAME_AS_PRIOR = -1, -2
"""`BufferValue`'s length sentinels: no value; the old value is the prior value."""


@dataclass(slots=True)
class BufferedChange:
    """One buffered key: its serialized values and the context of the update that last wrote it."""

    prior: bytes | None
    old: bytes | None
    new: bytes | None
    timestamp: int
    headers: Headers
    topic: str | None  # where the update's record came from (counts in the size estimate)
    shared_prior: bool  # old equals prior (Java then keeps one array for both: counted once, logged as -2)
    partition: int = -1
    offset: int = -1

    def size(self) -> int:
        """Kafka Streams' `BufferValue.residentMemorySizeEstimate`, record context included."""
        size = 8 + 8 + 4 + (0 if self.topic is None else len(self.topic))  # timestamp, offset, topic, partition
        for name, value in self.headers:
            size += len(name) + (0 if value is None else len(value))
        size += 0 if self.prior is None else len(self.prior)
        size += 0 if self.old is None or self.shared_prior else len(self.old)
        return size + (0 if self.new is None else len(self.new))


class SuppressionBuffer(StateStore):
    """In memory, change-logged; opened by the runtime like any store (see the module docstring)."""

    def __init__(self, name: str, logging_enabled: bool) -> None:
        self.name = name
        self.logging_enabled = logging_enabled
        self._times: dict[bytes, int] = {}  # key -> its buffer time (its place in the order)
        self._entries: dict[bytes, BufferedChange] = {}
        self._order: list[tuple[int, bytes]] = []  # a heap of (time, key); stale entries dropped lazily
        self._dirty: dict[bytes, None] = {}  # changed since the last flush, in the order first changed
        self._dirty_order = JavaHashSetOrder()
        self._size = 0
        self._context: StateStoreContext | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    def init(self, context: StateStoreContext) -> None:
        self._context = context
        context.register(self, self._restore, logged=self.logging_enabled, with_headers=True)

    def _restore(self, entries: list[HeadedChangelogEntry]) -> None:
        for key, value, _timestamp, headers in entries:
            self._remove(key)
            if value is not None:
                time, change = _decode(value, headers)
                self._insert(key, time, change)
        self._dirty.clear()

    def flush(self) -> None:
        if not self.logging_enabled or not self._dirty:
            self._dirty.clear()
            return
        assert self._context is not None
        log, name = self._context.log_change, self.name
        for key in self._dirty_order.order(self._dirty):
            change = self._entries.get(key)
            if change is None:
                log(name, key, None, self._context.record_context().timestamp, ())
            else:
                log(name, key, _encode(self._times[key], change), change.timestamp, _V3_HEADERS)
        self._dirty.clear()

    def close(self) -> None:
        self._times.clear()
        self._entries.clear()
        self._order.clear()
        self._dirty.clear()
        self._dirty_order.reset()
        self._size = 0
        self._context = None

    @property
    def persistent(self) -> bool:
        return False

    @property
    def is_open(self) -> bool:
        return self._context is not None

    # -- buffer operations --------------------------------------------------------------------------
    def put(self, time: int, key: bytes, new: bytes | None, old: bytes | None, timestamp: int,
            headers: Headers, topic: str | None, partition: int = -1, offset: int = -1) -> None:
        """Buffer one update of `key` at `time` (its place stays the first one's if already buffered);
        `timestamp`, `headers`, `topic`, `partition` and `offset` are the update's record context."""
        buffered = self._entries.get(key)
        if buffered is None:
            self._insert(key, time, BufferedChange(old, old, new, timestamp, headers, topic, True, partition, offset))
        else:
            self._size -= _entry_size(key, buffered)
            change = BufferedChange(buffered.prior, old, new, timestamp, headers, topic, old == buffered.prior,
                                    partition, offset)
            self._entries[key] = change
            self._size += _entry_size(key, change)
        self._dirty[key] = None

    def _insert(self, key: bytes, time: int, change: BufferedChange) -> None:
        self._times[key] = time
        self._entries[key] = change
        heapq.heappush(self._order, (time, key))
        self._size += _entry_size(key, change)

    def _remove(self, key: bytes) -> None:
        change = self._entries.pop(key, None)
        if change is not None:
            del self._times[key]
            self._size -= _entry_size(key, change)

    def _first(self) -> tuple[int, bytes] | None:
        order, times = self._order, self._times
        while order:
            time, key = order[0]
            if times.get(key) == time:
                return time, key
            heapq.heappop(order)  # left behind by a removal
        return None

    def min_time(self) -> int | None:
        """The buffer time of the first entry in order; None when empty."""
        first = self._first()
        return None if first is None else first[0]

    def evict_while(self, condition: Callable[[], bool], emit: Callable[[bytes, BufferedChange], Any]) -> None:
        """Hand over entries in order while `condition()` holds (checked before each one)."""
        while self._entries and condition():
            first = self._first()
            assert first is not None
            key = first[1]
            change = self._entries[key]
            self._remove(key)
            self._dirty[key] = None
            emit(key, change)

    def num_records(self) -> int:
        return len(self._entries)

    def size_bytes(self) -> int:
        return self._size


def _entry_size(key: bytes, change: BufferedChange) -> int:
    """Kafka Streams' `computeRecordSize`: the buffer time, the key and the value's estimate."""
    return 8 + len(key) + change.size()


def _put_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += _INT.pack(_NULL)
    else:
        out += _INT.pack(len(data))
        out += data


def _take_bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    (n,) = _INT.unpack_from(data, pos)
    pos += 4
    if n < 0:
        return None, pos
    return data[pos:pos + n], pos + n


def _encode(time: int, change: BufferedChange) -> bytes:
    """Kafka Streams' v3 changelog value: `BufferValue.serialize` with the buffer time after it.

    The record context comes first (timestamp, offset, topic, partition, headers: `ProcessorRecordContext`),
    then the prior, old and new values, each length-prefixed (-1: none); an old value equal to the prior is
    written as -2 (Java's `BufferValue` then holds one array for both, so nothing follows the time). streamlet
    once wrote, for an old value equal to the prior in a key buffered again, that many zero bytes after the
    time; readers stop at the time, so those values still restore."""
    out = bytearray(_LONGS.pack(change.timestamp, change.offset))
    _put_bytes(out, b"" if change.topic is None else change.topic.encode())
    out += _INT.pack(change.partition)
    out += _INT.pack(len(change.headers))
    for name, value in change.headers:
        _put_bytes(out, name.encode())
        _put_bytes(out, value)
    _put_bytes(out, change.prior)
    if change.old is None:
        out += _INT.pack(_NULL)
    elif change.old == change.prior:
        out += _INT.pack(_SAME_AS_PRIOR)
    else:
        _put_bytes(out, change.old)
    _put_bytes(out, change.new)
    out += _LONG.pack(time)
    return bytes(out)


def _decode(data: bytes, headers: Headers) -> tuple[int, BufferedChange]:
    """A changelog value back into (buffer time, change): Kafka Streams' v3 layout under `v` = 3, streamlet's
    earlier layout without a `v` header."""
    version = next((value for name, value in reversed(headers) if name == "v"), None)
    if version is None:
        return _decode_streamlet_v0(data)
    if version != b"\x03":
        raise StreamsError(f"suppression buffer changelog value of layout version {version!r}: streamlet reads "
                           "Kafka Streams' version 3 (Kafka Streams 2.4 and later) and its own earlier layout")
    timestamp, offset = _LONGS.unpack_from(data, 0)
    topic, pos = _take_bytes(data, 16)
    (partition, count) = struct.unpack_from(">ii", data, pos)
    pos += 8
    context_headers = []
    for _ in range(max(count, 0)):  # -1: no headers (kept by Java for old layouts)
        name, pos = _take_bytes(data, pos)
        value, pos = _take_bytes(data, pos)
        context_headers.append(((name or b"").decode(), value))
    prior, pos = _take_bytes(data, pos)
    (old_length,) = _INT.unpack_from(data, pos)
    shared = old_length == _SAME_AS_PRIOR
    if shared:
        old, pos = prior, pos + 4
    else:
        old, pos = _take_bytes(data, pos)
    new, pos = _take_bytes(data, pos)
    (time,) = _LONG.unpack_from(data, pos)
    return time, BufferedChange(prior, old, new, timestamp, tuple(context_headers),  # type: ignore[arg-type]
                                topic.decode() if topic else None, shared, partition, offset)


def _decode_streamlet_v0(data: bytes) -> tuple[int, BufferedChange]:
    """streamlet's layout before it wrote Kafka Streams': time, record timestamp, prior shared?, prior, old,
    new, topic, headers (count, then each name and value)."""
    time, timestamp = _LONGS.unpack_from(data, 0)
    pos = 17  # after a flag: prior and old were one value when first buffered (equal is what counts now)
    prior, pos = _take_bytes(data, pos)
    old, pos = _take_bytes(data, pos)
    new, pos = _take_bytes(data, pos)
    topic, pos = _take_bytes(data, pos)
    (count,) = _INT.unpack_from(data, pos)
    pos += 4
    headers = []
    for _ in range(count):
        name, pos = _take_bytes(data, pos)
        value, pos = _take_bytes(data, pos)
        headers.append(((name or b"").decode(), value or b""))
    return time, BufferedChange(prior, old, new, timestamp, tuple(headers), None if topic is None else topic.decode(),
                                old == prior)


class SuppressionBufferBuilder(ConfigurableStoreBuilder):
    """Builds a task's `SuppressionBuffer`; logged (compacted changelog) unless switched off."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.logging_enabled = True
        self.caching_enabled = False
        self.logging_config = dict(DEFAULT_CHANGELOG_CONFIG)

    def build(self) -> SuppressionBuffer:
        return SuppressionBuffer(self.name, self.logging_enabled)
