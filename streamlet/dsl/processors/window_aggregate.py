"""Windowed `aggregate`, `reduce` and `count`: fold each record into every window it falls into.

As Kafka Streams' window aggregation: a record with a null key is dropped; its windows come from its
timestamp (`TimeWindows.windows_for`); a window whose end is at or before the stream time this
processor has observed minus the grace period is closed, and the record is dropped for it (logged
as a skipped record for an expired window). Each updated window is stored with the largest
timestamp of the records folded into it, and that is the timestamp of the update sent downstream,
keyed by `Windowed(key, window)`: at once, or, when the window store caches, when its cache flushes
(what Kafka Streams' timestamped tuple forwarder does).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.processors.aggregate import Aggregator, Initializer, StreamAggregateSupplier
from streamlet.dsl.processors.forwarding import TimestampedTupleForwarder, log_skipped
from streamlet.dsl.time_windows import TimeWindows
from streamlet.errors import TopologyError
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.window.api import TimestampedWindowStore
from streamlet.windowed import TimeWindow, Windowed

log = logging.getLogger("streamlet.dsl")


def reduce_initializer() -> Any:
    return None


def reducing_aggregator(reducer: Callable[[Any, Any], Any]) -> Aggregator:
    """A reducer as an aggregator: the first value as is, then `reducer(aggregate, value)`."""

    def aggregate(_key: Any, value: Any, aggregate: Any) -> Any:
        return value if aggregate is None else reducer(aggregate, value)

    return aggregate


class WindowAggregateSupplier(StreamAggregateSupplier):
    """Makes window aggregate processors; a downstream table node may ask it to send old values."""

    def __init__(self, store_name: str, windows: TimeWindows, initializer: Initializer, aggregator: Aggregator) -> None:
        super().__init__(store_name, initializer, aggregator)
        self.windows = windows

    def __call__(self) -> Processor:
        return WindowAggregate(self.store_name, self.windows, self.initializer, self.aggregator, self.send_old_values)


class WindowedAggregation(Processor):
    """What time-window and session aggregations share: their store (of `_store_type`), its tuple
    forwarder, and the stream time they observed (records with a null key are dropped, logged)."""

    _store: Any
    _store_type: type = TimestampedWindowStore
    _store_kind = "a timestamped window store for a windowed aggregation"

    def __init__(self, store_name: str, send_old_values: bool) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values
        self._observed_stream_time = -1

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self._store_name)
        if not isinstance(store, self._store_type):
            raise TopologyError(f"state store {self._store_name!r} must be {self._store_kind}, "
                                f"got {type(store).__name__}")
        self._store = store
        self._forwarder = TimestampedTupleForwarder(self._store, context, self._send_old_values)

    def _observe(self, record: Record) -> bool:
        """Advance stream time with the record; False (logged) for a record without a key."""
        if record.key is None:
            log_skipped(self.context, "null key")
            return False
        if record.timestamp > self._observed_stream_time:
            self._observed_stream_time = record.timestamp
        return True


class WindowAggregate(WindowedAggregation):
    _store: TimestampedWindowStore

    def __init__(self, store_name: str, windows: TimeWindows, initializer: Initializer, aggregator: Aggregator,
                 send_old_values: bool) -> None:
        super().__init__(store_name, send_old_values)
        self._windows = windows
        self._initializer = initializer
        self._aggregator = aggregator

    # `CarriesProgress`: the observed stream time outlives a task rebuilt per batch (the Spark engine).
    def carried_progress(self) -> int:
        return self._observed_stream_time

    def resume_progress(self, progress: int) -> None:
        self._observed_stream_time = max(self._observed_stream_time, int(progress))

    def process(self, record: Record) -> None:
        if not self._observe(record):
            return
        key, timestamp = record.key, record.timestamp
        close_time = self._observed_stream_time - self._windows.grace_ms
        store, forward = self._store, self._forwarder.maybe_forward
        for window in self._windows.windows_for(timestamp):
            if window.end <= close_time:
                self._log_expired(record, window, close_time)
                continue
            stored = store.fetch(key, window.start)
            if stored is None:
                old = self._initializer()
                new_timestamp = timestamp
            else:
                old = stored.value
                new_timestamp = max(timestamp, stored.timestamp)
            new = self._aggregator(key, record.value, old)
            store.put(key, ValueAndTimestamp(new, new_timestamp), window.start)
            forward(Record(Windowed(key, window), Change(new, old), new_timestamp, record.headers))

    def _log_expired(self, record: Record, window: TimeWindow, close_time: int) -> None:
        """Kafka Streams logs (and counts as dropped) each record it drops for a closed window."""
        meta = self.context.record_metadata()
        where = "topic, partition and offset not known" if meta is None else (
            f"topic=[{meta.topic}] partition=[{meta.partition}] offset=[{meta.offset}]")
        log.warning("Skipping record for expired window. %s timestamp=[%d] window=[%d,%d) expiration=[%d] "
                    "streamTime=[%d]", where, record.timestamp, window.start, window.end, close_time,
                    self._observed_stream_time)
