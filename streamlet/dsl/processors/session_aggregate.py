"""Session `aggregate`, `reduce` and `count` (Kafka Streams' `KStreamSessionWindowAggregate`).

For each record (null keys are dropped): the key's sessions that end no earlier than `timestamp - gap`
and start no later than `timestamp + gap` are merged with the record's own `[timestamp, timestamp]`,
their aggregates folded into one with the merger (in the store's order: by end, then start). If the
merged session ended before stream time minus gap minus grace, the record is dropped as late.
Otherwise each merged session is removed (a tombstone update downstream), the record is aggregated
into the merged value, and the merged session is stored and sent. Updates are timestamped with the
session's end; with caching on, the store's cache forwards them at flush instead. With
`on_window_close` nothing is sent per update: after each record, the sessions that ended before the
close time (stream time minus gap minus grace) since the last emit are sent once, by end, then key,
each timestamped with its end (see window_emit.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.emit_strategy import EmitStrategy
from streamlet.dsl.processors.aggregate import Aggregator, Initializer, StreamAggregateSupplier
from streamlet.dsl.processors.window_aggregate import WindowedAggregation
from streamlet.dsl.session_windows import SessionWindows
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import KeyValue, Record
from streamlet.stores.session.api import SessionStore
from streamlet.windowed import SessionWindow, Windowed

log = logging.getLogger("streamlet.dsl")

Merger = Callable[[Any, Any, Any], Any]
"""`merger(key, aggregate_one, aggregate_two)`: two sessions' aggregates as one."""


class SessionAggregateSupplier(StreamAggregateSupplier):
    def __init__(self, store_name: str, windows: SessionWindows, initializer: Initializer, aggregator: Aggregator,
                 merger: Merger, emit_strategy: EmitStrategy | None = None) -> None:
        super().__init__(store_name, initializer, aggregator)
        self.windows = windows
        self.merger = merger
        self.emit_strategy = emit_strategy or EmitStrategy.on_window_update()

    def __call__(self) -> Processor:
        return SessionAggregate(self)


class SessionAggregate(WindowedAggregation):
    _store: SessionStore
    _store_type = SessionStore
    _store_kind = "a session store for a session aggregation"

    def __init__(self, supplier: SessionAggregateSupplier) -> None:
        super().__init__(supplier.store_name, supplier.send_old_values, supplier.emit_strategy)
        self._gap = supplier.windows.gap_ms
        self._grace = supplier.windows.grace_ms
        self._initializer = supplier.initializer
        self._aggregator = supplier.aggregator
        self._merger = supplier.merger
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
        close_time = self._observed_stream_time - self._grace - self._gap
        store, merger = self._store, self._merger
        merged: list[KeyValue] = []
        start = end = timestamp
        aggregate = self._initializer()
        with store.find_sessions(key, timestamp - self._gap, timestamp + self._gap) as sessions:
            for session in sessions:
                merged.append(session)
                aggregate = merger(key, aggregate, session.value)
                window = session.key.window
                start, end = min(start, window.start), max(end, window.end)
        if end < close_time:
            self._log_expired_inclusive(record, start, end, close_time)
        else:
            sends, forward = self._sends_updates, self._forward_update
            if merged and (start, end) != (timestamp, timestamp):
                for session in merged:
                    store.remove(session.key)
                    if sends:
                        forward(Record(session.key, Change(None, session.value), session.key.window.end))
            aggregate = self._aggregator(key, record.value, aggregate)
            session_key = Windowed(key, SessionWindow(start, end))
            store.put(session_key, aggregate)
            if sends:
                forward(Record(session_key, Change(aggregate, None), end))
        self._emit_closed(record, close_time)

    def _emit_range_lower_bound(self, last_emit_close_time: int) -> int:
        return max(0, last_emit_close_time)

    def _emit_range_upper_bound(self, window_close_time: int) -> int:
        return window_close_time - 1  # a session's end is inclusive

    def _should_range_fetch(self, last_emit_close_time: int, lower: int, upper: int) -> bool:
        return upper >= lower  # a session may be a single point

    def _closed_windows(self, lower: int, upper: int) -> list[KeyValue]:
        return self._store.find_sessions_ending_between(lower, upper)

    def _emitted_timestamp(self, kv: KeyValue) -> int:
        return int(kv.key.window.end)

    def _emitted_value(self, kv: KeyValue) -> Any:
        return kv.value
