"""The typed `KeyValueStore`: serdes, API semantics and lifecycle, on both backends, cached or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamlet.errors import ConfigError, InvalidStateStoreError, StreamsError
from streamlet.record import KeyValue
from streamlet.serdes import Deserializer, Serde, Serdes, Serializer
from streamlet.stores.factory import Stores
from streamlet.stores.keyvalue.api import KeyValueStore
from tests.stores.conftest import build_store
from tests.stores.context import RecordingStateStoreContext


@pytest.fixture(params=[False, True], ids=["uncached", "cached"])
def cached(request: pytest.FixtureRequest) -> bool:
    value: bool = request.param
    return value


@pytest.fixture
def cached_context(context: RecordingStateStoreContext, cached: bool) -> RecordingStateStoreContext:
    context.cache_budget = 1 << 20 if cached else 0
    return context


def items(it: Any) -> list[tuple[Any, Any]]:
    with it:
        return [(kv.key, kv.value) for kv in it]


def test_basic_operations(backend: str, cached: bool, cached_context: RecordingStateStoreContext) -> None:
    store = build_store(backend, cached_context, cached=cached)
    assert isinstance(store, KeyValueStore)
    assert store.get("a") is None
    store.put("a", 1)
    store.put("a", 2)
    assert store.get("a") == 2
    assert store.put_if_absent("a", 3) == 2
    assert store.put_if_absent("b", 4) is None
    assert store.get("b") == 4
    store.put_all([KeyValue("c", 5), ("d", 6), ("b", None)])
    assert store.get("b") is None and store.get("d") == 6
    assert store.delete("c") == 5
    assert store.delete("c") is None
    store.put("a", None)  # put(k, None) deletes
    assert store.get("a") is None
    assert items(store.all()) == [("d", 6)]
    assert store.approximate_num_entries() == 1
    store.flush()
    assert store.approximate_num_entries() == 1


def test_integer_keys_iterate_in_serialized_byte_order(backend: str, cached: bool,
                                                       cached_context: RecordingStateStoreContext) -> None:
    store = build_store(backend, cached_context, key_serde=Serdes.Integer, value_serde=Serdes.String,
                        cached=cached)
    for key in [-1, 256, 0, -2, 1, 2**31 - 1, -(2**31)]:
        store.put(key, f"v{key}")
    if cached:
        store.flush()
        store.put(3, "v3")  # one key only in the cache, merged into the scan
    # Big-endian two's complement: non-negative keys first, then negatives, each ascending.
    expected = [0, 1, 256, 2**31 - 1, -(2**31), -2, -1]
    if cached:
        expected.insert(2, 3)
    assert [k for k, _ in items(store.all())] == expected
    assert [k for k, _ in items(store.range(1, -2))] == [k for k in expected if k not in (0, -1)]
    assert items(store.range(-1, 1)) == []  # from's bytes sort after to's: an empty range


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [("b", "d", "bcd"), ("b", "b", "b"), (None, "c", "abc"), ("c", None, "cde"), (None, None, "abcde"),
     ("bb", "cc", "c"), ("e", "a", "")],
)
def test_ranges_are_inclusive_with_open_bounds(backend: str, cached: bool,
                                               cached_context: RecordingStateStoreContext,
                                               low: str | None, high: str | None, expected: str) -> None:
    store = build_store(backend, cached_context, cached=cached)
    for i, key in enumerate("edcba"):
        store.put(key, i)
    assert "".join(k for k, _ in items(store.range(low, high))) == expected


def test_iterator_context_manager_closes_and_peeks(backend: str, cached: bool,
                                                   cached_context: RecordingStateStoreContext) -> None:
    store = build_store(backend, cached_context, cached=cached)
    for i, key in enumerate("abc"):
        store.put(key, i)
    with store.all() as it:
        assert it.peek_next_key() == "a"
        assert it.peek_next_key() == "a"
        assert next(it) == KeyValue("a", 0)
        assert it.peek_next_key() == "b"
    assert list(it) == []
    with pytest.raises(StopIteration):
        it.peek_next_key()


def test_default_serdes_come_from_the_config(backend: str, tmp_path: Path) -> None:
    context = RecordingStateStoreContext(
        tmp_path, config={"default.key.serde": "String", "default.value.serde": Serdes.Json}
    )
    store = build_store(backend, context, key_serde=None, value_serde=None)
    store.put("k", {"n": [1, 2]})
    assert store.get("k") == {"n": [1, 2]}
    assert context.changelog[-1].value == b'{"n":[1,2]}'


def test_missing_serde_is_a_clear_error(backend: str, context: RecordingStateStoreContext) -> None:
    with pytest.raises(ConfigError, match="state store 'store' has no value serde.*default.value.serde"):
        build_store(backend, context, value_serde=None)


class _TopicRecordingSerializer(Serializer[str]):
    def __init__(self) -> None:
        super().__init__(lambda text: text.encode())
        self.topics: list[str | None] = []

    def serialize(self, topic: str | None, data: str | None) -> bytes | None:
        self.topics.append(topic)
        return super().serialize(topic, data)


def test_changelog_topic_is_the_serde_topic(backend: str, context: RecordingStateStoreContext) -> None:
    serializer = _TopicRecordingSerializer()
    store = build_store(backend, context, key_serde=Serde(serializer, Deserializer(bytes.decode)))
    store.put("k", 1)
    assert serializer.topics == ["store-tests-store-changelog"]


def test_none_key_is_rejected(backend: str, context: RecordingStateStoreContext) -> None:
    store = build_store(backend, context)
    with pytest.raises(StreamsError, match="key must not be None"):
        store.put(None, 1)


def test_use_before_init_and_after_close_raises(backend: str, cached: bool,
                                                cached_context: RecordingStateStoreContext) -> None:
    supplier = (Stores.persistent_key_value_store if backend == "leveldb" else Stores.in_memory_key_value_store)("s")
    builder = Stores.key_value_store_builder(supplier, Serdes.String, Serdes.Long)
    store = (builder.with_caching_enabled() if cached else builder).build()
    assert not store.is_open
    with pytest.raises(InvalidStateStoreError, match="'s' is not initialized"):
        store.get("a")
    with pytest.raises(InvalidStateStoreError):
        store.all()
    store.init(cached_context)
    assert store.is_open
    with pytest.raises(InvalidStateStoreError, match="already open"):
        store.init(cached_context)
    store.put("a", 1)
    store.flush()
    store.close()
    store.close()
    assert not store.is_open
    for use in (lambda: store.get("a"), lambda: store.put("a", 1), lambda: store.range(None, None),
                store.all, store.flush, store.approximate_num_entries, lambda: store.delete("a")):
        with pytest.raises(InvalidStateStoreError, match="'s' is closed"):
            use()


def test_registers_for_restoration_with_its_logging_choice(backend: str, tmp_path: Path) -> None:
    for logging in (True, False):
        context = RecordingStateStoreContext(tmp_path / str(logging))
        store = build_store(backend, context, logging=logging)
        registration = context.registrations["store"]
        assert registration.store is store and registration.logged is logging
        assert store.persistent is (backend == "leveldb")


def test_leveldb_typed_store_persists_across_close_and_reopen(context: RecordingStateStoreContext) -> None:
    context.cache_budget = 1 << 20
    store = build_store("leveldb", context, cached=True)
    store.put("kept", 1)
    store.flush()
    store.close()
    again = build_store("leveldb", context)
    assert again.get("kept") == 1
    again.close()


def test_close_drops_unflushed_cache(backend: str, context: RecordingStateStoreContext) -> None:
    """The runtime flushes before a clean close; a dirty close must not log or forward anything."""
    context.cache_budget = 1 << 20
    store = build_store(backend, context, cached=True)
    forwarded: list[Any] = []
    assert store.set_flush_listener(lambda *args: forwarded.append(args), False)
    store.put("lost", 1)
    store.close()
    assert forwarded == [] and context.changelog == []
