"""`NamedCache`'s key index (built at the first scan, dropped when stale-heavy) and the write after a read."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.stores.cache import NO_CONTEXT, CacheEntry, NamedCache
from tests.stores.conftest import build_store
from tests.stores.context import RecordingStateStoreContext, record_context
from tests.stores.test_caching import entry_size, with_listener


def _entry(key: bytes, dirty: bool = True) -> CacheEntry:
    return CacheEntry(key, key, dirty, record_context(0) if dirty else NO_CONTEXT, 10)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "remove", "pop", "scan"]), st.binary(max_size=3)),
                max_size=400))
def test_scans_see_exactly_the_cached_keys_in_byte_order_after_any_changes(ops: list[tuple[str, bytes]]) -> None:
    cache = NamedCache()
    model: dict[bytes, None] = {}  # insertion order = LRU order for the operations used here
    for op, key in ops:
        if op == "put":
            cache.put(key, _entry(key))
            model.pop(key, None)
            model[key] = None
        elif op == "remove":
            cache.remove(key)
            model.pop(key, None)
        elif op == "pop" and model:
            popped, _ = cache.pop_eldest()
            assert popped == next(iter(model))
            del model[popped]
        elif op == "scan":
            low, high = sorted((key, key + b"\x80"))
            assert [k for k, _ in cache.between(low, high)] == sorted(k for k in model if low <= k <= high)
    assert [k for k, _ in cache.between(None, None)] == sorted(model)


def test_a_cache_that_is_never_scanned_keeps_no_index_of_the_keys_it_dropped() -> None:
    """An aggregation over millions of keys evicts nearly every key it caches; without scans, an index kept
    up to date would only pile up the keys added and dropped since the (never coming) next scan."""
    cache = NamedCache()
    rng = random.Random(1)
    for i in range(50_000):
        key = rng.randbytes(8)
        cache.put(key, _entry(key, dirty=False))
        if i >= 1000:
            cache.pop_eldest()
    assert len(cache) == 1000
    assert cache._index is None
    keys = [k for k, _ in cache.between(None, None)]
    assert keys == sorted(keys) and len(keys) == 1000
    # Scanned once, the index is kept up to date until the changes outgrow the keys, then dropped again.
    for _ in range(5000):
        key = rng.randbytes(8)
        cache.put(key, _entry(key, dirty=False))
        cache.pop_eldest()
    assert cache._index is None
    assert [k for k, _ in cache.between(None, None)] == sorted(k for k, _ in cache.between(None, None))


def test_a_write_after_a_read_that_loaded_the_key_flushes_the_written_value_under_its_context(
    backend: str, context: RecordingStateStoreContext
) -> None:
    """The clean entry a read loads from the store below is made dirty by the write that follows (an
    aggregation's read-modify-write): the flush forwards and logs the new value, with the old one from below."""
    context.cache_budget = 2 * entry_size(context, "k0")
    store = build_store(backend, context, cached=True)
    forwarded: list[Any] = with_listener(store, context)
    for i in range(3):  # k0 is evicted (flushed) by the third write
        context.at(i, offset=i)
        store.put(f"k{i}", i)
    store.flush()
    forwarded.clear()
    context.changelog.clear()
    assert store.get("k0") == 0  # loaded from below into the cache, clean
    context.at(50, offset=7)
    store.put("k0", 10)
    store.flush()
    assert [(k, new, old, ts, ctx.offset) for k, new, old, ts, ctx in forwarded] == [("k0", 10, 0, 50, 7)]
    assert [(c.key, c.timestamp) for c in context.changelog] == [(b"k0", 50)]
    store.flush()  # clean again: nothing more
    assert len(forwarded) == 1
    assert store.get("k0") == 10
