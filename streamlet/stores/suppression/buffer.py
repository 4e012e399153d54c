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
emitted. The changelog value layout is streamlet's own (`_encode`), not Kafka Streams' v3 buffer
format, so a buffer changelog cannot be shared with a Java application.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.record import Headers
from streamlet.stores.api import ChangelogEntry, StateStore, StateStoreContext
from streamlet.stores.builders import DEFAULT_CHANGELOG_CONFIG, ConfigurableStoreBuilder

_LONGS = struct.Struct(">qq")
_INT = struct.Struct(">i")


@dataclass(slots=True)
class BufferedChange:
    """One buffered key: its serialized values and the context of the update that last wrote it."""

    prior: bytes | None
    old: bytes | None
    new: bytes | None
    timestamp: int
    headers: Headers
    topic: str | None  # where the update's record came from (counts in the size estimate)
    shared_prior: bool  # prior is the same bytes as old (counted once, as Java's reference check)

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
        self._dirty: set[bytes] = set()
        self._size = 0
        self._context: StateStoreContext | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    def init(self, context: StateStoreContext) -> None:
        self._context = context
        context.register(self, self._restore, logged=self.logging_enabled)

    def _restore(self, entries: list[ChangelogEntry]) -> None:
        for key, value, _timestamp in entries:
            self._remove(key)
            if value is not None:
                time, change = _decode(value)
                self._insert(key, time, change)
        self._dirty.clear()

    def flush(self) -> None:
        if not self.logging_enabled or not self._dirty:
            self._dirty.clear()
            return
        assert self._context is not None
        log, name = self._context.log_change, self.name
        for key in sorted(self._dirty):
            change = self._entries.get(key)
            if change is None:
                log(name, key, None, self._context.record_context().timestamp)
            else:
                log(name, key, _encode(self._times[key], change), change.timestamp)
        self._dirty.clear()

    def close(self) -> None:
        self._times.clear()
        self._entries.clear()
        self._order.clear()
        self._dirty.clear()
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
            headers: Headers, topic: str | None) -> None:
        """Buffer one update of `key` at `time` (its place stays the first one's if already buffered)."""
        buffered = self._entries.get(key)
        if buffered is None:
            self._insert(key, time, BufferedChange(old, old, new, timestamp, headers, topic, True))
        else:
            self._size -= _entry_size(key, buffered)
            change = BufferedChange(buffered.prior, old, new, timestamp, headers, topic, False)
            self._entries[key] = change
            self._size += _entry_size(key, change)
        self._dirty.add(key)

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
            self._dirty.add(key)
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
        out += _INT.pack(-1)
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
    """time, record timestamp, prior shared?, prior, old, new, topic, headers (count, then each name and value)."""
    out = bytearray(_LONGS.pack(time, change.timestamp))
    out += b"\x01" if change.shared_prior else b"\x00"
    for part in (change.prior, change.old, change.new, None if change.topic is None else change.topic.encode()):
        _put_bytes(out, part)
    out += _INT.pack(len(change.headers))
    for name, value in change.headers:
        _put_bytes(out, name.encode())
        _put_bytes(out, value)
    return bytes(out)


def _decode(data: bytes) -> tuple[int, BufferedChange]:
    time, timestamp = _LONGS.unpack_from(data, 0)
    shared = data[16] == 1
    pos = 17
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
                                shared)


class SuppressionBufferBuilder(ConfigurableStoreBuilder):
    """Builds a task's `SuppressionBuffer`; logged (compacted changelog) unless switched off."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.logging_enabled = True
        self.caching_enabled = False
        self.logging_config = dict(DEFAULT_CHANGELOG_CONFIG)

    def build(self) -> SuppressionBuffer:
        return SuppressionBuffer(self.name, self.logging_enabled)
