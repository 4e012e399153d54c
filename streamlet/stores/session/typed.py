"""`TypedSessionStore`: the session store processors and tests use.

It is a typed key-value store whose key serde is the session-windowed serde over the user's key serde
(key bytes, end, start: Kafka Streams' session key schema), so caching, change-logging, restoration
and both backends come from the key-value layers unchanged, and the changelog is keyed as Java's.
On top it adds the session operations; retention is the bytes layer's (retention.py), so expired
sessions are neither logged nor forwarded when they go.

A session aggregation runs `find_sessions`, then `remove` of each session found and `put` of the merged
one, for every record, so those three skip what the generic key-value path would repeat: the lookup's
bounds are built from the inner key's bytes (serialized once) instead of two `Windowed` keys, the lookup
reads its few entries at once (`range_list`, no iterator chain per entry), and `put`/`remove` reuse the
bytes of the sessions the last lookup returned and of its key.
"""

from __future__ import annotations

import struct
from typing import Any

from streamlet.errors import ConfigError
from streamlet.record import Headers, KeyValue
from streamlet.serdes import NoFastPath, Serde, fast_serializer
from streamlet.stores.api import FlushListener, KeyValueIterator, StateStoreContext
from streamlet.stores.cache import SEGMENT_ID_BYTES
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.keyvalue.typed import TypedKeyValueStore
from streamlet.stores.session.api import SessionStore
from streamlet.stores.session.retention import RetainingSessionBytesStore
from streamlet.windowed import MAX_TIME, SessionWindow, Windowed
from streamlet.windowed_serdes import SessionWindowedSerde

_END_START = struct.Struct(">qq")
"""A session key's suffix after the inner key's bytes: end, then start (see windowed_serdes.py)."""
_LATEST = _END_START.pack(MAX_TIME, MAX_TIME)
_IMMUTABLE_KEYS = (str, bytes, int)
"""Inner key types whose bytes cannot change while the same object is passed again."""


class TypedSessionStore(TypedKeyValueStore, SessionStore):
    def __init__(self, bytes_store: KeyValueBytesStore, key_serde: Serde[Any] | None, value_serde: Serde[Any] | None,
                 *, retention_ms: int, logging_enabled: bool = True, caching_enabled: bool = False) -> None:
        self._retaining = RetainingSessionBytesStore(bytes_store, retention_ms)
        super().__init__(self._retaining, None, value_serde, logging_enabled=logging_enabled,
                         caching_enabled=caching_enabled, cache_key_prefix_size=SEGMENT_ID_BYTES)
        self._session_key_serde = key_serde
        self.retention_ms = retention_ms
        self._serialize_inner_key: Any = self._not_open
        self._inner_type: type = NoFastPath
        self._encode_inner: Any = None
        # The last lookup's sessions (immutable inner keys) with their bytes, and its inner key (if immutable)
        # with its bytes; each replaced as a whole, so a reader on another thread never pairs a key with
        # another key's bytes.
        self._found: list[tuple[Any, bytes]] = []
        self._found_key: tuple[Any, bytes] | None = None

    def init(self, context: StateStoreContext) -> None:
        inner = self._session_key_serde or context.app_config.default_key_serde()
        if inner is None:
            raise ConfigError(f"session store {self.name!r} has no key serde: give one to the store builder "
                              f"(or Materialized) or set default.key.serde")
        self._key_serde = SessionWindowedSerde(inner)
        self._serialize_inner_key = inner.serializer.serialize
        self._inner_type, self._encode_inner = fast_serializer(inner.serializer)
        self._found, self._found_key = [], None
        super().init(context)

    def close(self) -> None:
        self._found, self._found_key = [], None
        self._serialize_inner_key, self._inner_type = self._not_open, NoFastPath  # a closed store's reads raise
        super().close()

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Flushed sessions go downstream timestamped with the session's end, as Kafka Streams' do."""

        def at_session_end(key: Any, new: Any, old: Any, _timestamp: int, headers: Headers) -> None:
            listener(key, new, old, key.window.end, headers)

        return super().set_flush_listener(at_session_end, send_old_values)

    # -- session operations -------------------------------------------------------------------------
    def remove(self, session_key: Any) -> None:
        self.put(session_key, None)

    def put(self, session_key: Any, aggregate: Any) -> None:
        self.last_write = self._record_context()
        self._access.put(self._session_key_bytes(session_key), session_key, aggregate)

    def _session_key_bytes(self, session_key: Any) -> bytes:
        """What `_key` returns, from the last lookup's bytes where they apply (see the module docstring)."""
        for found, data in self._found:
            if found is session_key:
                return data
        found_key = self._found_key
        if found_key is not None and type(session_key) is Windowed and session_key.key is found_key[0]:
            window = session_key.window
            return found_key[1] + _END_START.pack(window.end, window.start)
        return self._key(session_key)

    def _inner_key_bytes(self, key: Any) -> bytes | None:
        """The inner key's bytes, None when its serde gives none (the caller then takes the generic path, which
        raises the serde's error)."""
        if type(key) is self._inner_type:
            try:
                data: bytes | None = self._encode_inner(key)
            except Exception:
                data = self._serialize_inner_key(self._topic, key)
        else:
            data = self._serialize_inner_key(self._topic, key)
        self._found_key = (key, data) if type(key) in _IMMUTABLE_KEYS and data is not None else None
        return data

    def find_sessions(self, key: Any, earliest_session_end: int,
                      latest_session_start: int) -> KeyValueIterator[Any, Any]:
        prefix = self._inner_key_bytes(key)
        if prefix is None:  # the serde's own error, from the generic path
            prefix = self._key(Windowed(key, SessionWindow(0, max(0, earliest_session_end))))
        low = prefix + _END_START.pack(max(0, earliest_session_end), 0)
        high = prefix + _LATEST
        if low > high:
            return StoreKeyValueIterator(iter(()))  # as `range`: an inverted range is empty
        found: list[KeyValue] = []
        memo: list[tuple[Any, bytes]] = []
        for data, session_key, aggregate in self._access.range_list(low, high):
            window = session_key.window  # other keys whose bytes extend this key's may fall in the byte range:
            if session_key.key == key and window.start <= latest_session_start and window.end >= earliest_session_end:
                found.append(KeyValue(session_key, aggregate))
                if type(session_key.key) in _IMMUTABLE_KEYS:
                    memo.append((session_key, data))
        self._found = memo
        return StoreKeyValueIterator(iter(found))

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
