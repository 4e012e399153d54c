"""Change-logging and restoration: what reaches the changelog, and how a store is rebuilt from it."""

from __future__ import annotations

import struct

from streamlet.serdes import Serdes
from tests.stores.conftest import build_store
from tests.stores.context import RecordingStateStoreContext


def long_bytes(n: int) -> bytes:
    return struct.pack(">q", n)


def test_without_cache_every_update_is_logged_with_its_record_timestamp(
    backend: str, context: RecordingStateStoreContext
) -> None:
    store = build_store(backend, context, cached=True)  # caching on, but a budget of 0 turns it off
    assert not store.set_flush_listener(lambda *a: None, True)
    context.at(100)  # the record being processed now has timestamp 100
    store.put("a", 1)
    context.at(200)
    store.put("a", 2)
    store.put_all([("b", 3), ("c", 4)])
    context.at(300)
    store.delete("b")
    store.put("c", None)
    assert [(c.store, c.key, c.value, c.timestamp) for c in context.changelog] == [
        ("store", b"a", long_bytes(1), 100),
        ("store", b"a", long_bytes(2), 200),
        ("store", b"b", long_bytes(3), 200),
        ("store", b"c", long_bytes(4), 200),
        ("store", b"b", None, 300),
        ("store", b"c", None, 300),
    ]


def test_with_cache_only_the_last_update_per_key_is_logged_at_flush(
    backend: str, context: RecordingStateStoreContext
) -> None:
    context.cache_budget = 1 << 20
    store = build_store(backend, context, cached=True)
    context.at(10, offset=1)
    store.put("a", 1)
    context.at(20, offset=2)
    store.put("b", 1)
    context.at(30, offset=3)
    store.put("a", 2)
    store.put("gone", 5)
    store.delete("gone")
    assert context.changelog == []
    store.flush()
    # In the order of each key's latest write, each logged under the record context of that write.
    assert [(c.key, c.value, c.timestamp, c.context.offset) for c in context.changelog] == [
        (b"b", long_bytes(1), 20, 2),
        (b"a", long_bytes(2), 30, 3),
        (b"gone", None, 30, 3),  # no flush listener: the delete is written through, as Kafka Streams does
    ]
    assert context.current.offset == 3  # the processing context is restored after the flush
    store.flush()
    assert len(context.changelog) == 3  # nothing dirty: nothing logged again


def test_logging_disabled_logs_nothing(backend: str, context: RecordingStateStoreContext) -> None:
    store = build_store(backend, context, logging=False)
    store.put("a", 1)
    store.delete("a")
    assert context.changelog == []
    assert context.registrations["store"].logged is False


def test_restore_applies_batches_including_deletes_without_logging(
    backend: str, context: RecordingStateStoreContext
) -> None:
    context.cache_budget = 1 << 20
    store = build_store(backend, context, cached=True)
    forwarded: list[object] = []
    store.set_flush_listener(lambda *args: forwarded.append(args), True)
    entries = [
        (b"a", long_bytes(1), 5), (b"b", long_bytes(2), 6), (b"a", long_bytes(3), 7),
        (b"c", long_bytes(4), 8), (b"b", None, 9), (b"d", long_bytes(5), 10), (b"c", None, 11),
    ]
    context.restore("store", entries, batch_size=2)
    assert context.changelog == [] and forwarded == []
    with store.all() as it:
        assert [(kv.key, kv.value) for kv in it] == [("a", 3), ("d", 5)]
    store.flush()
    assert context.changelog == [] and forwarded == []


def test_restore_replaces_what_the_cache_held(backend: str, context: RecordingStateStoreContext) -> None:
    context.cache_budget = 1 << 20
    store = build_store(backend, context, cached=True)
    store.put("a", 1)
    store.flush()
    assert store.get("a") == 1  # now cached (clean)
    context.restore("store", [(b"a", long_bytes(9), 1)])
    assert store.get("a") == 9


def test_replaying_the_changelog_into_a_fresh_store_reproduces_it(
    backend: str, context: RecordingStateStoreContext
) -> None:
    store = build_store(backend, context, key_serde=Serdes.Integer, value_serde=Serdes.String)
    for i in range(50):
        context.at(i)
        store.put(i % 7 - 3, f"v{i}")
        if i % 5 == 0:
            store.delete(i % 4)
    with store.all() as it:
        expected = list(it)
    fresh_context = RecordingStateStoreContext(context.state_dir.parent / "fresh")
    fresh = build_store(backend, fresh_context, key_serde=Serdes.Integer, value_serde=Serdes.String)
    fresh_context.restore("store", context.changelog_entries("store"), batch_size=4)
    with fresh.all() as it:
        assert list(it) == expected
