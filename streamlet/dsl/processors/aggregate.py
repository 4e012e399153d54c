"""KGroupedStream's `aggregate`, `reduce` and `count`: fold each record into the key's stored value.

As in Kafka Streams: records with a null key or value are dropped (and logged); the stored
aggregate carries the largest timestamp of the records folded into it, and that is the timestamp of
the update sent downstream; the update is a `Change(new, old)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.processors.forwarding import TimestampedTupleForwarder, log_skipped, timestamped_store
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.keyvalue.api import TimestampedKeyValueStore

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

    def enable_sending_old_values(self) -> None:
        self.send_old_values = True

    def __call__(self) -> Processor:
        return StreamAggregate(self.store_name, self.initializer, self.aggregator, self.send_old_values)


class StreamReduceSupplier:
    def __init__(self, store_name: str, reducer: Reducer) -> None:
        self.store_name = store_name
        self.reducer = reducer
        self.send_old_values = False

    def enable_sending_old_values(self) -> None:
        self.send_old_values = True

    def __call__(self) -> Processor:
        return StreamReduce(self.store_name, self.reducer, self.send_old_values)


class StreamAggregate(Processor):
    _store: TimestampedKeyValueStore
    _forwarder: TimestampedTupleForwarder

    def __init__(self, store_name: str, initializer: Initializer, aggregator: Aggregator,
                 send_old_values: bool) -> None:
        self._store_name = store_name
        self._initializer = initializer
        self._aggregator = aggregator
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
            old = self._initializer()
        else:
            old = stored[0]
            if stored[1] > timestamp:
                timestamp = stored[1]
        new = self._aggregator(key, value, old)
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


def count_initializer() -> int:
    return 0


def count_aggregator(key: Any, value: Any, count: int) -> int:
    return count + 1
