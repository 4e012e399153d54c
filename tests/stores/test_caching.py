"""The caching layer: dedup until flush, flush listener, eviction, and reads that see the cache."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet.config import CACHE_ENTRY_OVERHEAD_BYTES
from streamlet.errors import SerializationError
from streamlet.serdes import Serdes
from streamlet.stores.api import RecordContext
from streamlet.stores.cache import PYTHON_ENTRY_BYTES
from streamlet.stores.cache import entry_size as cache_entry_size
from streamlet.stores.keyvalue.typed import TypedKeyValueStore
from tests.stores.conftest import build_store
from tests.stores.context import RecordingStateStoreContext, record_context

Forwarded = tuple[Any, Any, Any, int, RecordContext]


def with_listener(store: TypedKeyValueStore, context: RecordingStateStoreContext,
                  send_old_values: bool = True) -> list[Forwarded]:
    """Install a listener that also records the record context current when it is called."""
    forwarded: list[Forwarded] = []

    def listener(key: Any, new: Any, old: Any, timestamp: int, headers: Any) -> None:
        current = context.record_context()
        assert headers == current.headers  # the headers of the record that made the update
        forwarded.append((key, new, old, timestamp, current))

    assert store.set_flush_listener(listener, send_old_values) is True
    return forwarded


@pytest.fixture
def big_cache(context: RecordingStateStoreContext) -> RecordingStateStoreContext:
    context.cache_budget = 1 << 20
    return context


def test_set_flush_listener_is_true_only_when_the_cache_is_on(backend: str, tmp_path: Any) -> None:
    for budget, caching, expected in [(1000, True, True), (0, True, False), (1000, False, False)]:
        context = RecordingStateStoreContext(tmp_path / f"{budget}-{caching}", cache_budget=budget)
        store = build_store(backend, context, cached=caching)
        assert store.set_flush_listener(lambda *a: None, False) is expected


def test_flush_forwards_new_and_old_values_with_the_entrys_record_context(
    backend: str, big_cache: RecordingStateStoreContext
) -> None:
    context = big_cache
    store = build_store(backend, context, cached=True)
    forwarded = with_listener(store, context)
    context.at(10, offset=1)
    store.put("a", 1)
    store.put("b", 1)
    store.flush()
    context.at(20, offset=2)
    store.put("a", 2)
    context.at(25, offset=3)
    store.put("a", 3)
    context.at(30, offset=4)
    store.delete("b")
    store.delete("never")  # absent below and in the cache: neither logged nor forwarded
    context.at(99, offset=9)
    store.flush()
    assert [(k, new, old, ts, ctx.offset) for k, new, old, ts, ctx in forwarded] == [
        ("a", 1, None, 10, 1),
        ("b", 1, None, 10, 1),
        ("a", 3, 1, 25, 3),
        ("b", None, 1, 30, 4),
    ]
    assert forwarded[2][4] == record_context(25, offset=3)
    assert context.current == record_context(99, offset=9)  # restored after the flush
    assert [(c.key, c.timestamp) for c in context.changelog] == [(b"a", 10), (b"b", 10), (b"a", 25), (b"b", 30)]


def test_old_values_are_none_unless_requested(backend: str, big_cache: RecordingStateStoreContext) -> None:
    store = build_store(backend, big_cache, cached=True)
    forwarded = with_listener(store, big_cache, send_old_values=False)
    store.put("a", 1)
    store.flush()
    store.put("a", 2)
    store.delete("a")
    store.flush()
    assert [(k, new, old) for k, new, old, _, _ in forwarded] == [("a", 1, None), ("a", None, None)]


def test_flush_order_follows_the_latest_writes(backend: str, big_cache: RecordingStateStoreContext) -> None:
    store = build_store(backend, big_cache, cached=True)
    forwarded = with_listener(store, big_cache)
    for key in ["a", "b", "c", "a", "d", "b"]:
        store.put(key, 1)
    store.get("c")  # a read refreshes LRU order, not the flush order
    store.flush()
    assert [f[0] for f in forwarded] == ["c", "a", "d", "b"]


def entry_size(context: RecordingStateStoreContext, key: str, value_bytes: int = 8) -> int:
    """A cache entry's size as a running instance counts it, written under the context's current record:
    Kafka Streams' estimate, plus its Python objects (a fixed part and the key again)."""
    return cache_entry_size(len(key.encode()), value_bytes, context.record_context()) + PYTHON_ENTRY_BYTES + len(
        key.encode())


def test_the_driver_counts_cache_entries_as_kafka_streams_does(tmp_path: Any) -> None:
    """With the TopologyTestDriver's setting (no Python overhead), three entries of Kafka Streams' estimate
    fill a budget of exactly three; a running instance's count makes the same budget hold fewer."""
    for overhead, held in [(0, 3), (None, 0)]:
        config: dict[str, object] = {} if overhead is None else {CACHE_ENTRY_OVERHEAD_BYTES: overhead}
        context = RecordingStateStoreContext(tmp_path / str(overhead), config=config)
        context.cache_budget = 3 * cache_entry_size(2, 8, context.record_context())
        store = build_store("memory", context, cached=True)
        forwarded = with_listener(store, context)
        for i in range(3):
            store.put(f"k{i}", i)
        assert len(forwarded) == 3 - held


def test_eviction_flushes_the_lru_entry_then_every_dirty_entry(
    backend: str, context: RecordingStateStoreContext
) -> None:
    context.cache_budget = 3 * entry_size(context, "k0")
    store = build_store(backend, context, cached=True)
    forwarded = with_listener(store, context)
    for i in range(3):
        context.at(i)
        store.put(f"k{i}", i)
    assert forwarded == [] and context.changelog == []
    store.get("k0")  # now k1 is the least recently used
    context.at(3)
    store.put("k3", 3)  # over budget: evict k1, which is dirty -> flush it first, then the rest
    assert [(k, new, ts) for k, new, _, ts, _ in forwarded] == [("k1", 1, 1), ("k0", 0, 0), ("k2", 2, 2),
                                                                ("k3", 3, 3)]
    assert [c.key for c in context.changelog] == [b"k1", b"k0", b"k2", b"k3"]
    # Everything is readable, from the cache or from the store below.
    assert [store.get(f"k{i}") for i in range(4)] == [0, 1, 2, 3]


def test_evicting_clean_entries_forwards_nothing(backend: str, context: RecordingStateStoreContext) -> None:
    context.cache_budget = 2 * entry_size(context, "k0")
    store = build_store(backend, context, cached=True)
    forwarded = with_listener(store, context)
    for i in range(5):
        store.put(f"k{i}", i)
        store.flush()
    count = len(forwarded)
    for i in range(5):
        assert store.get(f"k{i}") == i  # reads load clean entries and evict others
    assert len(forwarded) == count == 5


def test_reads_see_cached_writes_and_deletes(backend: str, big_cache: RecordingStateStoreContext) -> None:
    store = build_store(backend, big_cache, key_serde=Serdes.Integer, value_serde=Serdes.String, cached=True)
    for i in range(10):
        store.put(i, f"below{i}")
    store.flush()
    store.put(3, "cached3")
    store.delete(4)
    store.put(20, "new20")
    store.put(-1, "negative")  # sorts last by bytes
    store.delete(99)
    assert store.get(3) == "cached3" and store.get(4) is None
    with store.all() as it:
        assert [(kv.key, kv.value) for kv in it] == (
            [(i, f"below{i}") for i in range(3)] + [(3, "cached3")]
            + [(i, f"below{i}") for i in range(5, 10)] + [(20, "new20"), (-1, "negative")]
        )
    with store.range(2, 6) as it:
        assert [kv.key for kv in it] == [2, 3, 5, 6]
    assert store.approximate_num_entries() == 11


def test_gets_of_cached_keys_do_not_deserialize(backend: str, big_cache: RecordingStateStoreContext) -> None:
    calls: list[bytes] = []
    json = Serdes.Json()
    inner = json.deserializer.deserialize

    def counting(topic: str | None, data: bytes | None) -> Any:
        calls.append(data or b"")
        return inner(topic, data)

    json.deserializer.deserialize = counting  # type: ignore[method-assign]
    store = build_store(backend, big_cache, value_serde=json, cached=True)
    store.put("a", {"n": 1})
    assert store.get("a") == {"n": 1} and calls == []
    store.flush()
    assert store.get("a") == {"n": 1} and calls == []


def test_a_read_miss_is_cached_without_becoming_dirty(context: RecordingStateStoreContext) -> None:
    store = build_store("leveldb", context, logging=True)
    store.put("a", 1)
    store.close()
    context.cache_budget = 1 << 20
    cached = build_store("leveldb", context, cached=True)
    forwarded = with_listener(cached, context)
    logged = len(context.changelog)
    assert cached.get("a") == 1
    cached.flush()
    assert forwarded == [] and len(context.changelog) == logged


def test_reads_never_flush_even_when_the_cache_is_full(context: RecordingStateStoreContext) -> None:
    """Interactive queries read the store: loading an entry must not evict (and forward) dirty ones."""
    store = build_store("leveldb", context, logging=False)
    for i in range(5):
        store.put(f"k{i}", i)
    store.close()
    context.cache_budget = 2 * entry_size(context, "k0")
    cached = build_store("leveldb", context, cached=True, logging=False)
    forwarded = with_listener(cached, context)
    cached.put("k0", 10)
    cached.put("k1", 11)  # the cache is full of dirty entries
    assert [cached.get(f"k{i}") for i in range(5)] == [10, 11, 2, 3, 4]
    assert forwarded == []
    cached.flush()
    assert [(k, new, old) for k, new, old, _, _ in forwarded] == [("k0", 10, 0), ("k1", 11, 1)]
    assert [cached.get(f"k{i}") for i in range(5)] == [10, 11, 2, 3, 4]  # clean now: loads may evict
    assert len(forwarded) == 2


def test_unserializable_value_fails_at_flush_naming_store_and_key(
    backend: str, big_cache: RecordingStateStoreContext
) -> None:
    store = build_store(backend, big_cache, cached=True)
    store.put("a", 1)
    store.put("bad", "not a long")
    with pytest.raises(SerializationError, match="state store 'store'.*key 'bad'"):
        store.flush()
