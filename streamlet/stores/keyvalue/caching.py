"""`CachedAccess`: the caching layer between the typed facade and the (change-logged) bytes store.

Why a cache: an aggregation updates the same keys over and over; the cache keeps the latest value
per key until the next commit (or until it must evict), so the changelog and the downstream nodes
get one update per key per commit instead of one per record, and hot keys are read without
touching the store or deserializing.

On flush or eviction each dirty entry is written below (in one write batch, logged under the
entry's own record context) and then, if a flush listener is installed, forwarded as
`listener(key, new_value, old_value, timestamp, headers)` with the entry's record context set, so the
downstream nodes see the record that made the update. Behaviour follows Kafka Streams' caching
store: flushes go in the order of the latest writes; evicting a dirty entry flushes it and then
every other dirty entry; a delete of a key absent below is neither logged nor forwarded when a
listener is installed; the old value is read from the store below only when needed.

Each entry's size is Kafka Streams' own estimate (`cache.entry_size`: key, value bytes, record context)
plus what its Python objects cost beyond it (`cache.PYTHON_ENTRY_BYTES`, and the deserialized key as its
bytes again), so a full cache holds about its budget of memory. The TopologyTestDriver counts Kafka
Streams' estimate only (`CACHE_ENTRY_OVERHEAD_BYTES` = 0), so a small cache there evicts the same entries
at the same writes as Kafka Streams' driver. A value's byte size
comes from its serde's fixed width where it has one (counts, sums), else from serializing it at the
write. The bytes written below are serialized at flush; a value that cannot be serialized therefore
fails at the flush (the commit), with the store and key named; a `RetriableError` (the serde cannot reach the
schema registry) is raised as it is, for the runtime to wait it out (see `TaskManager.corrupted_tasks`).
Values handed to `put` and returned by `get` are the cached objects themselves: treat them as
immutable, since mutating one in place changes what the store holds without a `put`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from streamlet.config import CACHE_ENTRY_OVERHEAD_BYTES
from streamlet.errors import RetriableError, SerializationError
from streamlet.record import KeyValue
from streamlet.serdes import Deserializer
from streamlet.stores.api import BytesIterator, FlushListener, KeyValueIterator, StateStoreContext
from streamlet.stores.cache import NO_CONTEXT, PYTHON_ENTRY_BYTES, CacheEntry, NamedCache, entry_size
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.value_formats import ValueFormat


class CachedAccess:
    def __init__(self, store: KeyValueBytesStore, key_deserializer: Deserializer[Any], topic: str | None,
                 value_format: ValueFormat, context: StateStoreContext, budget_bytes: int,
                 cache_key_prefix_size: int = 0) -> None:
        self._store = store
        self._deserialize_key = key_deserializer.deserialize
        self._topic = topic
        self._format = value_format
        self._context = context
        self._budget = budget_bytes
        self._cache = NamedCache()
        self._shared = context.shared_cache_budget(store.name)
        if self._shared is not None:
            self._shared.add(self._cache)
        self._listener: FlushListener | None = None
        self._send_old_values = False
        self._key_prefix_size = cache_key_prefix_size  # Kafka Streams' cache key: this, then the store key
        # What each entry's Python objects cost beyond Kafka Streams' estimate: a fixed part, and the key again.
        overhead = int(context.app_config.get(CACHE_ENTRY_OVERHEAD_BYTES, PYTHON_ENTRY_BYTES))
        self._python_fixed = overhead + cache_key_prefix_size if overhead else 0
        self._python_keys = 1 if overhead else 0
        self._fixed_value_size = value_format.fixed_size
        self._record_context = context.record_context_reader()
        self._set_record_context = context.record_context_writer()

    # -- reads --------------------------------------------------------------------------------------
    def get(self, key: bytes, key_obj: Any) -> Any:
        entry = self._cache.get(key)
        if entry is not None:
            return entry.value
        data = self._store.get(key)
        if data is None:
            return None
        value = self._format.decode(data)
        size = (entry_size(self._key_prefix_size + len(key), len(data), NO_CONTEXT) + self._python_fixed
                + self._python_keys * len(key))
        self._cache.put(key, CacheEntry(key_obj, value, False, NO_CONTEXT, size))
        self._make_room_without_flushing(key)
        return value

    def _make_room_without_flushing(self, loaded_key: bytes) -> None:
        """After a read loaded a clean entry: evict clean entries only, and if a dirty one is next in
        line, drop the loaded entry instead. A read must never flush, since flushing forwards records:
        an interactive query reading the store must not push anything downstream."""
        cache = self._cache
        while len(cache) and self._over_budget():
            key, entry = cache.eldest()
            if entry.dirty:
                cache.remove(loaded_key)
                return
            cache.remove(key)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[Any, Any]:
        cached = self._cache.between(from_key, to_key)
        below = self._store.range(from_key, to_key)
        return StoreKeyValueIterator(self._merge(cached, below), below.close)

    def _merge(self, cached: list[tuple[bytes, CacheEntry]], below: BytesIterator) -> Iterator[KeyValue]:
        """Merge two byte-ordered streams; on equal keys the cache wins, and cached deletes hide."""
        deserialize_key, topic, decode = self._deserialize_key, self._topic, self._format.decode
        try:
            nxt = next(below, None)
            for key, entry in cached:
                while nxt is not None and nxt[0] < key:
                    yield KeyValue(deserialize_key(topic, nxt[0]), decode(nxt[1]))
                    nxt = next(below, None)
                if nxt is not None and nxt[0] == key:
                    nxt = next(below, None)
                if entry.value is not None:
                    yield KeyValue(entry.key, entry.value)
            while nxt is not None:
                yield KeyValue(deserialize_key(topic, nxt[0]), decode(nxt[1]))
                nxt = next(below, None)
        finally:
            below.close()

    def range_list(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, Any, Any]]:
        """`range` read at once, merged as `_merge` does, without its generator (a session lookup per record)."""
        cached = self._cache.between(from_key, to_key)
        below = self._store.range_list(from_key, to_key)
        if not below:  # the usual case of a session lookup: what the key has is cached
            return [(key, entry.key, entry.value) for key, entry in cached if entry.value is not None]
        deserialize_key, topic, decode = self._deserialize_key, self._topic, self._format.decode
        merged: list[tuple[bytes, Any, Any]] = []
        i, n = 0, len(below)
        for key, entry in cached:
            while i < n and below[i][0] < key:
                data_key, data = below[i]
                merged.append((data_key, deserialize_key(topic, data_key), decode(data)))
                i += 1
            if i < n and below[i][0] == key:
                i += 1
            if entry.value is not None:
                merged.append((key, entry.key, entry.value))
        for data_key, data in below[i:]:
            merged.append((data_key, deserialize_key(topic, data_key), decode(data)))
        return merged

    def approximate_num_entries(self) -> int:
        """The store's count corrected by the dirty entries (clean ones mirror the store)."""
        count = self._store.approximate_num_entries()
        get = self._store.get
        for key, entry in self._cache.between(None, None):
            if entry.dirty:
                below = get(key) is not None
                if entry.value is None and below:
                    count -= 1
                elif entry.value is not None and not below:
                    count += 1
        return count

    # -- writes -------------------------------------------------------------------------------------
    def put(self, key: bytes, key_obj: Any, value: Any) -> None:
        fixed = self._fixed_value_size
        value_size = 0 if value is None else fixed if fixed is not None else self._value_size(value)
        context = self._record_context()
        size = (entry_size(self._key_prefix_size + len(key), value_size, context) + self._python_fixed
                + self._python_keys * len(key))
        cache = self._cache
        entry = cache.peek(key)
        if entry is not None and (entry.dirty or entry.context is NO_CONTEXT):
            # A dirty entry, or a clean one a read loaded (an aggregation reads, then writes, each key; a
            # flush's entries carry their writes' contexts and are never reused while it forwards them).
            cache.rewrite(key, entry, value, context, size)
        else:
            cache.put(key, CacheEntry(key_obj, value, True, context, size))
        if cache.size_bytes > self._budget or self._shared is not None:
            self._maybe_evict()

    def delete(self, key: bytes, key_obj: Any) -> Any:
        entry = self._cache.get(key)
        if entry is not None:
            old = entry.value
        else:
            data = self._store.get(key)
            old = None if data is None else self._format.decode(data)
        self.put(key, key_obj, None)
        return old

    def put_all(self, entries: list[tuple[bytes, Any, Any]]) -> None:
        for key, key_obj, value in entries:
            self.put(key, key_obj, value)

    def _value_size(self, value: Any) -> int:
        """The value's local bytes' length, serialized to learn it; 0 when it cannot be serialized (the flush
        then raises the serde's error, with the store and key named)."""
        try:
            data = self._format.encode(value)
        except Exception:
            return 0
        return 0 if data is None else len(data)

    # -- flushing -----------------------------------------------------------------------------------
    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        self._listener = listener
        self._send_old_values = send_old_values
        return True

    def flush(self) -> None:
        self._flush(None)
        self._store.flush()

    def _over_budget(self) -> bool:
        """This cache, or all caches sharing its budget, hold more than the budget."""
        shared = self._shared
        return self._cache.size_bytes > self._budget or (shared is not None and shared.size_bytes() > self._budget)

    def _maybe_evict(self) -> None:
        """Evict (flushing) from this cache until the budget holds or it is empty, as Kafka Streams does."""
        cache = self._cache
        while len(cache) and self._over_budget():
            key, entry = cache.pop_eldest()
            if entry.dirty:
                self._flush((key, entry))

    def _flush(self, evicted: tuple[bytes, CacheEntry] | None) -> None:
        cache = self._cache
        entries = cache.take_dirty()
        if evicted is not None:
            evicted[1].dirty = False
            entries.insert(0, evicted)
        if not entries:
            return
        store, encode = self._store, self._format.encode
        set_context = self._set_record_context
        listener, send_old_values = self._listener, self._send_old_values
        to_forward: list[tuple[CacheEntry, bytes | None]] = []
        saved_context = self._record_context()
        try:
            with store.batch() as batch:
                put = batch.put
                for key, entry in entries:
                    value = entry.value
                    try:
                        data = None if value is None else encode(value)
                    except RetriableError as exc:  # a service the serde needs is away: no value's fault
                        exc.add_note(f"while state store {store.name!r} flushed its cache")
                        raise
                    except Exception as exc:
                        raise SerializationError(
                            f"state store {store.name!r}: cannot serialize the value of key {entry.key!r} "
                            f"(values are serialized when the cache flushes): {exc}"
                        ) from exc
                    if listener is not None:
                        old = store.get(key) if data is None or send_old_values else None
                        if data is None and old is None:
                            continue  # deleting what was never written below: nothing to tell anyone
                        to_forward.append((entry, old if send_old_values else None))
                    set_context(entry.context)
                    put(key, data)
            if listener is not None:
                decode = self._format.decode
                for entry, old in to_forward:
                    ctx = entry.context
                    set_context(ctx)
                    listener(entry.key, entry.value, None if old is None else decode(old), ctx[0], ctx[1])
        finally:
            set_context(saved_context)
        for key, entry in entries:
            if entry.value is None and cache.peek(key) is entry:
                cache.remove(key)  # a flushed delete has nothing left to hide

    # -- lifecycle ----------------------------------------------------------------------------------
    def forget(self, keys: Iterable[bytes]) -> None:
        if not len(self._cache):
            return  # a restore before any processing: nothing is cached, no need to walk the keys
        remove = self._cache.remove
        for key in keys:
            remove(key)

    def close(self) -> None:
        """Drop the cache without flushing: a clean close flushes first (the runtime does), a dirty
        close must not forward or log anything."""
        self._cache.clear()
        self._store.close()
