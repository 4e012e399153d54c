"""Session stores on both backends: Kafka Streams' key schema and order, retention as each Java backend
has it, change-logging and restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlet.serdes import Serdes
from streamlet.stores.factory import Stores
from streamlet.stores.session.typed import TypedSessionStore
from streamlet.windowed import SessionWindow, Windowed
from tests.stores.context import RecordingStateStoreContext

BACKENDS = ["persistent", "in_memory"]


def _store(tmp_path: Path, backend: str, retention: int = 100) -> tuple[TypedSessionStore, RecordingStateStoreContext]:
    supplier = (Stores.persistent_session_store("sessions", retention) if backend == "persistent"
                else Stores.in_memory_session_store("sessions", retention))
    store = Stores.session_store_builder(supplier, Serdes.String(), Serdes.Long()).build()
    context = RecordingStateStoreContext(tmp_path)
    store.init(context)
    return store, context


def _w(key: str, start: int, end: int) -> Windowed:
    return Windowed(key, SessionWindow(start, end))


@pytest.mark.parametrize("backend", BACKENDS)
def test_find_sessions_by_end_then_start_for_one_key_only(tmp_path: Path, backend: str) -> None:
    store, _ = _store(tmp_path, backend)
    for window, value in [(_w("a", 5, 20), 1), (_w("a", 0, 3), 2), (_w("ab", 4, 6), 3), (_w("a", 12, 14), 4),
                          (_w("b", 1, 9), 5)]:
        store.put(window, value)
    with store.find_sessions("a", 3, 12) as it:
        assert [(kv.key, kv.value) for kv in it] == [(_w("a", 0, 3), 2), (_w("a", 12, 14), 4), (_w("a", 5, 20), 1)]
    assert store.fetch_session("a", 5, 20) == 1
    store.remove(_w("a", 5, 20))
    assert store.fetch_session("a", 5, 20) is None
    assert [kv.key for kv in store.fetch("b")] == [_w("b", 1, 9)]
    store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_expired_sessions_are_dropped_and_hidden(tmp_path: Path, backend: str) -> None:
    store, _ = _store(tmp_path, backend, retention=10)
    store.put(_w("a", 0, 1), 1)
    store.put(_w("a", 20, 30), 2)  # stream time 30: sessions ending at or before 20 are gone
    assert store.fetch_session("a", 0, 1) is None
    store.put(_w("a", 15, 19), 3)  # too old to be written
    assert [kv.key for kv in store.fetch("a")] == [_w("a", 20, 30)]
    store.close()


def test_changelog_is_keyed_as_kafka_streams_and_restores(tmp_path: Path) -> None:
    store, context = _store(tmp_path, "in_memory")
    store.put(_w("k", 3, 9), 7)
    store.remove(_w("k", 3, 9))
    store.put(_w("k", 4, 12), 8)
    entries = context.changelog_entries("sessions")
    # key bytes, then end and start as 8-byte big-endian longs (Java's SessionKeySchema)
    assert entries[0][0] == b"k" + (9).to_bytes(8, "big") + (3).to_bytes(8, "big")
    assert [value for _key, value, _ts in entries] == [(7).to_bytes(8, "big"), None, (8).to_bytes(8, "big")]
    restored, restored_context = _store(tmp_path / "again", "persistent")
    restored_context.restore("sessions", entries)
    assert [(kv.key, kv.value) for kv in restored.fetch("k")] == [(_w("k", 4, 12), 8)]
    store.close()
    restored.close()


class _ListKeySerde:
    """A key serde over lists (a mutable key type, so the session store's byte memo must not apply)."""

    @staticmethod
    def make() -> object:
        from streamlet.serdes import Deserializer, Serde, Serializer

        return Serde(Serializer(lambda key: ",".join(key).encode()),
                     Deserializer(lambda data: [] if not data else data.decode().split(",")))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cached", [False, True], ids=["uncached", "cached"])
@pytest.mark.parametrize("list_keys", [False, True], ids=["str-keys", "list-keys"])
def test_merging_as_an_aggregation_does_matches_a_model(tmp_path: Path, backend: str, cached: bool,
                                                         list_keys: bool) -> None:
    """find_sessions, remove what was found, put the merged session (the session aggregation's pattern, whose
    key bytes the store reuses), with keys whose bytes extend one another, against a plain dict; the changelog
    must end with exactly the model's sessions, keyed as the generic serialization keys them."""
    import random

    from streamlet.windowed_serdes import SessionWindowedSerde

    supplier = (Stores.persistent_session_store("sessions", 1_000_000) if backend == "persistent"
                else Stores.in_memory_session_store("sessions", 1_000_000))
    key_serde = _ListKeySerde.make() if list_keys else Serdes.String()
    builder = Stores.session_store_builder(supplier, key_serde, Serdes.Long())
    store = (builder.with_caching_enabled() if cached else builder).build()
    context = RecordingStateStoreContext(tmp_path, cache_budget=1_000 if cached else 0)  # small: evictions too
    store.init(context)
    windowed = SessionWindowedSerde(key_serde)  # type: ignore[arg-type]
    model: dict[tuple[str, int, int], int] = {}
    rng = random.Random(7)
    gap = 5
    for i in range(600):
        name = rng.choice(["a", "ab", "b", "a,b"] if list_keys else ["a", "ab", "b", "abc"])
        key = name.split(",") if list_keys else name
        ts = 20 + i + rng.randrange(-20, 3)
        with store.find_sessions(key, ts - gap, ts + gap) as it:
            found = [(kv.key, kv.value) for kv in it]
        expected = sorted(((s, e, v) for (n, s, e), v in model.items()
                           if n == name and s <= ts + gap and e >= ts - gap), key=lambda t: (t[1], t[0]))
        assert [(w.window.start, w.window.end, v) for w, v in found] == expected
        start, end, total = ts, ts, 1
        for session_key, value in found:
            store.remove(session_key)
            del model[(name, session_key.window.start, session_key.window.end)]
            start, end, total = min(start, session_key.window.start), max(end, session_key.window.end), total + value
        store.put(Windowed(key, SessionWindow(start, end)), total)
        model[(name, start, end)] = total
        if i % 97 == 0:
            store.flush()
    store.flush()
    with store.all() as it:
        assert sorted((",".join(kv.key.key) if list_keys else kv.key.key, kv.key.window.start, kv.key.window.end,
                       kv.value) for kv in it) == sorted((*k, v) for k, v in model.items())
    logged: dict[bytes, bytes | None] = {}
    for data_key, data, _ts in context.changelog_entries("sessions"):
        logged[data_key] = data  # the changelog compacted: deletes must hit the keys the puts wrote
    assert {k for k, v in logged.items() if v is not None} == {
        windowed.serializer.serialize("t", Windowed(n.split(",") if list_keys else n, SessionWindow(s, e)))
        for n, s, e in model}
    store.close()


def test_find_sessions_on_a_store_not_open_raises(tmp_path: Path) -> None:
    from streamlet.errors import InvalidStateStoreError

    store = Stores.session_store_builder(Stores.in_memory_session_store("sessions", 100), Serdes.String(),
                                         Serdes.Long()).build()
    with pytest.raises(InvalidStateStoreError):
        store.find_sessions("a", 0, 10)
    store.init(RecordingStateStoreContext(tmp_path))
    store.put(_w("a", 1, 2), 1)
    store.close()
    with pytest.raises(InvalidStateStoreError):
        store.find_sessions("a", 0, 10)
    with pytest.raises(InvalidStateStoreError):
        store.put(_w("a", 1, 2), 3)


def test_a_reopened_persistent_store_finds_what_it_held(tmp_path: Path) -> None:
    """Its key set (what lets a lookup skip LevelDB) is rebuilt from the store when it opens."""
    store, _ = _store(tmp_path, "persistent", retention=1_000)
    store.put(_w("a", 1, 5), 1)
    store.put(_w("ab", 2, 6), 2)
    store.put(_w("a", 10, 12), 3)
    store.remove(_w("a", 10, 12))
    store.close()
    again, _ = _store(tmp_path, "persistent", retention=1_000)
    with again.find_sessions("a", 0, 100) as it:
        assert [(kv.key, kv.value) for kv in it] == [(_w("a", 1, 5), 1)]
    assert again.fetch_session("ab", 2, 6) == 2
    assert again.fetch_session("a", 10, 12) is None
    again.close()
