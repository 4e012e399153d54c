"""Sliding-window `aggregate`, `reduce` and `count` (Kafka Streams' KStreamSlidingWindowAggregate).

Windows are `[start, start + d]` in a window store of window size d, keyed by their start. For a record
at t (records with a null key or value are dropped), the key's windows starting in `[t - 2d, t + 1]`
are read newest first, and:

- the window starting at t + 1 is the record's right window, already there;
- a window ending after t that contains t gets the record (the newest of them is the aggregate the
  record's right window starts from, if that must be made);
- a window ending at t is the record's left window, already there: it gets the record; the left
  window's latest record (before t) is the previous record, unless it is at t, then nothing else
  is made;
- the first window ending before t holds the previous record: its aggregate is what the new left
  window starts from, if the previous record lies within d.

Then the previous record's right window is made if missing and the record falls within it, the
record's left window if missing, and its right window if records after t (within d) exist. Records
before d cannot have a left window (no negative starts): they go into the `[0, d]` window, and right
windows are made for them as later records come. A window is updated only if its end is not before
the close time (stream time minus grace); a record whose own window `[t, t + d]` ended before it is
dropped. Every update is timestamped with the largest record timestamp in the window (the right
window copies its source's). With `on_window_close`, windows whose end is before the close time are
sent once (see window_emit.py); records before d never trigger that, as in Kafka Streams.
"""

from __future__ import annotations

import logging
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.emit_strategy import EmitStrategy
from streamlet.dsl.processors.aggregate import Aggregator, Initializer
from streamlet.dsl.processors.forwarding import log_skipped
from streamlet.dsl.processors.window_aggregate import WindowAggregateSupplier, WindowedAggregation
from streamlet.dsl.processors.window_emit import NO_TIMESTAMP
from streamlet.dsl.sliding_windows import SlidingWindows
from streamlet.errors import StreamsError
from streamlet.processor import Processor
from streamlet.record import Record
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.window.api import TimestampedWindowStore
from streamlet.windowed import TimeWindow, Windowed

log = logging.getLogger("streamlet.dsl")


class SlidingWindowAggregateSupplier(WindowAggregateSupplier):
    """Makes sliding-window aggregate processors (a `WindowAggregateSupplier` to the table nodes that ask
    for old values, grace periods or refuse windowed joins)."""

    def __init__(self, store_name: str, windows: SlidingWindows, initializer: Initializer, aggregator: Aggregator,
                 emit_strategy: EmitStrategy | None = None) -> None:
        super().__init__(store_name, windows, initializer, aggregator, emit_strategy)  # type: ignore[arg-type]

    def __call__(self) -> Processor:
        return SlidingWindowAggregate(self)


class SlidingWindowAggregate(WindowedAggregation):
    _store: TimestampedWindowStore

    def __init__(self, supplier: SlidingWindowAggregateSupplier) -> None:
        super().__init__(supplier.store_name, supplier.send_old_values, supplier.emit_strategy)
        self._d: int = supplier.windows.time_difference_ms
        self._grace: int = supplier.windows.grace_ms
        self._initializer = supplier.initializer
        self._aggregator = supplier.aggregator

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            log_skipped(self.context, "null key or value")
            return
        timestamp, d = record.timestamp, self._d
        if timestamp > self._observed_stream_time:
            self._observed_stream_time = timestamp
        close_time = self._observed_stream_time - self._grace
        if timestamp + d < close_time:
            self._log_expired_inclusive(record, timestamp, timestamp + d, close_time)
            return
        if timestamp < d:
            self._process_early(record, close_time)
            return
        self._process(record, close_time)
        self._emit_closed(record, close_time)

    def _process(self, record: Record, close_time: int) -> None:
        key, timestamp, d = record.key, record.timestamp, self._d
        starts: set[int] = set()
        left_agg: ValueAndTimestamp | None = None
        right_agg: ValueAndTimestamp | None = None
        left_exists = right_exists = False
        previous: int | None = None
        with self._store.fetch(key, max(0, timestamp - 2 * d), timestamp + 1) as found:
            windows = list(found)
        for kv in reversed(windows):  # newest first, as Kafka Streams' backward fetch
            start, stored = kv.key, kv.value
            starts.add(start)
            end = start + d
            if start == timestamp + 1:
                right_exists = True
            elif end > timestamp:
                if right_agg is None:
                    right_agg = stored
                self._update(TimeWindow(start, end), stored, record, close_time)
            elif end == timestamp:
                left_exists = True
                self._update(TimeWindow(start, end), stored, record, close_time)
                if stored.timestamp < timestamp:
                    previous = stored.timestamp
                else:
                    return  # a record at t was here before: every window it needs exists
            else:
                left_agg = stored
                previous = stored.timestamp
                break
        if previous is not None:
            previous_right = previous + 1
            if previous_right not in starts and previous_right + d >= timestamp:
                self._update(TimeWindow(previous_right, previous_right + d),
                             ValueAndTimestamp(self._initializer(), timestamp), record, close_time)
        if not left_exists:
            if previous is not None and timestamp - d <= previous:
                assert left_agg is not None
                start_from = ValueAndTimestamp(left_agg.value, timestamp)
            else:
                start_from = ValueAndTimestamp(self._initializer(), timestamp)
            self._update(TimeWindow(timestamp - d, timestamp), start_from, record, close_time)
        if not right_exists and right_agg is not None and right_agg.timestamp > timestamp:
            self._create_right_window(record, right_agg)

    def _process_early(self, record: Record, close_time: int) -> None:
        """A record before d: into the `[0, d]` window, with the right windows it needs."""
        key, timestamp, d = record.key, record.timestamp, self._d
        combined: Any = None
        right_agg: ValueAndTimestamp | None = None
        right_exists = False
        starts: set[int] = set()
        previous: int | None = None
        with self._store.fetch(key, 0, timestamp + 1) as found:
            windows = list(found)
        for kv in windows:  # oldest first, as Kafka Streams' forward fetch here
            start, stored = kv.key, kv.value
            starts.add(start)
            if start == 0:
                combined = kv
                if stored.timestamp < timestamp:
                    previous = stored.timestamp
            elif start <= timestamp:
                right_agg = stored
                self._update(TimeWindow(start, start + d), stored, record, close_time)
            elif start == timestamp + 1:
                right_exists = True
            else:
                raise StreamsError(f"Unexpected window with start {start} found when processing a record at "
                                   f"{timestamp} for sliding windows")
        if right_agg is None and combined is not None and combined.value.timestamp > timestamp:
            right_agg = combined.value
        if not right_exists and right_agg is not None and right_agg.timestamp > timestamp:
            self._create_right_window(record, right_agg)
        if previous is not None and previous + 1 not in starts:
            self._update(TimeWindow(previous + 1, previous + 1 + d),
                         ValueAndTimestamp(self._initializer(), timestamp), record, close_time)
        if combined is None:
            self._update(TimeWindow(0, d), ValueAndTimestamp(self._initializer(), timestamp), record, close_time)
        else:
            self._update(TimeWindow(0, d), combined.value, record, close_time)

    def _create_right_window(self, record: Record, right_agg: ValueAndTimestamp) -> None:
        """The record's right window starts as a copy of the newest window holding later records."""
        start = record.timestamp + 1
        window = TimeWindow(start, start + self._d)
        self._store.put(record.key, right_agg, start)
        self._forward_update(Record(Windowed(record.key, window), Change(right_agg.value, None), right_agg.timestamp,
                                    record.headers))

    def _update(self, window: TimeWindow, stored: ValueAndTimestamp, record: Record, close_time: int) -> None:
        """Aggregate the record into `window` (from `stored`) unless the window is closed."""
        if window.end < close_time:
            self._log_expired_inclusive(record, window.start, window.end, close_time)
            return
        old = stored.value
        new = self._aggregator(record.key, record.value, old)
        new_timestamp = record.timestamp if old is None else max(record.timestamp, stored.timestamp)
        self._store.put(record.key, ValueAndTimestamp(new, new_timestamp), window.start)
        self._forward_update(Record(Windowed(record.key, window), Change(new, old), new_timestamp, record.headers))

    def _emit_range_lower_bound(self, last_emit_close_time: int) -> int:
        return 0 if last_emit_close_time == NO_TIMESTAMP else max(0, last_emit_close_time - self._d)

    def _emit_range_upper_bound(self, window_close_time: int) -> int:
        return window_close_time - self._d - 1  # the end is inclusive
