"""The session store contract, and the supplier `Stores.persistent_session_store` & co. return."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from streamlet.stores.api import FlushListener, KeyValueIterator, StateStore
from streamlet.stores.keyvalue.api import KeyValueBytesStore, KeyValueBytesStoreSupplier


class SessionStore(StateStore):
    """Aggregates keyed by `Windowed(key, SessionWindow(start, end))`.

    Iterators yield `KeyValue(Windowed, aggregate)` for one key ordered by session end, then start
    (Kafka Streams' order); they are context managers.
    """

    retention_ms: int

    @abstractmethod
    def find_sessions(self, key: Any, earliest_session_end: int,
                      latest_session_start: int) -> KeyValueIterator[Any, Any]:
        """The key's sessions that end at or after `earliest_session_end` and start at or before
        `latest_session_start`: those a record could merge with."""

    @abstractmethod
    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        """The aggregate of exactly that session, or None."""

    @abstractmethod
    def fetch(self, key: Any) -> KeyValueIterator[Any, Any]:
        """All the key's sessions."""

    @abstractmethod
    def put(self, session_key: Any, aggregate: Any) -> None:
        """Store a session's aggregate (None removes it)."""

    @abstractmethod
    def remove(self, session_key: Any) -> None:
        """Remove the session `session_key` (a `Windowed(key, SessionWindow(start, end))`)."""

    def find_sessions_ending_between(self, earliest_session_end: int, latest_session_end: int) -> list[Any]:
        """Every key's sessions ending in the range, by end, key bytes, start (what an `on_window_close`
        session aggregation emits); a store that cannot answer this cannot serve one."""
        raise NotImplementedError(f"{type(self).__name__} cannot list sessions by end time")

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Install the listener for sessions a cache flushes; True iff this store caches (else the
        processor forwards every update itself)."""
        return False


class SessionBytesStoreSupplier(KeyValueBytesStoreSupplier):
    """A key-value bytes store supplier (LevelDB or memory) that also carries the retention period."""

    def __init__(self, inner: KeyValueBytesStoreSupplier, retention_ms: int) -> None:
        self.name = inner.name
        self.inner = inner
        self.retention_ms = retention_ms

    def get(self) -> KeyValueBytesStore:
        return self.inner.get()

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    @property
    def metrics_scope(self) -> str:
        return self.inner.metrics_scope + "-session"

    def __repr__(self) -> str:
        kind = "persistent" if self.persistent else "in_memory"
        return f"Stores.{kind}_session_store({self.name!r}, {self.retention_ms})"
