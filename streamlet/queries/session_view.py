"""`ReadOnlySessionView`: one session store across this instance's local copies, read-only.

Kafka Streams' `ReadOnlySessionStore`: `fetch(key)` gives every session of a key, `fetch(key_from,
key_to)` those of a key range, `find_sessions(key, earliest_session_end, latest_session_start)` the
sessions that end at or after the one time and start at or before the other, and `fetch_session(key,
start, end)` one session's aggregate. Entries are `KeyValue(Windowed(key, SessionWindow), aggregate)`,
per key in the store's order (session end, then start); a key lives in one copy, so the first copy
that has sessions for it answers. Results are read at once (sessions of a key are few), and every
`backward_*` method is its forward twin reversed.
"""

from __future__ import annotations

from typing import Any

from streamlet.errors import InvalidStateStoreError
from streamlet.queries.key_value_view import StoreView
from streamlet.queries.provider import closed_under_query
from streamlet.record import KeyValue
from streamlet.stores.api import KeyValueIterator
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.windowed import MAX_TIME


class ReadOnlySessionView(StoreView):
    """Session queries over every local copy the query parameters allow (see the module docstring)."""

    def fetch(self, *args: Any) -> KeyValueIterator[Any, Any]:
        """`fetch(key)`: the key's sessions; `fetch(key_from, key_to)`: those of keys in that range."""
        if len(args) == 1:
            return StoreKeyValueIterator(iter(self._sessions_of(args[0], 0, MAX_TIME)))
        if len(args) == 2:
            return StoreKeyValueIterator(iter(self._sessions_in_range(*args)))
        raise TypeError(f"fetch takes 1 or 2 arguments ({len(args)} given)")

    def backward_fetch(self, *args: Any) -> KeyValueIterator[Any, Any]:
        """`fetch` with the latest session first."""
        return StoreKeyValueIterator(iter(list(self.fetch(*args))[::-1]))

    def find_sessions(self, key: Any, earliest_session_end: int,
                      latest_session_start: int) -> KeyValueIterator[Any, Any]:
        """The key's sessions ending at or after `earliest_session_end` and starting at or before
        `latest_session_start`."""
        return StoreKeyValueIterator(iter(self._sessions_of(key, earliest_session_end, latest_session_start)))

    def backward_find_sessions(self, key: Any, earliest_session_end: int,
                               latest_session_start: int) -> KeyValueIterator[Any, Any]:
        """`find_sessions` with the latest session first."""
        return StoreKeyValueIterator(iter(self._sessions_of(key, earliest_session_end, latest_session_start)[::-1]))

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        """The aggregate of exactly the session [session_start, session_end] of `key`, or None."""
        try:
            for store in self._provider.stores():
                value = store.fetch_session(key, session_start, session_end)
                if value is not None:
                    return value
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc
        return None

    # -- reading the copies -------------------------------------------------------------------------
    def _sessions_of(self, key: Any, earliest_end: int, latest_start: int) -> list[KeyValue]:
        try:
            for store in self._provider.stores():
                with store.find_sessions(key, earliest_end, latest_start) as found:
                    entries = list(found)
                if entries:
                    return entries
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc
        return []

    def _sessions_in_range(self, key_from: Any, key_to: Any) -> list[KeyValue]:
        """Sessions of keys in [key_from, key_to] (None: unbounded), by serialized key, then as stored."""
        found: list[tuple[bytes, int, KeyValue]] = []
        try:
            for store in self._provider.stores():
                key_bytes = _user_key_bytes(store)
                low = None if key_from is None else key_bytes(key_from)
                high = None if key_to is None else key_bytes(key_to)
                with store.all() as entries:
                    for position, kv in enumerate(entries):
                        data = key_bytes(kv.key.key)
                        if (low is None or data >= low) and (high is None or data <= high):
                            found.append((data, position, kv))
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc
        found.sort(key=lambda item: (item[0], item[1]))
        return [entry for _data, _position, entry in found]


def _user_key_bytes(store: Any) -> Any:
    """How the session store serializes the user's key (inside its session-key schema)."""
    serializer = store._key_serde.inner.serializer
    return lambda key: serializer.serialize(store.name, key)
