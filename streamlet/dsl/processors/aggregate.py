"""KGroupedStream's `aggregate`, `reduce` and `count`: fold each record into the key's stored value.

As in Kafka Streams: records with a null key or value are dropped (and logged); the stored
aggregate carries the largest timestamp of the records folded into it, and that is the timestamp of
the update sent downstream; the update is a `Change(new, old)`.

An aggregation materialized in a versioned store (`Materialized.as_(versioned supplier)`) keeps each
aggregate as a version at that timestamp; an update the store refuses (older than its grace period)
is neither stored nor sent on, as Kafka Streams' `KStreamAggregate` / `KStreamReduce` do with a
versioned store. Separate processor classes keep the timestamped path as it was: those are compiled, in
`fold_processors.py`; the versioned ones and every supplier are here.
"""

from __future__ import annotations

from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.processors.fold_processors import Aggregator, Initializer, Reducer, StreamAggregate, StreamReduce
from streamlet.dsl.processors.forwarding import TimestampedTupleForwarder, log_skipped, versioned_store
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.versioned.api import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    VersionedKeyValueStore,
)

__all__ = ["Aggregator", "Initializer", "Reducer", "StreamAggregateSupplier", "StreamReduceSupplier",
           "count_aggregator", "count_initializer"]


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
        if self.versioned:
            return VersionedStreamAggregate(self.store_name, self.initializer, self.aggregator, self.send_old_values)
        counting = self.initializer is count_initializer and self.aggregator is count_aggregator
        return StreamAggregate(self.store_name, self.initializer, self.aggregator, self.send_old_values, counting)


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


class _VersionedFold(Processor):
    """The fold of an aggregation into a versioned store; `_start()` is the aggregate a key starts from
    (None: its first value), `_fold(key, value, aggregate)` the next one."""

    def __init__(self, store_name: str, send_old_values: bool) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
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


class VersionedStreamAggregate(_VersionedFold):
    """`StreamAggregate` into a versioned store."""

    def __init__(self, store_name: str, initializer: Initializer, aggregator: Aggregator,
                 send_old_values: bool) -> None:
        super().__init__(store_name, send_old_values)
        self._initializer = initializer
        self._aggregator = aggregator

    def _start(self) -> Any:
        return self._initializer()

    def _fold(self, key: Any, value: Any, aggregate: Any) -> Any:
        return self._aggregator(key, value, aggregate)


class VersionedStreamReduce(_VersionedFold):
    """`StreamReduce` into a versioned store."""

    def __init__(self, store_name: str, reducer: Reducer, send_old_values: bool) -> None:
        super().__init__(store_name, send_old_values)
        self._reducer = reducer

    def _start(self) -> Any:
        return None

    def _fold(self, key: Any, value: Any, aggregate: Any) -> Any:
        return self._reducer(aggregate, value)


def count_initializer() -> int:
    return 0


def count_aggregator(key: Any, value: Any, count: int) -> int:
    return count + 1
