"""`NamedCache`: one store's cache as a data structure (no I/O), shaped like Kafka Streams' NamedCache.

- LRU order over all entries (reads and writes refresh an entry); eviction takes the eldest.
- Dirty order: the keys written since the last flush, in the order of their latest write, which is
  the order a flush forwards them in (so downstream sees updates in arrival order).
- A byte-ordered key index, so a range scan can merge cached entries with the store below. It is built
  at the first scan and kept from then on, so a store that is never scanned (a count, an aggregation)
  pays nothing per key for it; an index that went stale-heavy (many more changes than keys since the
  last scan) is dropped and built again at the next scan.
- A running size in bytes, compared by the caching layer with the store's budget.

Entries keep the *objects* (key and value), not their bytes: a cache hit needs no deserialization,
and a value overwritten before the next flush is never serialized at all.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

from streamlet.stores.api import RecordContext
from streamlet.stores.sorted_keys import SortedKeyIndex

_ENTRY_FIXED_BYTES: Final = 3 * 8 + 1 + 8 + 8 + 4
"""What Kafka Streams adds to every cache entry's estimate besides key, value, topic and headers: the LRU
node's three references, the dirty flag, and the record context's timestamp, offset and partition."""

PYTHON_ENTRY_BYTES = 400
"""What an entry costs in Python beyond Kafka Streams' estimate (which counts bytes: key, value, record context),
measured with tracemalloc on full caches (tests/stores/test_cache_memory.py): the `CacheEntry` object, its
slots in the LRU `OrderedDict` and in the dirty order, the key's bytes object, the value object's header (an
int, a str) and the record context's object. The deserialized key is counted besides, as its bytes again.
Without them a cache of small entries held about 7 times its `statestore.cache.max.bytes`."""

SEGMENT_ID_BYTES = 8
"""Kafka Streams' window and session caches key each entry by its segment id, then the store key."""


def entry_size(cache_key_size: int, value_size: int, context: RecordContext) -> int:
    """Kafka Streams' estimate of a cache entry's bytes (its `NamedCache` node over an `LRUCacheEntry`).
    The record context counts its topic name's characters and its headers' keys and values; a clean entry
    read from the store below has no topic and no headers. A running instance's caches add what the
    entry's Python objects cost beyond it (`PYTHON_ENTRY_BYTES` and the deserialized key, see
    `CachedAccess`); the TopologyTestDriver's count this estimate only, so that a small cache there evicts
    the same entries at the same writes as Kafka Streams' driver."""
    topic = context.topic
    size = cache_key_size + value_size + _ENTRY_FIXED_BYTES + (0 if topic is None else len(topic))
    headers: tuple[tuple[str, bytes | None], ...] = context.headers  # a header's value may be null
    if headers:
        size += sum(len(k) + (0 if v is None else len(v)) for k, v in headers)
    return size

NO_CONTEXT: Final = RecordContext(-1, (), None, -1, -1)
"""The context of clean entries: they are never forwarded, so they need none."""


class CacheEntry:
    """`value` None is a cached delete (dirty) that hides the store's entry until it is flushed.

    `context` is the record context of the write (`NO_CONTEXT` for a clean entry read from below).
    """

    __slots__ = ("context", "dirty", "key", "size", "value")

    def __init__(self, key: Any, value: Any, dirty: bool, context: RecordContext, size: int) -> None:
        self.key = key
        self.value = value
        self.dirty = dirty
        self.context = context
        self.size = size


class NamedCache:
    __slots__ = ("_dirty", "_entries", "_index", "_index_changes", "size_bytes")

    def __init__(self) -> None:
        self._entries: OrderedDict[bytes, CacheEntry] = OrderedDict()
        self._dirty: dict[bytes, None] = {}
        self._index: SortedKeyIndex | None = None  # built by the first scan (`between`)
        self._index_changes = 0  # additions and removals told to the index since the last scan
        self.size_bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> CacheEntry | None:
        """The entry, refreshed in LRU order; None on a miss."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: bytes, entry: CacheEntry) -> None:
        entries = self._entries
        old = entries.get(key)
        if old is not None and old.dirty and not entry.dirty:
            raise AssertionError("a clean entry must not replace a dirty one before it is flushed")
        if old is None:
            index = self._index
            if index is not None:
                self._index_add(index, key)
        else:
            self.size_bytes -= old.size
            entries.move_to_end(key)
        entries[key] = entry
        self.size_bytes += entry.size
        if entry.dirty:
            dirty = self._dirty
            if old is not None:  # a key not cached is not dirty either (the dirty keys are cached ones)
                dirty.pop(key, None)  # re-insert: a flush follows the order of the latest writes
            dirty[key] = None

    def rewrite(self, key: bytes, entry: CacheEntry, value: Any, context: RecordContext, size: int) -> None:
        """Overwrite a cached entry in place, dirty from now on: the same effect as `put` of a new dirty
        entry, without building one. For a dirty entry (the hot case of an aggregation: the same key again
        before the next flush) and for a clean one a read loaded (an aggregation's read before its write);
        not for an entry a flush is forwarding (the flush holds it)."""
        self._entries.move_to_end(key)
        self.size_bytes += size - entry.size
        entry.value = value
        entry.context = context
        entry.size = size
        entry.dirty = True
        dirty = self._dirty
        dirty.pop(key, None)
        dirty[key] = None

    def peek(self, key: bytes) -> CacheEntry | None:
        """The entry without refreshing it in LRU order."""
        return self._entries.get(key)

    def remove(self, key: bytes) -> CacheEntry | None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            index = self._index
            if index is not None:
                self._index_discard(index, key)
            self._dirty.pop(key, None)
            self.size_bytes -= entry.size
        return entry

    def eldest(self) -> tuple[bytes, CacheEntry]:
        """The least recently used entry, left in place."""
        key = next(iter(self._entries))
        return key, self._entries[key]

    def pop_eldest(self) -> tuple[bytes, CacheEntry]:
        """Remove and return the least recently used entry (the caller flushes it if dirty)."""
        key, entry = self._entries.popitem(last=False)
        index = self._index
        if index is not None:
            self._index_discard(index, key)
        self._dirty.pop(key, None)
        self.size_bytes -= entry.size
        return key, entry

    def take_dirty(self) -> list[tuple[bytes, CacheEntry]]:
        """The dirty entries in flush order, now marked clean (they stay cached)."""
        entries = self._entries
        taken = []
        for key in self._dirty:
            entry = entries[key]
            entry.dirty = False
            taken.append((key, entry))
        self._dirty = {}
        return taken

    def between(self, from_key: bytes | None, to_key: bytes | None) -> list[tuple[bytes, CacheEntry]]:
        """A snapshot of the cached entries in [from_key, to_key], in byte order of keys."""
        entries = self._entries
        index = self._index
        if index is None:
            index = self._index = SortedKeyIndex()
            for key in entries:
                index.add(key)
        self._index_changes = 0
        return [(key, entries[key]) for key in index.between(from_key, to_key)]

    def _index_add(self, index: SortedKeyIndex, key: bytes) -> None:
        if self._keeps_index():
            index.add(key)

    def _index_discard(self, index: SortedKeyIndex, key: bytes) -> None:
        if self._keeps_index():
            index.discard(key)

    def _keeps_index(self) -> bool:
        """Counts one more change for the index; False once it went stale-heavy and was dropped: building it
        again at the next scan is then cheaper than keeping up with the changes."""
        self._index_changes += 1
        if self._index_changes > 2 * len(self._entries) + 1024:
            self._index = None
            return False
        return True

    def clear(self) -> None:
        self._entries.clear()
        self._dirty = {}
        self._index = None
        self._index_changes = 0
        self.size_bytes = 0


class SharedCacheBudget:
    """One cache size shared by several stores' caches, as Kafka Streams' thread cache is by its stores.

    A store whose write takes the caches together past `max_bytes` evicts from its own cache (what Kafka
    Streams does), so one busy store may use the whole budget while the others are empty. Stores that
    have a budget of their own (the runtime's per-store share) get no `SharedCacheBudget`.
    """

    __slots__ = ("caches", "max_bytes")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.caches: list[NamedCache] = []

    def add(self, cache: NamedCache) -> None:
        self.caches.append(cache)

    def size_bytes(self) -> int:
        return sum(cache.size_bytes for cache in self.caches)
