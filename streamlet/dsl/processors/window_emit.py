"""Final results of an `on_window_close` windowed aggregation (Kafka Streams' KIP-825 emit path).

After each record the aggregation asks `due(window_close_time)`: at most once per emit interval of
wall-clock time, and only when the close time moved past the one of the last emit. It then fetches
the windows that closed in between from its store and `emit`s them, each as `Change(value, None)`
with the stored timestamp (a session: its end) and the headers of the record that closed them.
Kafka Streams reads them from a time-ordered store: by window start, then by serialized key, which
`time_ordered` restores whatever order the store answers in. The last emitted close time is kept, as
in Kafka Streams, in the task's processor metadata under the store's name: it is committed with the
offsets and read back when the task starts again, so that final results sent before a restart are not
sent again (the window close time itself starts again from the records after the restart, as there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from streamlet.config import WINDOWED_AGGREGATION_EMIT_INTERVAL_MS
from streamlet.dsl.change import Change
from streamlet.processor import ProcessorContext
from streamlet.record import KeyValue, Record

NO_TIMESTAMP = -1


class FinalResultEmitter:
    """The emit bookkeeping one windowed aggregation processor keeps (`last_emit_close_time`, in the
    task's processor metadata under `store_name`; a context without one keeps it here)."""

    def __init__(self, context: ProcessorContext, store_name: str) -> None:
        self._context = context
        self._forward = context.forwarder_in_record_context()
        self._interval_ms = int(context.app_config.get(WINDOWED_AGGREGATION_EMIT_INTERVAL_MS, 1000))
        self._next_time_to_emit = 0
        task_metadata: dict[str, int] | None = getattr(context, "processor_metadata", None)
        self._metadata = {} if task_metadata is None else task_metadata
        self._key = store_name

    @property
    def last_emit_close_time(self) -> int:
        return self._metadata.get(self._key, NO_TIMESTAMP)

    @last_emit_close_time.setter
    def last_emit_close_time(self, close_time: int) -> None:
        self._metadata[self._key] = close_time

    def due(self, window_close_time: int) -> bool:
        """True when final results should be looked up now (the throttle is re-armed on each look)."""
        now = self._context.current_system_time_ms()
        if now < self._next_time_to_emit:
            return False
        self._next_time_to_emit = now + self._interval_ms
        last = self.last_emit_close_time
        return last == NO_TIMESTAMP or last < window_close_time

    def emit(self, record: Record, closed: Iterable[KeyValue], window_close_time: int,
             timestamp_of: Callable[[KeyValue], int], value_of: Callable[[KeyValue], Any]) -> None:
        """Send each closed window downstream, then remember `window_close_time`."""
        forward, headers = self._forward, record.headers
        for kv in closed:
            forward(Record(kv.key, Change(value_of(kv), None), timestamp_of(kv), headers))
        self.last_emit_close_time = window_close_time


def time_ordered(entries: Iterable[KeyValue], serialize_key: Callable[[Any], bytes]) -> list[KeyValue]:
    """Windowed entries by window start, then serialized key (a time-ordered store's order)."""
    return sorted(entries, key=lambda kv: (kv.key.window.start, serialize_key(kv.key.key)))
