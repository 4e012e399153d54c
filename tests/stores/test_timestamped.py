"""Timestamped stores: local bytes carry an 8-byte big-endian timestamp; the changelog does not."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from streamlet.serdes import Serdes
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.factory import Stores
from streamlet.stores.keyvalue.api import TimestampedKeyValueStore
from streamlet.stores.keyvalue.timestamped import TypedTimestampedKeyValueStore
from streamlet.stores.memory import InMemoryKeyValueBytesStore
from tests.stores.conftest import build_store
from tests.stores.context import RecordingStateStoreContext


def test_local_bytes_have_the_timestamp_prefix_and_the_changelog_has_raw_values(
    context: RecordingStateStoreContext,
) -> None:
    below = InMemoryKeyValueBytesStore("ts")
    store = TypedTimestampedKeyValueStore(below, Serdes.String(), Serdes.Long())
    store.init(context)
    context.at(500)
    store.put("k", ValueAndTimestamp(7, 1234))
    assert below.get(b"k") == struct.pack(">q", 1234) + struct.pack(">q", 7)
    assert below.get(b"k") == bytes.fromhex("00000000000004d2" "0000000000000007")
    [change] = context.changelog
    assert (change.key, change.value, change.timestamp) == (b"k", struct.pack(">q", 7), 1234)
    store.delete("k")
    assert context.changelog[-1].value is None and context.changelog[-1].timestamp == 500


def test_negative_timestamps_use_twos_complement(context: RecordingStateStoreContext) -> None:
    below = InMemoryKeyValueBytesStore("ts")
    store = TypedTimestampedKeyValueStore(below, Serdes.String(), Serdes.String())
    store.init(context)
    store.put("k", ValueAndTimestamp("v", -1))
    assert below.get(b"k") == b"\xff" * 8 + b"v"
    assert store.get("k") == ValueAndTimestamp("v", -1)


def test_typed_api(backend: str, context: RecordingStateStoreContext) -> None:
    store = build_store(backend, context, timestamped=True)
    assert isinstance(store, TimestampedKeyValueStore)
    store.put("a", ValueAndTimestamp(1, 10))
    assert store.get("a") == ValueAndTimestamp(1, 10)
    assert store.put_if_absent("a", ValueAndTimestamp(2, 20)) == ValueAndTimestamp(1, 10)
    store.put_all([("b", ValueAndTimestamp(3, 30))])
    store.put("a", ValueAndTimestamp(None, 40))  # as Java's ValueAndTimestamp.make(null, ts): a delete
    assert store.get("a") is None
    with store.all() as it:
        assert [(kv.key, kv.value) for kv in it] == [("b", ValueAndTimestamp(3, 30))]
    with pytest.raises(TypeError, match="ValueAndTimestamp"):
        store.put("c", 5)


def test_restore_rebuilds_the_prefix_from_the_changelog_timestamp(
    backend: str, context: RecordingStateStoreContext
) -> None:
    store = build_store(backend, context, timestamped=True)
    for i in range(6):
        context.at(100 + i)
        store.put(f"k{i % 3}", ValueAndTimestamp(i, 1000 + i))
    store.delete("k1")
    fresh_context = RecordingStateStoreContext(context.state_dir.parent / "fresh")
    fresh = build_store(backend, fresh_context, timestamped=True)
    fresh_context.restore("store", context.changelog_entries("store"))
    with fresh.all() as it:
        assert [(kv.key, kv.value) for kv in it] == [
            ("k0", ValueAndTimestamp(3, 1003)), ("k2", ValueAndTimestamp(5, 1005)),
        ]
    assert fresh_context.changelog == []


def test_flush_listener_sees_plain_values_and_the_values_timestamp(
    backend: str, context: RecordingStateStoreContext
) -> None:
    context.cache_budget = 1 << 20
    store = build_store(backend, context, cached=True, timestamped=True)
    forwarded: list[tuple[Any, ...]] = []
    assert store.set_flush_listener(lambda *args: forwarded.append(args), True)
    context.at(50)
    store.put("a", ValueAndTimestamp(1, 40))
    store.flush()
    context.at(60)
    store.put("a", ValueAndTimestamp(2, 55))
    store.flush()
    context.at(70)
    store.delete("a")
    store.flush()
    assert forwarded == [("a", 1, None, 40, ()), ("a", 2, 1, 55, ()), ("a", None, 2, 70, ())]
    assert [(c.value, c.timestamp) for c in context.changelog] == [
        (struct.pack(">q", 1), 40), (struct.pack(">q", 2), 55), (None, 70),
    ]


def test_persistent_timestamped_supplier_builds_a_leveldb_timestamped_store(
    context: RecordingStateStoreContext,
) -> None:
    builder = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store("agg"), Serdes.String, Serdes.Long
    )
    store = builder.build()
    assert isinstance(store, TimestampedKeyValueStore) and store.persistent
    store.init(context)
    store.put("x", ValueAndTimestamp(1, 2))
    store.close()
    assert (context.state_dir / "agg" / "CURRENT").exists()
