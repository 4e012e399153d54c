"""One IQv2 query answered by one local copy of a store, as Kafka Streams' stores answer `query()`.

A store whose position is behind the request's bound for the copy's partition answers
`NOT_UP_TO_BOUND`, whatever the query; otherwise the store's kind decides which queries it knows, and
any other answers `UNKNOWN_QUERY_TYPE`. Every answer carries the store's position at the time, except
where Kafka Streams' answer has none (a `WindowRangeQuery.with_key` to a window store). Two queries
raise instead, as in Kafka Streams: a `KeyQuery` or `RangeQuery` to a versioned store
(`NotImplementedError`, Java's `UnsupportedOperationException`). Results that Kafka Streams gives as
iterators are iterators here too, read out at once (one consistent read, closed or not).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from streamlet.errors import InvalidStateStoreError
from streamlet.queries.iqv2 import (
    KeyQuery,
    MultiVersionedKeyQuery,
    PositionBound,
    RangeQuery,
    ReadOnlyRecord,
    ResultOrder,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowKeyWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from streamlet.queries.query_result import FailureReason, QueryResult
from streamlet.record import KeyValue
from streamlet.stores.api import AggregationWithHeaders, ValueAndTimestamp, ValueTimestampHeaders
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.api import KeyValueStore, TimestampedKeyValueStore
from streamlet.stores.keyvalue.headers import TimestampedKeyValueStoreWithHeaders
from streamlet.stores.position import Position
from streamlet.stores.session.api import SessionStore
from streamlet.stores.session.headers import SessionStoreWithHeaders
from streamlet.stores.versioned.api import VersionedKeyValueStore
from streamlet.stores.window.api import WindowStore
from streamlet.stores.window.headers import TimestampedWindowStoreWithHeaders
from streamlet.windowed import TimeWindow, Windowed


def _plain(value: Any) -> Any:
    if isinstance(value, AggregationWithHeaders):
        return value.aggregation
    return value.value if isinstance(value, ValueAndTimestamp | ValueTimestampHeaders) else value


def _record(key: Any, value: ValueTimestampHeaders | None) -> ReadOnlyRecord | None:
    return None if value is None else ReadOnlyRecord(key, value.value, value.timestamp, value.headers)


def _key_with_headers(store: Any, query: Any) -> Any:
    return _record(query.key, store.get_with_headers(query.key))


def _range_with_headers(store: Any, query: Any) -> Iterator[Any]:
    with store.range_with_headers(query.lower, query.upper) as found:
        entries = [_record(kv.key, kv.value) for kv in found]
    if query.result_order is ResultOrder.DESCENDING:
        entries.reverse()
    return iter(entries)


def _key_value(store: Any) -> bool:
    return isinstance(store, KeyValueStore) and not isinstance(store, SessionStore)


def _key(store: Any, query: Any) -> Any:
    return _plain(store.get(query.key))


def _with_timestamp(value: Any) -> Any:
    """A store with headers answers the timestamped queries without the headers, as Kafka Streams'."""
    return ValueAndTimestamp(value.value, value.timestamp) if isinstance(value, ValueTimestampHeaders) else value


def _timestamped_key(store: Any, query: Any) -> Any:
    return _with_timestamp(store.get(query.key))


def _range(store: Any, query: Any, timestamped: bool) -> StoreKeyValueIterator:
    with store.range(query.lower, query.upper) as found:
        entries = [KeyValue(kv.key, _with_timestamp(kv.value)) if timestamped else KeyValue(kv.key, _plain(kv.value))
                   for kv in found]
    if query.result_order is ResultOrder.DESCENDING:
        entries.reverse()
    return StoreKeyValueIterator(iter(entries))


def _window_value(store: Any) -> Callable[[Any], Any]:
    """A window store with headers answers the plain window queries with `ValueAndTimestamp`, as Kafka Streams'."""
    return _with_timestamp if isinstance(store, TimestampedWindowStoreWithHeaders) else _plain


def _window_key(store: Any, query: Any) -> StoreKeyValueIterator:
    value = _window_value(store)
    with store.fetch(query.key, query.time_from, query.time_to) as found:
        return StoreKeyValueIterator(iter([KeyValue(kv.key, value(kv.value)) for kv in found]))


def _window_range(store: Any, query: Any) -> StoreKeyValueIterator:
    value = _window_value(store)
    found = store.fetch_all_in_store_order(query.time_from, query.time_to)
    return StoreKeyValueIterator(iter([KeyValue(kv.key, value(kv.value)) for kv in found]))


def _sessions(store: Any, query: Any) -> StoreKeyValueIterator:
    with store.fetch(query.key) as found:
        return StoreKeyValueIterator(iter([KeyValue(kv.key, _plain(kv.value)) for kv in found]))


def _window_key_with_headers(store: Any, query: Any) -> Iterator[ReadOnlyRecord | None]:
    size = store.window_size_ms
    with store.fetch_with_headers(query.key, query.time_from, query.time_to) as found:
        return iter([_record(Windowed(query.key, TimeWindow.for_size(kv.key, size)), kv.value) for kv in found])


def _window_range_with_headers(store: Any, query: Any) -> Iterator[Any]:
    found = store.fetch_all_in_store_order_with_headers(query.time_from, query.time_to)
    return iter([_record(kv.key, kv.value) for kv in found])


def _sessions_with_headers(store: Any, query: Any) -> Iterator[ReadOnlyRecord]:
    """A session's record carries the session's end as its timestamp (a session store keeps no timestamp)."""
    with store.fetch_with_headers(query.key) as found:
        return iter([ReadOnlyRecord(kv.key, kv.value.aggregation, kv.key.window.end, kv.value.headers)
                     for kv in found])


def _versioned_key(store: Any, query: Any) -> Any:
    if query.as_of_timestamp is None:
        return store.get(query.key)
    return store.get_with_valid_to(query.key, query.as_of_timestamp)


def _multi_versioned(store: Any, query: Any) -> Any:
    ascending = query.result_order is ResultOrder.ASCENDING
    return iter(store.get_versions(query.key, query.get_from_time(), query.get_to_time(), ascending))


_TIMESTAMPED = (TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders)


def _handler(store: Any, query: Any) -> Callable[[Any, Any], Any] | None:
    """How `store` answers `query`, or None when it does not know the query's type."""
    kind = type(query)
    if kind is KeyQuery and _key_value(store):
        return _key
    if kind is RangeQuery and _key_value(store):
        return lambda s, q: _range(s, q, False)
    if kind is TimestampedKeyQuery and isinstance(store, _TIMESTAMPED):
        return _timestamped_key
    if kind is TimestampedRangeQuery and isinstance(store, _TIMESTAMPED):
        return lambda s, q: _range(s, q, True)
    if kind is TimestampedKeyWithHeadersQuery and isinstance(store, TimestampedKeyValueStoreWithHeaders):
        return _key_with_headers
    if kind is TimestampedRangeWithHeadersQuery and isinstance(store, TimestampedKeyValueStoreWithHeaders):
        return _range_with_headers
    if kind is TimestampedWindowKeyWithHeadersQuery and isinstance(store, TimestampedWindowStoreWithHeaders):
        return _window_key_with_headers
    if kind is TimestampedWindowRangeWithHeadersQuery:
        if isinstance(store, TimestampedWindowStoreWithHeaders) and query.time_from is not None:
            return _window_range_with_headers
        if isinstance(store, SessionStoreWithHeaders) and query.key is not None:
            return _sessions_with_headers
    if kind is WindowKeyQuery and isinstance(store, WindowStore):
        return _window_key
    if kind is WindowRangeQuery:
        if isinstance(store, WindowStore) and query.time_from is not None:
            return _window_range
        if isinstance(store, SessionStore) and query.key is not None:
            return _sessions
    if kind is VersionedKeyQuery and isinstance(store, VersionedKeyValueStore):
        return _versioned_key
    if kind is MultiVersionedKeyQuery and isinstance(store, VersionedKeyValueStore):
        return _multi_versioned
    return None


def run_query(store: Any, query: Any, bound: PositionBound, partition: int) -> QueryResult:
    """`query` answered by `store`, the copy of `partition`, within `bound`."""
    kind = type(query)
    if isinstance(store, VersionedKeyValueStore) and kind in (KeyQuery, RangeQuery):
        raise NotImplementedError(f"Versioned stores do not support {kind.__name__} queries at this time.")
    if kind is WindowRangeQuery and isinstance(store, WindowStore) and query.time_from is None:
        return QueryResult.for_failure(  # Kafka Streams' window store turns it down before its position is read
            FailureReason.UNKNOWN_QUERY_TYPE,
            "WindowStores only supports WindowRangeQuery.withWindowStartRange. Got: " + str(query))
    if kind is TimestampedWindowRangeWithHeadersQuery and (
            (isinstance(store, TimestampedWindowStoreWithHeaders) and query.time_from is None)
            or (isinstance(store, SessionStoreWithHeaders) and query.key is None)):
        return QueryResult.for_failure(  # turned down before the store's position is read, as in Kafka Streams
            FailureReason.UNKNOWN_QUERY_TYPE, f"{type(store).__name__} does not answer {query}")
    position: Position = getattr(store, "position", None) or Position()
    handler = _handler(store, query)
    if not bound.permits(position, partition):
        result = QueryResult.not_up_to_bound(position, bound, partition)
    elif handler is None:
        result = QueryResult.for_unknown_query_type(query, store)
    else:
        try:
            result = QueryResult.for_result(handler(store, query))
        except InvalidStateStoreError:
            raise
        except Exception as exc:
            result = QueryResult.for_failure(FailureReason.STORE_EXCEPTION, f"{type(exc).__name__}: {exc}")
    result.set_position(position.copy())
    return result
