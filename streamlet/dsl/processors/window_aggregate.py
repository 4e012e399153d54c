"""Windowed `aggregate`, `reduce` and `count`: fold each record into every window it falls into.

As Kafka Streams' window aggregation: a record with a null key is dropped; its windows come from its
timestamp (`TimeWindows.windows_for`); a window whose end is at or before the stream time this
processor has observed minus the grace period is closed, and the record is dropped for it (logged
as a skipped record for an expired window). Each updated window is stored with the largest
timestamp of the records folded into it, and that is the timestamp of the update sent downstream,
keyed by `Windowed(key, window)`: at once, or, when the window store caches, when its cache flushes
(what Kafka Streams' timestamped tuple forwarder does). With `EmitStrategy.on_window_close()` nothing
is sent per update; after each record the windows that closed since the last look are sent once
(see window_emit.py): those whose end is at or before the close time (stream time minus grace).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.emit_strategy import EmitStrategy
from streamlet.dsl.processors.aggregate import (
    Aggregator,
    Initializer,
    StreamAggregateSupplier,
    count_aggregator,
    count_initializer,
)
from streamlet.dsl.processors.forwarding import TimestampedTupleForwarder, log_skipped
from streamlet.dsl.processors.window_emit import NO_TIMESTAMP, FinalResultEmitter, time_ordered
from streamlet.dsl.time_windows import TimeWindows
from streamlet.errors import TopologyError
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import KeyValue, Record
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.window.api import TimestampedWindowStore
from streamlet.windowed import TimeWindow, Windowed

log = logging.getLogger("streamlet.dsl")
_new = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)


def reduce_initializer() -> Any:
    return None


def reducing_aggregator(reducer: Callable[[Any, Any], Any]) -> Aggregator:
    """A reducer as an aggregator: the first value as is, then `reducer(aggregate, value)`."""

    def aggregate(_key: Any, value: Any, aggregate: Any) -> Any:
        return value if aggregate is None else reducer(aggregate, value)

    return aggregate


class WindowAggregateSupplier(StreamAggregateSupplier):
    """Makes window aggregate processors; a downstream table node may ask it to send old values."""

    def __init__(self, store_name: str, windows: TimeWindows, initializer: Initializer, aggregator: Aggregator,
                 emit_strategy: EmitStrategy | None = None) -> None:
        super().__init__(store_name, initializer, aggregator)
        self.windows: Any = windows
        self.emit_strategy = emit_strategy or EmitStrategy.on_window_update()

    def __call__(self) -> Processor:
        return WindowAggregate(self.store_name, self.windows, self.initializer, self.aggregator, self.send_old_values,
                               self.emit_strategy)


class WindowedAggregation(Processor):
    """What time-window and session aggregations share: their store (of `_store_type`), its tuple
    forwarder, and the stream time they observed (records with a null key are dropped, logged).
    With `on_window_close` there is no tuple forwarder (the store's cache forwards nothing) but an
    emitter of final results."""

    _store: Any
    _store_type: type = TimestampedWindowStore
    _store_kind = "a timestamped window store for a windowed aggregation"
    _emitter: FinalResultEmitter | None = None

    def __init__(self, store_name: str, send_old_values: bool, emit_strategy: EmitStrategy | None = None) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values
        self._observed_stream_time = -1
        self._emit_final = emit_strategy is not None and emit_strategy.on_close

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self._store_name)
        if not isinstance(store, self._store_type):
            raise TopologyError(f"state store {self._store_name!r} must be {self._store_kind}, "
                                f"got {type(store).__name__}")
        self._store = store
        if self._emit_final:
            self._emitter = FinalResultEmitter(context, self._store_name)
        else:
            self._forwarder = TimestampedTupleForwarder(self._store, context, self._send_old_values)

    # `CarriesProgress`: the observed stream time outlives a task rebuilt per batch (the last emit is in the
    # task's processor metadata; progress saved before issue 23 carried it here, as [observed, last emit]).
    def carried_progress(self) -> Any:
        return self._observed_stream_time

    def resume_progress(self, progress: Any) -> None:
        observed, last_emit = (progress, NO_TIMESTAMP) if isinstance(progress, int) else progress
        self._observed_stream_time = max(self._observed_stream_time, int(observed))
        if self._emitter is not None and int(last_emit) != NO_TIMESTAMP:
            self._emitter.last_emit_close_time = int(last_emit)

    def _log_expired_inclusive(self, record: Record, start: int, end: int, close_time: int) -> None:
        """Kafka Streams' warning for a record dropped for a closed window whose end is inclusive (sliding
        and session windows; time windows log `[start,end)`, see `WindowAggregate._log_expired`)."""
        meta = self.context.record_metadata()
        where = "Topic, partition, and offset not known." if meta is None else (
            f"topic=[{meta.topic}] partition=[{meta.partition}] offset=[{meta.offset}]")
        log.warning("Skipping record for expired window. %s timestamp=[%d] window=[%d,%d] expiration=[%d] "
                    "streamTime=[%d]", where, record.timestamp, start, end, close_time, self._observed_stream_time)

    def _forward_update(self, record: Record) -> None:
        """Send an update now or through the cache; nothing with `on_window_close`."""
        if not self._emit_final:
            self._forwarder.maybe_forward(record)

    def _emit_closed(self, record: Record, window_close_time: int) -> None:
        """`on_window_close`: send the windows closed since the last emit (Kafka Streams' rules)."""
        emitter = self._emitter
        if emitter is None or not emitter.due(window_close_time):
            return
        upper = self._emit_range_upper_bound(window_close_time)
        if upper < 0:
            return  # no window has ever closed
        lower = self._emit_range_lower_bound(emitter.last_emit_close_time)
        if not self._should_range_fetch(emitter.last_emit_close_time, lower, upper):
            return
        emitter.emit(record, self._closed_windows(lower, upper), window_close_time, self._emitted_timestamp,
                     self._emitted_value)

    def _closed_windows(self, lower: int, upper: int) -> list[KeyValue]:
        """The windows starting in `[lower, upper]`, in a time-ordered store's order."""
        time_ordered_fetch = getattr(self._store, "fetch_all_time_ordered", None)
        if time_ordered_fetch is not None:
            return time_ordered_fetch(lower, upper)
        with self._store.fetch_all(lower, upper) as entries:
            return time_ordered(entries, getattr(self._store, "serialized_key", lambda key: key))

    def _emitted_timestamp(self, kv: KeyValue) -> int:
        return int(kv.value.timestamp)

    def _emitted_value(self, kv: KeyValue) -> Any:
        return kv.value.value

    def _emit_range_lower_bound(self, last_emit_close_time: int) -> int:
        raise NotImplementedError

    def _emit_range_upper_bound(self, window_close_time: int) -> int:
        raise NotImplementedError

    def _should_range_fetch(self, last_emit_close_time: int, lower: int, upper: int) -> bool:
        return True

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
                 send_old_values: bool, emit_strategy: EmitStrategy | None = None) -> None:
        super().__init__(store_name, send_old_values, emit_strategy)
        self._windows = windows
        self._initializer = initializer
        self._aggregator = aggregator
        # `count()`: the fold inline (0, then +1) instead of two Python calls per record and window.
        self._counting = initializer is count_initializer and aggregator is count_aggregator
        self._sends_updates = False

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        # Whether `_forward_update` would send anything: not with `on_window_close`, nor when the store's cache
        # forwards at flush (the default). When it would not, the per-record updates are not even built.
        self._sends_updates = not self._emit_final and not self._forwarder.caching

    def process(self, record: Record) -> None:
        if not self._observe(record):
            return
        key, timestamp = record.key, record.timestamp
        close_time = self._observed_stream_time - self._windows.grace_ms
        store, forward, sends, counting = self._store, self._forward_update, self._sends_updates, self._counting
        for window in self._windows.windows_for(timestamp):
            if window.end <= close_time:
                self._log_expired(record, window, close_time)
                continue
            stored = store.fetch(key, window.start)
            if stored is None:
                old = 0 if counting else self._initializer()
                new_timestamp = timestamp
            else:
                old = stored.value
                new_timestamp = max(timestamp, stored.timestamp)
            new = old + 1 if counting else self._aggregator(key, record.value, old)
            store.put(key, _new(ValueAndTimestamp, (new, new_timestamp)), window.start)
            if sends:
                forward(Record(Windowed(key, window), Change(new, old), new_timestamp, record.headers))
        self._emit_closed(record, close_time)

    def _emit_range_lower_bound(self, last_emit_close_time: int) -> int:
        if last_emit_close_time == NO_TIMESTAMP:
            return 0
        return max(0, last_emit_close_time - self._windows.size_ms) + 1

    def _emit_range_upper_bound(self, window_close_time: int) -> int:
        return window_close_time - self._windows.size_ms

    def _should_range_fetch(self, last_emit_close_time: int, lower: int, upper: int) -> bool:
        """Not when no window ends between the last emit and now (end exclusive: `lower - 1`)."""
        if last_emit_close_time == NO_TIMESTAMP:
            return True
        return self._windows.windows_for(upper) != self._windows.windows_for(lower - 1)

    def _log_expired(self, record: Record, window: TimeWindow, close_time: int) -> None:
        """Kafka Streams logs (and counts as dropped) each record it drops for a closed window."""
        meta = self.context.record_metadata()
        where = "topic, partition and offset not known" if meta is None else (
            f"topic=[{meta.topic}] partition=[{meta.partition}] offset=[{meta.offset}]")
        log.warning("Skipping record for expired window. %s timestamp=[%d] window=[%d,%d) expiration=[%d] "
                    "streamTime=[%d]", where, record.timestamp, window.start, window.end, close_time,
                    self._observed_stream_time)
