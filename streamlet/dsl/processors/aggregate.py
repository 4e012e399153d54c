"""KGroupedStream's `aggregate`, `reduce` and `count`: fold each record into the key's stored value.

As in Kafka Streams: records with a null key or value are dropped (and logged); the stored
aggregate carries the largest timestamp of the records folded into it, and that is the timestamp of
the update sent downstream; the update is a `Change(new, old)`.

An aggregation materialized in a versioned store (`Materialized.as_(versioned supplier)`) keeps each
aggregate as a version at that timestamp; an update the store refuses (older than its grace period)
is neither stored nor sent on, as Kafka Streams' `KStreamAggregate` / `KStreamReduce` do with a
versioned store. Separate processor classes keep the timestamped path as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.processors.forwarding import (
    TimestampedTupleForwarder,
    log_skipped,
    timestamped_store,
    versioned_store,
)
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.keyvalue.api import TimestampedKeyValueStore
from streamlet.stores.versioned.api import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    VersionedKeyValueStore,
)

_new = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)

Initializer = Callable[[], Any]
Aggregator = Callable[[Any, Any, Any], Any]
Reducer = Callable[[Any, Any], Any]


class StreamAggregateSupplier:
    """Makes aggregate processors; a downstream table node may ask it to send old values."""

    def __init__(self, store_name: str, initializer: Initializer, aggregator: Aggregator) -> None:
        self.store_name = store_name
        self.initializer = initializer
        self.aggregator = aggregator
        self.send_old_values = False
        self.versioned = False  # the store is a versioned one

    def enable_sending_old_values(self) -> None:
        self.send_old_values = True

    def __call__(self) -> Processor:
        kind = VersionedStreamAggregate if self.versioned else StreamAggregate
        return kind(self.store_name, self.initializer, self.aggregator, self.send_old_values)


class StreamReduceSupplier:
    def __init__(self, store_name: str, reducer: Reducer) -> None:
        self.store_name = store_name
        self.reducer = reducer
        self.send_old_values = False
        self.versioned = False  # the store is a versioned one

    def enable_sending_old_values(self) -> None:
        self.send_old_values = True

    def __call__(self) -> Processor:
        kind = VersionedStreamReduce if self.versioned else StreamReduce
        return kind(self.store_name, self.reducer, self.send_old_values)


class StreamAggregate(Processor):
    _store: TimestampedKeyValueStore
    _forwarder: TimestampedTupleForwarder

    def __init__(self, store_name: str, initializer: Initializer, aggregator: Aggregator,
                 send_old_values: bool) -> None:
        self._store_name = store_name
        self._initializer = initializer
        self._aggregator = aggregator
        self._send_old_values = send_old_values
        # `count()`: the fold inline (0, then +1) instead of a Python call per record.
        self._counting = initializer is count_initializer and aggregator is count_aggregator

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = timestamped_store(context, self._store_name)
        self._forwarder = TimestampedTupleForwarder(self._store, context, self._send_old_values)
        self._caching = self._forwarder.caching  # with a cache, updates go downstream at its flush

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if key is None or value is None:
            log_skipped(self.context, "null key or value")
            return
        store = self._store
        stored = store.get(key)
        timestamp = record.timestamp
        if stored is None:
            old = 0 if self._counting else self._initializer()
        else:
            old = stored[0]
            if stored[1] > timestamp:
                timestamp = stored[1]
        new = old + 1 if self._counting else self._aggregator(key, value, old)
        store.put(key, _new(ValueAndTimestamp, (new, timestamp)))
        if not self._caching:
            self._forwarder.maybe_forward(
                Record(key, Change(new, old if self._send_old_values else None), timestamp, record.headers)
            )


class StreamReduce(Processor):
    _store: TimestampedKeyValueStore
    _forwarder: TimestampedTupleForwarder

    def __init__(self, store_name: str, reducer: Reducer, send_old_values: bool) -> None:
        self._store_name = store_name
        self._reducer = reducer
        self._send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = timestamped_store(context, self._store_name)
        self._forwarder = TimestampedTupleForwarder(self._store, context, self._send_old_values)
        self._caching = self._forwarder.caching  # with a cache, updates go downstream at its flush

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if key is None or value is None:
            log_skipped(self.context, "null key or value")
            return
        store = self._store
        stored = store.get(key)
        timestamp = record.timestamp
        if stored is None:
            old = None
            new = value
        else:
            old = stored[0]
            new = self._reducer(old, value)
            if stored[1] > timestamp:
                timestamp = stored[1]
        store.put(key, _new(ValueAndTimestamp, (new, timestamp)))
        if not self._caching:
            self._forwarder.maybe_forward(
                Record(key, Change(new, old if self._send_old_values else None), timestamp, record.headers)
            )


class _VersionedFold(Processor):
    """The fold of an aggregation into a versioned store; `_start()` is the aggregate a key starts from
    (None: its first value), `_fold(key, value, aggregate)` the next one."""

    _store_name: str
    _send_old_values: bool

    def init(self, context: ProcessorContext) -> None:
        Processor.init(self, context)  # not the timestamped aggregation's init, next in the MRO
        self._versioned: VersionedKeyValueStore = versioned_store(context, self._store_name)
        self._forwarder = TimestampedTupleForwarder(self._versioned, context, self._send_old_values)

    def _start(self) -> Any:
        raise NotImplementedError

    def _fold(self, key: Any, value: Any, aggregate: Any) -> Any:
        raise NotImplementedError

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if key is None or value is None:
            log_skipped(self.context, "null key or value")
            return
        found = self._versioned.get(key)
        if found is None:
            old, timestamp = self._start(), record.timestamp
            new = value if old is None else self._fold(key, value, old)
        else:
            old, timestamp = found.value, max(record.timestamp, found.timestamp)
            new = self._fold(key, value, old)
        code = self._versioned.put(key, new, timestamp)
        if code != PUT_RETURN_CODE_NOT_PUT:
            change = Change(new, old if self._send_old_values else None, code == PUT_RETURN_CODE_VALID_TO_UNDEFINED)
            self._forwarder.maybe_forward(Record(key, change, timestamp, record.headers))


class VersionedStreamAggregate(_VersionedFold, StreamAggregate):
    """`StreamAggregate` into a versioned store."""

    def _start(self) -> Any:
        return self._initializer()

    def _fold(self, key: Any, value: Any, aggregate: Any) -> Any:
        return self._aggregator(key, value, aggregate)


class VersionedStreamReduce(_VersionedFold, StreamReduce):
    """`StreamReduce` into a versioned store."""

    def _start(self) -> Any:
        return None

    def _fold(self, key: Any, value: Any, aggregate: Any) -> Any:
        return self._reducer(aggregate, value)


def count_initializer() -> int:
    return 0


def count_aggregator(key: Any, value: Any, count: int) -> int:
    return count + 1
