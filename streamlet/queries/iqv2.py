"""Interactive queries v2 (Kafka Streams' IQv2): a `StateQueryRequest` carries one typed query to a store.

    request = (StateQueryRequest.in_store("counts").with_query(KeyQuery.with_key("alice"))
               .with_partitions({0}).with_position_bound(PositionBound.at(position)))
    result = streams.query(request)          # a StateQueryResult: one QueryResult per partition asked
    result.only_partition_result().get_result()

The queries, as in Kafka Streams: `KeyQuery` and `RangeQuery` (key-value stores, plain values),
`TimestampedKeyQuery` and `TimestampedRangeQuery` (timestamped key-value stores, `ValueAndTimestamp`),
`WindowKeyQuery` and `WindowRangeQuery` (window stores; a session store answers
`WindowRangeQuery.with_key`), `VersionedKeyQuery` and `MultiVersionedKeyQuery` (versioned stores),
`TimestampedKeyWithHeadersQuery` and `TimestampedRangeWithHeadersQuery` (timestamped key-value stores with
headers, `ReadOnlyRecord` answers with the stored headers), `TimestampedWindowKeyWithHeadersQuery` and
`TimestampedWindowRangeWithHeadersQuery` (timestamped window stores with headers; a session store with headers
answers `TimestampedWindowRangeWithHeadersQuery.with_key`). Each
is built by its static factories and `with_...`/`as_of`/... calls that return a new query. A store that
cannot answer a query type answers the failure `UNKNOWN_QUERY_TYPE` rather than raising.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, NamedTuple, Self

from streamlet.stores.position import Position


def _millis(time: int | datetime) -> int:
    if isinstance(time, datetime):
        if time.tzinfo is None:
            raise ValueError(f"a query time must be an aware datetime or epoch ms, got naive {time!r}")
        return int(time.timestamp() * 1000)
    if isinstance(time, bool) or not isinstance(time, int):
        raise TypeError(f"a query time must be int epoch ms or an aware datetime, got {time!r}")
    return time


def _key(key: Any) -> Any:
    if key is None:
        raise ValueError("key cannot be null")
    return key


class ResultOrder(enum.Enum):
    """The order a range or multi-version query answers in (Kafka Streams' `ResultOrder`)."""

    ANY = "ANY"
    ASCENDING = "ASCENDING"
    DESCENDING = "DESCENDING"


@dataclass(frozen=True)
class PositionBound:
    """How current a store must be to answer: `unbounded()` or `at(position)` (Kafka Streams'
    `PositionBound`). A store whose position for its partition is behind the bound on any topic the
    bound names for that partition answers the failure `NOT_UP_TO_BOUND`."""

    bound: Position | None = None

    @staticmethod
    def unbounded() -> PositionBound:
        """Any store state answers."""
        return PositionBound(None)

    @staticmethod
    def at(position: Position) -> PositionBound:
        """Only stores that have seen at least `position` (for their partition) answer."""
        return PositionBound(position.copy())

    def is_unbounded(self) -> bool:
        """Whether any store state answers (no bound)."""
        return self.bound is None

    def position(self) -> Position:
        """The bound's position (empty when unbounded)."""
        return Position() if self.bound is None else self.bound.copy()

    def permits(self, seen: Position, partition: int) -> bool:
        """Whether a store of `partition` that has seen `seen` is up to this bound."""
        if self.bound is None:
            return True
        for topic in self.bound.get_topics():
            wanted = self.bound.get_partition_positions(topic).get(partition)
            if wanted is not None and seen.get_partition_positions(topic).get(partition, -1) < wanted:
                return False
        return True


@dataclass(frozen=True)
class _Keyed:
    key: Any
    skip_cache_flag: bool = False

    @classmethod
    def with_key(cls, key: Any) -> Self:
        """A query for `key` (not None)."""
        return cls(_key(key))

    def skip_cache(self) -> Self:
        """The same query, read below the store's cache (Kafka Streams' `skipCache()`)."""
        return replace(self, skip_cache_flag=True)

    def get_key(self) -> Any:
        """The key the query asks for."""
        return self.key

    def is_skip_cache(self) -> bool:
        """Whether the query reads below the store's cache."""
        return self.skip_cache_flag


class KeyQuery(_Keyed):
    """The value of one key of a key-value store (plain even from a timestamped store), or None."""


class TimestampedKeyQuery(_Keyed):
    """The `ValueAndTimestamp` of one key of a timestamped key-value store, or None."""


class TimestampedKeyWithHeadersQuery(_Keyed):
    """One key of a timestamped key-value store with headers, as a `ReadOnlyRecord` (key, value, timestamp,
    headers), or None (Kafka Streams' `TimestampedKeyWithHeadersQuery`, KIP-1356)."""


class ReadOnlyRecord(NamedTuple):
    """A stored entry with the timestamp and headers it was written with, as the header-returning queries answer
    it (Kafka Streams' `ReadOnlyRecord`). `headers` are (name, value) pairs in order; a value may be None."""

    key: Any
    value: Any
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class _Range:
    lower: Any = None
    upper: Any = None
    result_order: ResultOrder = ResultOrder.ANY

    @classmethod
    def with_range(cls, lower: Any, upper: Any) -> Self:
        """Keys from `lower` to `upper`, both inclusive."""
        return cls(lower, upper)

    @classmethod
    def with_lower_bound(cls, lower: Any) -> Self:
        """Keys from `lower` (inclusive) on."""
        return cls(lower, None)

    @classmethod
    def with_upper_bound(cls, upper: Any) -> Self:
        """Keys up to `upper` (inclusive)."""
        return cls(None, upper)

    @classmethod
    def with_no_bounds(cls) -> Self:
        """Every key."""
        return cls()

    def get_lower_bound(self) -> Any:
        """The lower bound (inclusive), or None for none."""
        return self.lower

    def get_upper_bound(self) -> Any:
        """The upper bound (inclusive), or None for none."""
        return self.upper

    def with_descending_keys(self) -> Self:
        """The same range, answered in descending key order."""
        return replace(self, result_order=ResultOrder.DESCENDING)

    def with_ascending_keys(self) -> Self:
        """The same range, answered in ascending key order."""
        return replace(self, result_order=ResultOrder.ASCENDING)


class RangeQuery(_Range):
    """The entries of a key-value store with keys in a range (bounds inclusive), as a `KeyValueIterator`
    in serialized-key order (`with_descending_keys()`: reversed); plain values."""


class TimestampedRangeQuery(_Range):
    """`RangeQuery` over a timestamped key-value store, answering `ValueAndTimestamp` values."""


class TimestampedRangeWithHeadersQuery(_Range):
    """`RangeQuery` over a timestamped key-value store with headers, answering an iterator of `ReadOnlyRecord`
    (Kafka Streams' `TimestampedRangeWithHeadersQuery`, KIP-1356)."""


@dataclass(frozen=True)
class _KeyWindowStarts:
    key: Any
    time_from: int
    time_to: int

    @classmethod
    def with_key_and_window_start_range(cls, key: Any, time_from: int | datetime, time_to: int | datetime) -> Self:
        """The windows of `key` starting in `[time_from, time_to]` (epoch ms or aware datetimes)."""
        return cls(_key(key), _millis(time_from), _millis(time_to))

    def get_key(self) -> Any:
        """The key the query asks for."""
        return self.key

    def get_time_from(self) -> int:
        """The earliest window start asked for (inclusive)."""
        return self.time_from

    def get_time_to(self) -> int:
        """The latest window start asked for (inclusive)."""
        return self.time_to


class WindowKeyQuery(_KeyWindowStarts):
    """The windows of one key of a window store whose start lies in `[time_from, time_to]`, as an
    iterator of `KeyValue(window_start, value)`, oldest first; plain values."""


class TimestampedWindowKeyWithHeadersQuery(_KeyWindowStarts):
    """The windows of one key of a timestamped window store with headers whose start lies in `[time_from,
    time_to]`, as an iterator of `ReadOnlyRecord(Windowed(key, window), value, timestamp, headers)`, oldest
    first (Kafka Streams' `TimestampedWindowKeyWithHeadersQuery`, KIP-1356)."""


@dataclass(frozen=True)
class _KeyOrWindowStarts:
    key: Any = None
    time_from: int | None = None
    time_to: int | None = None

    @classmethod
    def with_key(cls, key: Any) -> Self:
        """A query for `key` (not None)."""
        return cls(_key(key))

    @classmethod
    def with_window_start_range(cls, time_from: int | datetime, time_to: int | datetime) -> Self:
        """Every key's windows starting in `[time_from, time_to]` (epoch ms or aware datetimes)."""
        return cls(None, _millis(time_from), _millis(time_to))

    def get_key(self) -> Any:
        """The key the query asks for."""
        return self.key

    def get_time_from(self) -> int | None:
        """The earliest window start asked for (inclusive)."""
        return self.time_from

    def get_time_to(self) -> int | None:
        """The latest window start asked for (inclusive)."""
        return self.time_to


class WindowRangeQuery(_KeyOrWindowStarts):
    """`with_window_start_range(from, to)`: every key's windows starting in the range (window stores),
    as `KeyValue(Windowed(key, window), value)`; `with_key(key)`: one key's sessions (session stores)."""


class TimestampedWindowRangeWithHeadersQuery(_KeyOrWindowStarts):
    """`with_window_start_range(from, to)`: every key's windows starting in the range (timestamped window stores
    with headers); `with_key(key)`: one key's sessions (session stores with headers). Each answer is an iterator
    of `ReadOnlyRecord(Windowed(key, window), value, timestamp, headers)` (Kafka Streams'
    `TimestampedWindowRangeWithHeadersQuery`, KIP-1356)."""


@dataclass(frozen=True)
class VersionedKeyQuery:
    """One key of a versioned store: its latest version, or with `as_of(t)` the version valid at t, as a
    `VersionedRecord` with its `valid_to` (None for the latest), or None."""

    key: Any
    as_of_timestamp: int | None = None

    @staticmethod
    def with_key(key: Any) -> VersionedKeyQuery:
        """A query for `key` (not None)."""
        return VersionedKeyQuery(_key(key))

    def as_of(self, as_of_timestamp: int | datetime) -> VersionedKeyQuery:
        """The same query for the version valid at `as_of_timestamp` (epoch ms or an aware datetime)."""
        return replace(self, as_of_timestamp=_millis(as_of_timestamp))

    def get_key(self) -> Any:
        """The key the query asks for."""
        return self.key

    def get_as_of_timestamp(self) -> int | None:
        """The time asked for, or None for the latest version."""
        return self.as_of_timestamp


_MIN_TIME = -(2**63)
_MAX_TIME = 2**63 - 1


@dataclass(frozen=True)
class MultiVersionedKeyQuery:
    """The versions of one key of a versioned store valid at some time in `[from_time, to_time]`
    (unbounded by default), each a `VersionedRecord` with its `valid_to`, newest first unless
    `with_ascending_timestamps()`; an iterator, empty when there are none."""

    key: Any
    from_timestamp: int | None = None
    to_timestamp: int | None = None
    result_order: ResultOrder = ResultOrder.ANY

    @staticmethod
    def with_key(key: Any) -> MultiVersionedKeyQuery:
        """A query for `key` (not None)."""
        return MultiVersionedKeyQuery(_key(key))

    def from_time(self, from_time: int | datetime | None) -> MultiVersionedKeyQuery:
        """The same query, for versions still valid at or after `from_time` (None: no lower limit)."""
        return replace(self, from_timestamp=None if from_time is None else _millis(from_time))

    def to_time(self, to_time: int | datetime | None) -> MultiVersionedKeyQuery:
        """The same query, for versions valid from `to_time` or earlier (None: no upper limit)."""
        return replace(self, to_timestamp=None if to_time is None else _millis(to_time))

    def with_descending_timestamps(self) -> MultiVersionedKeyQuery:
        """The same query, newest version first."""
        return replace(self, result_order=ResultOrder.DESCENDING)

    def with_ascending_timestamps(self) -> MultiVersionedKeyQuery:
        """The same query, oldest version first."""
        return replace(self, result_order=ResultOrder.ASCENDING)

    def get_key(self) -> Any:
        """The key the query asks for."""
        return self.key

    def get_from_time(self) -> int:
        """The lower time limit (the smallest long when none was given)."""
        return _MIN_TIME if self.from_timestamp is None else self.from_timestamp

    def get_to_time(self) -> int:
        """The upper time limit (the largest long when none was given)."""
        return _MAX_TIME if self.to_timestamp is None else self.to_timestamp


Query = (KeyQuery | TimestampedKeyQuery | RangeQuery | TimestampedRangeQuery | WindowKeyQuery | WindowRangeQuery
         | VersionedKeyQuery | MultiVersionedKeyQuery | TimestampedKeyWithHeadersQuery
         | TimestampedRangeWithHeadersQuery | TimestampedWindowKeyWithHeadersQuery
         | TimestampedWindowRangeWithHeadersQuery)


@dataclass(frozen=True)
class StateQueryRequest:
    """One query to one store, over some or all partitions (Kafka Streams' `StateQueryRequest`).

    `StateQueryRequest.in_store(name).with_query(query)` asks every local partition; `.with_partitions({...})`
    only those, `.with_position_bound(PositionBound.at(p))` only stores up to `p`, `.require_active()` only
    active tasks of a running client (others answer `NOT_ACTIVE`). Each call returns a new request."""

    store_name: str
    query: Any = None
    partitions: frozenset[int] | None = None
    position_bound: PositionBound = PositionBound()
    active_only: bool = False
    execution_info: bool = False

    @staticmethod
    def in_store(name: str) -> _InStore:
        """The first step: the store to ask."""
        return _InStore(name)

    def with_partitions(self, partitions: Iterable[int]) -> StateQueryRequest:
        """The same request, for these partitions only (others a local copy holds do not answer)."""
        return replace(self, partitions=frozenset(partitions))

    def with_all_partitions(self) -> StateQueryRequest:
        """The same request, for every local partition (the default)."""
        return replace(self, partitions=None)

    def with_position_bound(self, position_bound: PositionBound) -> StateQueryRequest:
        """The same request, answered only by stores up to `position_bound`."""
        return replace(self, position_bound=position_bound)

    def require_active(self) -> StateQueryRequest:
        """The same request, answered only by active copies of a running client (others: `NOT_ACTIVE`)."""
        return replace(self, active_only=True)

    def enable_execution_info(self) -> StateQueryRequest:
        """The same request, asking stores to describe how they answered (`get_execution_info`)."""
        return replace(self, execution_info=True)

    def get_store_name(self) -> str:
        """The store asked."""
        return self.store_name

    def get_query(self) -> Any:
        """The query asked."""
        return self.query

    def is_all_partitions(self) -> bool:
        """Whether every local partition is asked."""
        return self.partitions is None

    def get_partitions(self) -> set[int]:
        """The partitions asked for; raises when all are (Kafka Streams' `getPartitions`)."""
        if self.partitions is None:
            raise ValueError("cannot list the partitions of a request for all partitions")
        return set(self.partitions)

    def get_position_bound(self) -> PositionBound:
        """The request's position bound."""
        return self.position_bound

    def is_require_active(self) -> bool:
        """Whether only active copies of a running client may answer."""
        return self.active_only

    def execution_info_enabled(self) -> bool:
        """Whether stores describe how they answered."""
        return self.execution_info


@dataclass(frozen=True)
class _InStore:
    """`StateQueryRequest.in_store(name)`, waiting for its query (Kafka Streams' `InStore`)."""

    name: str

    def with_query(self, query: Any) -> StateQueryRequest:
        return StateQueryRequest(self.name, query)
