"""State-store and record-cache metrics (Kafka Streams records both only at DEBUG level).

At `metrics.recording.level=DEBUG` each key-value store of a new task gets its access layer wrapped
(`_TimedAccess`): every get, put, delete and put_all is timed and counted, and for a cached store
every get also says whether the cache held the key. That is per call, not per batch, which is why it
stays off at INFO, as in Kafka Streams. Window stores are not timed yet.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from streamlet.stores.keyvalue.caching import CachedAccess


@dataclass(slots=True)
class StoreCounters:
    """Cumulative calls and nanoseconds of one store's operations, and its cache's hits and misses."""

    puts: int = 0
    put_ns: int = 0
    put_max_ns: int = 0  # since the last sample
    gets: int = 0
    get_ns: int = 0
    cache_hits: int = 0
    cache_misses: int = 0

    def reset_extremes(self) -> None:
        """Start the next sample's maxima afresh."""
        self.put_max_ns = 0


class _TimedAccess:
    """Wraps a typed store's access layer (see `streamlet.stores.keyvalue.access`) and times its calls."""

    def __init__(self, inner: Any, counters: StoreCounters) -> None:
        self._inner = inner
        self._counters = counters
        self._cache = inner._cache if isinstance(inner, CachedAccess) else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get(self, key: bytes, key_obj: Any) -> Any:
        counters = self._counters
        if self._cache is not None:
            if self._cache.get(key) is not None:
                counters.cache_hits += 1
            else:
                counters.cache_misses += 1
        started = time.perf_counter_ns()
        value = self._inner.get(key, key_obj)
        counters.gets += 1
        counters.get_ns += time.perf_counter_ns() - started
        return value

    def _timed_write(self, count: int, started: int) -> None:
        elapsed = time.perf_counter_ns() - started
        counters = self._counters
        counters.puts += count
        counters.put_ns += elapsed
        if elapsed > counters.put_max_ns:
            counters.put_max_ns = elapsed

    def put(self, key: bytes, key_obj: Any, value: Any) -> None:
        started = time.perf_counter_ns()
        self._inner.put(key, key_obj, value)
        self._timed_write(1, started)

    def delete(self, key: bytes, key_obj: Any) -> Any:
        started = time.perf_counter_ns()
        old = self._inner.delete(key, key_obj)
        self._timed_write(1, started)
        return old

    def put_all(self, entries: list[tuple[bytes, Any, Any]]) -> None:
        started = time.perf_counter_ns()
        self._inner.put_all(entries)
        self._timed_write(len(entries), started)


def instrument_task(task: Any) -> dict[str, tuple[str, StoreCounters]]:
    """Wrap the access layer of every open key-value store of `task`; returns store name ->
    (store type as Kafka Streams tags it, counters)."""
    found: dict[str, tuple[str, StoreCounters]] = {}
    for name, store in task.stores.items():
        access = getattr(store, "_access", None)
        if access is None or isinstance(access, _TimedAccess) or not getattr(store, "is_open", False):
            continue
        counters = StoreCounters()
        store._access = _TimedAccess(access, counters)
        found[name] = ("rocksdb" if store.persistent else "in-memory", counters)
    return found


def task_cache_bytes(task: Any) -> int:
    """The bytes held by the record caches of `task`'s key-value stores (Kafka Streams' task-level
    cache-size-bytes-total): the caches' own running sizes, key and value bytes plus the per-entry overhead
    they count against `statestore.cache.max.bytes` (see `streamlet.stores.cache`)."""
    total = 0
    for store in task.stores.values():
        access = getattr(store, "_access", None)
        if isinstance(access, _TimedAccess):
            access = access._inner
        if isinstance(access, CachedAccess):
            total += access._cache.size_bytes
    return total
