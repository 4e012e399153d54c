"""`CachingWindowBytesStore`: the record cache of window stores, as Kafka Streams' caching window store.

Why: with caching on, a windowed aggregation forwards what its cache flushes (at commit, or when it
must evict) rather than every update, and Kafka Streams' flush has rules a downstream node can see:
an entry that is None and was never written below (a reduce whose first value was null) is neither
written nor forwarded; the old value comes from the store below; entries go in the order of their
latest writes. The cache sits above the change-logging layer, so the changelog also gets only what
is flushed, each write under the record context of the update that made it.

Entries hold value bytes (the typed facade encodes on `put`); the listener installed by the facade
decodes them. Reads see the cache first; range reads merge cached entries with the store below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from streamlet.stores.api import StateStoreContext
from streamlet.stores.cache import SEGMENT_ID_BYTES, CacheEntry, NamedCache, entry_size
from streamlet.stores.window.api import WindowBytesStore, WindowEntry
from streamlet.stores.window.key_schema import to_store_key
from streamlet.stores.wrapping import _StoreLayer

WindowFlushListener = Callable[[bytes, int, bytes | None, bytes | None, int, tuple[tuple[str, bytes], ...]], None]
"""`listener(key bytes, window start, new value bytes, old value bytes, timestamp, headers)`."""


class CachingWindowBytesStore(_StoreLayer[WindowBytesStore], WindowBytesStore):
    """Holds writes until flush or eviction; `budget_bytes` is this store's share of the task's cache."""

    def __init__(self, inner: WindowBytesStore, context: StateStoreContext, budget_bytes: int) -> None:
        self.name = inner.name
        self.retention_ms = inner.retention_ms
        self.inner = inner
        self._context = context
        self._budget = budget_bytes
        self._cache = NamedCache()
        self._shared = context.shared_cache_budget(self.name)
        if self._shared is not None:
            self._shared.add(self._cache)
        self._listener: WindowFlushListener | None = None
        self._send_old_values = False
        self._observed = -1
        self._record_context = context.record_context_reader()

    def set_flush_listener(self, listener: WindowFlushListener, send_old_values: bool) -> None:
        self._listener = listener
        self._send_old_values = send_old_values

    # -- writes -------------------------------------------------------------------------------------
    def put(self, key: bytes, window_start: int, seqnum: int, value: bytes | None) -> None:
        store_key = to_store_key(key, window_start, seqnum)
        context = self._record_context()
        size = entry_size(SEGMENT_ID_BYTES + len(store_key), 0 if value is None else len(value), context)
        self._cache.put(store_key, CacheEntry((key, window_start, seqnum), value, True, context, size))
        if window_start > self._observed:
            self._observed = window_start
        if self._over_budget():
            self._evict()

    def _over_budget(self) -> bool:
        """This cache, or all caches sharing its budget, hold more than the budget."""
        shared = self._shared
        return self._cache.size_bytes > self._budget or (shared is not None and shared.size_bytes() > self._budget)

    def _evict(self) -> None:
        """Evict (flushing) from this cache until the budget holds or it is empty, as Kafka Streams does."""
        cache = self._cache
        while len(cache) and self._over_budget():
            store_key, entry = cache.pop_eldest()
            if entry.dirty:
                entry.dirty = False
                self._flush([(store_key, entry), *cache.take_dirty()])

    def flush(self) -> None:
        self._flush(self._cache.take_dirty())
        self.inner.flush()

    def _flush(self, entries: list[tuple[bytes, CacheEntry]]) -> None:
        if not entries:
            return
        inner, context, listener = self.inner, self._context, self._listener
        saved = context.record_context()
        try:
            for _store_key, entry in entries:
                key, start, seqnum = entry.key
                new = entry.value
                ctx = entry.context
                context.set_record_context(ctx)
                if listener is None:
                    inner.put(key, start, seqnum, new)
                    continue
                old = inner.get(key, start, seqnum) if new is None or self._send_old_values else None
                if new is None and old is None:
                    continue  # never written below and deleted again: nothing to store or tell
                inner.put(key, start, seqnum, new)
                listener(key, start, new, old if self._send_old_values else None, ctx.timestamp, ctx.headers)
        finally:
            context.set_record_context(saved)
        cache = self._cache
        for store_key, entry in entries:
            if entry.value is None and cache.peek(store_key) is entry:
                cache.remove(store_key)

    # -- reads --------------------------------------------------------------------------------------
    def get(self, key: bytes, window_start: int, seqnum: int) -> bytes | None:
        entry = self._cache.get(to_store_key(key, window_start, seqnum))
        if entry is not None:
            value: bytes | None = entry.value
            return value
        return self.inner.get(key, window_start, seqnum)

    def _cached(self, wanted: Callable[[bytes, int], bool]) -> dict[tuple[bytes, int, int], bytes | None]:
        return {entry.key: entry.value for _k, entry in self._cache.between(None, None) if wanted(*entry.key[:2])}

    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        cached = self._cached(lambda k, start: k == key and time_from <= start <= time_to)
        return self._merged(self.inner.fetch(key, time_from, time_to), cached, lambda e: (e[1], e[2]))

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        cached = self._cached(lambda _k, start: time_from <= start <= time_to)
        return self._merged(self.inner.fetch_all(time_from, time_to), cached, lambda e: (e[1], e[0], e[2]))

    def _in_time_order(self) -> list[tuple[bytes, CacheEntry]]:
        """The cached windows by start, then key bytes, then seqnum: a time-ordered cache iterator's order."""
        return sorted(self._cache.between(None, None), key=lambda kv: (kv[1].key[1], kv[1].key[0], kv[1].key[2]))

    def refresh_all(self) -> None:
        """Refresh every cached window, by start, then key, then seqnum: what Kafka Streams' iterator over a
        store's whole cache does (each entry it reads becomes the most recently used)."""
        cache = self._cache
        for store_key, _entry in self._in_time_order():
            cache.get(store_key)

    def refresh_time_ordered(self, time_from: int, time_to: int, segment_interval_ms: int) -> None:
        """Refresh the cached windows Kafka Streams' time-ordered caching store reads for `fetchAll(time_from,
        time_to)`, in its order (start, key, seqnum): the windows starting at `time_from` or later, segment by
        segment up to the segment of `time_to` (or of the latest start put, if earlier; the first segment
        always), until and including the first one past `time_to`, which its range filter reads before it
        stops. Each read makes that entry the most recently used, which decides what a later put evicts:
        windows before `time_from`, and past the first one beyond `time_to`, keep their places."""
        first_segment = time_from // segment_interval_ms
        last_segment = max(first_segment, min(time_to, self._observed) // segment_interval_ms)
        cache = self._cache
        for store_key, entry in self._in_time_order():
            start = entry.key[1]
            if start < time_from:
                continue
            if start // segment_interval_ms > last_segment:
                break
            cache.get(store_key)
            if start > time_to:
                break

    @staticmethod
    def _merged(below: Iterator[WindowEntry], cached: dict[tuple[bytes, int, int], bytes | None],
                order: Callable[[WindowEntry], tuple[object, ...]]) -> Iterator[WindowEntry]:
        """The store's entries with the cache's on top (a cached None hides one), in the store's order."""
        entries: dict[tuple[bytes, int, int], bytes | None] = {(k, s, n): v for k, s, n, v in below}
        entries.update(cached)
        found = [(k, start, seqnum, value) for (k, start, seqnum), value in entries.items() if value is not None]
        found.sort(key=order)
        return iter(found)

    @property
    def observed_stream_time(self) -> int:
        return max(self._observed, self.inner.observed_stream_time)

    # -- lifecycle ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Drop the cache without flushing (a clean close has flushed; a dirty one must not write)."""
        self._cache.clear()
        self.inner.close()
