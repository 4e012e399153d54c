"""`ReadOnlyWindowView`: one window store across this instance's local copies, read-only.

Kafka Streams' `ReadOnlyWindowStore` overloads `fetch` by arity, and so does this view:
`fetch(key, time)` is one window's value, `fetch(key, time_from, time_to)` the windows of one key
(`KeyValue(window_start, value)`), `fetch(key_from, key_to, time_from, time_to)` the windows of a key
range (`KeyValue(Windowed(key, window), value)`). Times are int epoch ms or aware datetimes; window
starts are matched inclusively, as in Kafka Streams. Results are read at once into a list (window
queries are small and bounded by time), and every `backward_*` method is its forward twin reversed.
"""

from __future__ import annotations

from typing import Any

from streamlet.errors import InvalidStateStoreError
from streamlet.queries.key_value_view import StoreView, serialized_key
from streamlet.queries.provider import closed_under_query
from streamlet.record import KeyValue
from streamlet.stores.api import KeyValueIterator
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.windowed import MAX_TIME


class ReadOnlyWindowView(StoreView):
    """Window queries over every local copy the query parameters allow (see the module docstring)."""

    def fetch(self, *args: Any) -> Any:
        """`fetch(key, time)`, `fetch(key, time_from, time_to)` or `fetch(key_from, key_to, time_from, time_to)`."""
        if len(args) == 2:
            return self._fetch_one(*args)
        if len(args) == 3:
            return StoreKeyValueIterator(iter(self._fetch_key(*args)))
        if len(args) == 4:
            return StoreKeyValueIterator(iter(self._fetch_range(*args)))
        raise TypeError(f"fetch takes 2, 3 or 4 arguments ({len(args)} given)")

    def backward_fetch(self, *args: Any) -> KeyValueIterator[Any, Any]:
        """`fetch(key, time_from, time_to)` or the key-range `fetch`, newest window first."""
        if len(args) == 3:
            return StoreKeyValueIterator(iter(self._fetch_key(*args)[::-1]))
        if len(args) == 4:
            return StoreKeyValueIterator(iter(self._fetch_range(*args)[::-1]))
        raise TypeError(f"backward_fetch takes 3 or 4 arguments ({len(args)} given)")

    def fetch_all(self, time_from: Any, time_to: Any) -> KeyValueIterator[Any, Any]:
        """Every window whose start lies in [time_from, time_to], of every key."""
        return StoreKeyValueIterator(iter(self._fetch_range(None, None, time_from, time_to)))

    def backward_fetch_all(self, time_from: Any, time_to: Any) -> KeyValueIterator[Any, Any]:
        """`fetch_all` reversed."""
        return StoreKeyValueIterator(iter(self._fetch_range(None, None, time_from, time_to)[::-1]))

    def all(self) -> KeyValueIterator[Any, Any]:
        """Every window of every key."""
        return self.fetch_all(0, MAX_TIME)

    def backward_all(self) -> KeyValueIterator[Any, Any]:
        """`all` reversed."""
        return self.backward_fetch_all(0, MAX_TIME)

    # -- reading the copies -------------------------------------------------------------------------
    def _fetch_one(self, key: Any, time: Any) -> Any:
        stores = self._provider.stores()
        try:
            for store in stores:
                value = store.fetch(key, time)
                if value is not None:
                    return self._value(value)
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc
        return None

    def _fetch_key(self, key: Any, time_from: Any, time_to: Any) -> list[KeyValue]:
        """A key lives in one copy: the first copy with windows for it answers (Kafka Streams' rule)."""
        stores = self._provider.stores()
        try:
            for store in stores:
                with store.fetch(key, time_from, time_to) as found:
                    entries = [KeyValue(kv.key, self._value(kv.value)) for kv in found]
                if entries:
                    return entries
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc
        return []

    def _fetch_range(self, key_from: Any, key_to: Any, time_from: Any, time_to: Any) -> list[KeyValue]:
        """Windows of keys in [key_from, key_to] (None: unbounded), by serialized key, then start time."""
        stores = self._provider.stores()
        found: list[tuple[bytes, int, KeyValue]] = []
        try:
            for store in stores:
                key_bytes = serialized_key(store)
                low = None if key_from is None else key_bytes(key_from)
                high = None if key_to is None else key_bytes(key_to)
                with store.fetch_all(time_from, time_to) as entries:
                    for kv in entries:
                        data = key_bytes(kv.key.key)
                        if (low is None or data >= low) and (high is None or data <= high):
                            found.append((data, kv.key.window.start, KeyValue(kv.key, self._value(kv.value))))
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc
        found.sort(key=lambda item: (item[0], item[1]))
        return [entry for _data, _start, entry in found]
