"""`TypedSessionStore`: the session store processors and tests use.

It is a typed key-value store whose key serde is the session-windowed serde over the user's key serde
(key bytes, end, start: Kafka Streams' session key schema), so caching, change-logging, restoration
and both backends come from the key-value layers unchanged, and the changelog is keyed as Java's.
On top it adds the session operations; retention is the bytes layer's (retention.py), so expired
sessions are neither logged nor forwarded when they go.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streamlet.errors import ConfigError
from streamlet.record import Headers, KeyValue
from streamlet.serdes import Serde
from streamlet.stores.api import FlushListener, KeyValueIterator, StateStoreContext
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.keyvalue.typed import TypedKeyValueStore
from streamlet.stores.session.api import SessionStore
from streamlet.stores.session.retention import RetainingSessionBytesStore
from streamlet.windowed import MAX_TIME, SessionWindow, Windowed
from streamlet.windowed_serdes import SessionWindowedSerde


class TypedSessionStore(TypedKeyValueStore, SessionStore):
    def __init__(self, bytes_store: KeyValueBytesStore, key_serde: Serde[Any] | None, value_serde: Serde[Any] | None,
                 *, retention_ms: int, logging_enabled: bool = True, caching_enabled: bool = False) -> None:
        self._retaining = RetainingSessionBytesStore(bytes_store, retention_ms)
        super().__init__(self._retaining, None, value_serde,
                         logging_enabled=logging_enabled, caching_enabled=caching_enabled)
        self._session_key_serde = key_serde
        self.retention_ms = retention_ms

    def init(self, context: StateStoreContext) -> None:
        inner = self._session_key_serde or context.app_config.default_key_serde()
        if inner is None:
            raise ConfigError(f"session store {self.name!r} has no key serde: give one to the store builder "
                              f"(or Materialized) or set default.key.serde")
        self._key_serde = SessionWindowedSerde(inner)
        self._serialize_inner_key = inner.serializer.serialize
        super().init(context)

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Flushed sessions go downstream timestamped with the session's end, as Kafka Streams' do."""

        def at_session_end(key: Any, new: Any, old: Any, _timestamp: int, headers: Headers) -> None:
            listener(key, new, old, key.window.end, headers)

        return super().set_flush_listener(at_session_end, send_old_values)

    # -- session operations -------------------------------------------------------------------------
    def remove(self, session_key: Any) -> None:
        self.put(session_key, None)

    def find_sessions(self, key: Any, earliest_session_end: int,
                      latest_session_start: int) -> KeyValueIterator[Any, Any]:
        low = Windowed(key, SessionWindow(0, max(0, earliest_session_end)))
        candidates = self.range(low, Windowed(key, SessionWindow(MAX_TIME, MAX_TIME)))

        def matching() -> Iterator[KeyValue]:
            for kv in candidates:  # other keys whose bytes extend this key's may fall in the byte range
                window = kv.key.window
                if kv.key.key == key and window.start <= latest_session_start and window.end >= earliest_session_end:
                    yield kv

        return StoreKeyValueIterator(matching(), candidates.close)

    def find_sessions_ending_between(self, earliest_session_end: int, latest_session_end: int) -> list[KeyValue]:
        """Every key's sessions that end in the range (both inclusive), by end, then key bytes, then start:
        Kafka Streams' time-ordered session store's `findSessions(earliestEnd, latestEnd)`, which an
        `on_window_close` session aggregation emits from."""
        serialize, topic = self._serialize_inner_key, self.name
        with self._retaining.listing_by_end(), self.all() as sessions:
            found = [kv for kv in sessions if earliest_session_end <= kv.key.window.end <= latest_session_end]
        return sorted(found, key=lambda kv: (kv.key.window.end, serialize(topic, kv.key.key), kv.key.window.start))

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        return self.get(Windowed(key, SessionWindow(session_start, session_end)))

    def fetch(self, key: Any) -> KeyValueIterator[Any, Any]:
        return self.find_sessions(key, 0, MAX_TIME)
