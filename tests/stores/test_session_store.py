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
