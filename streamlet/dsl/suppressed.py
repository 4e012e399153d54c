"""`Suppressed` and `BufferConfig`: what `KTable.suppress` holds back, and for how long.

As Kafka Streams' options (static factories become static methods, `withX` become `with_x`):

- `Suppressed.until_window_closes(BufferConfig.unbounded())`: one final result per window of a
  windowed aggregation, emitted once stream time passes the window's end plus its grace period;
  tombstones (a window whose final value is None) are dropped. Only strict buffer configs (`unbounded()`
  or `.shut_down_when_full()`) are allowed: emitting early would not be a final result.
- `Suppressed.until_time_limit(limit, buffer_config)`: each key's latest update, emitted once stream
  time is `limit` past the timestamp of the update that first put the key in the buffer.
- `BufferConfig.max_records(n)` / `max_bytes(n)` (emit early when full, unless `.shut_down_when_full()`),
  `BufferConfig.unbounded()`; `.with_max_records(n)`, `.with_max_bytes(n)`, `.with_no_bound()`,
  `.emit_early_when_full()`, `.with_logging_disabled()`, `.with_logging_enabled(config)`.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from streamlet.dsl.options import validate_name
from streamlet.durations import to_millis
from streamlet.errors import TopologyError

UNBOUNDED = sys.maxsize
"""Java's Long.MAX_VALUE: no bound on records or bytes."""


class BufferConfig:
    """How much the suppression buffer may hold and what happens when it is full."""

    def __init__(self, records_limit: int = UNBOUNDED, bytes_limit: int = UNBOUNDED, emit_when_full: bool = False,
                 logging: bool = True, log_config: Mapping[str, Any] | None = None) -> None:
        for what, value in (("the record limit", records_limit), ("the byte limit", bytes_limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TopologyError(f"{what} must be a non-negative integer, got {value!r}")
        self.records_limit = records_limit
        self.bytes_limit = bytes_limit
        self.emit_when_full = emit_when_full
        self.logging = logging
        self.log_config = {str(k): str(v) for k, v in (log_config or {}).items()}

    @staticmethod
    def max_records(records: int) -> BufferConfig:
        """At most `records` keys buffered; when full, emit early (unless `.shut_down_when_full()`)."""
        return BufferConfig(records_limit=records, emit_when_full=True)

    @staticmethod
    def max_bytes(size: int) -> BufferConfig:
        """At most `size` bytes buffered (Kafka Streams' estimate); when full, emit early by default."""
        return BufferConfig(bytes_limit=size, emit_when_full=True)

    @staticmethod
    def unbounded() -> BufferConfig:
        """No bound (and so never full): the buffer grows as needed."""
        return BufferConfig()

    def _with(self, **changes: Any) -> BufferConfig:
        clone = copy.copy(self)
        clone.__dict__.update(changes)
        return clone

    def with_max_records(self, records: int) -> BufferConfig:
        """The same buffer, holding at most `records` records."""
        return self._with(records_limit=BufferConfig(records_limit=records).records_limit)

    def with_max_bytes(self, size: int) -> BufferConfig:
        """The same buffer, holding at most `size` bytes of keys and values."""
        return self._with(bytes_limit=BufferConfig(bytes_limit=size).bytes_limit)

    def with_no_bound(self) -> BufferConfig:
        """The same buffer without a size limit (it grows until its records are emitted)."""
        return self._with(records_limit=UNBOUNDED, bytes_limit=UNBOUNDED, emit_when_full=False)

    def emit_early_when_full(self) -> BufferConfig:
        """When full, emit the oldest records before their time (results may then not be final)."""
        return self._with(emit_when_full=True)

    def shut_down_when_full(self) -> BufferConfig:
        """When full, fail the application rather than emit early (final results stay final)."""
        return self._with(emit_when_full=False)

    def with_logging_disabled(self) -> BufferConfig:
        """No changelog for the buffer: what it holds is lost when its task moves."""
        return self._with(logging=False, log_config={})

    def with_logging_enabled(self, config: Mapping[str, Any] | None = None) -> BufferConfig:
        """Back the buffer with a changelog topic (the default), with these extra topic configs."""
        return self._with(logging=True, log_config={str(k): str(v) for k, v in (config or {}).items()})

    def __repr__(self) -> str:
        return (f"BufferConfig(records_limit={self.records_limit}, bytes_limit={self.bytes_limit}, "
                f"{'emit_early_when_full' if self.emit_when_full else 'shut_down_when_full'})")


class Suppressed:
    """Build with `until_window_closes(buffer_config)` or `until_time_limit(limit, buffer_config)`."""

    def __init__(self, final_results: bool, time_limit_ms: int, buffer_config: BufferConfig,
                 name: str | None = None) -> None:
        if not isinstance(buffer_config, BufferConfig):
            raise TypeError(f"a suppression needs a BufferConfig, got {buffer_config!r}")
        if final_results and buffer_config.emit_when_full:
            raise TopologyError("until_window_closes() needs a strict buffer config (BufferConfig.unbounded() or "
                                ".shut_down_when_full()): emitting early would not give final results")
        if time_limit_ms < 0:
            raise TopologyError(f"the time limit must not be negative, got {time_limit_ms} ms")
        self.final_results = final_results
        self.time_limit_ms = time_limit_ms
        self.buffer_config = buffer_config
        self.name = None if name is None else validate_name(name)

    @staticmethod
    def until_window_closes(buffer_config: BufferConfig) -> Suppressed:
        """Only each window's final result, once the window is closed (end + grace <= stream time)."""
        return Suppressed(True, 0, buffer_config)

    @staticmethod
    def until_time_limit(time_to_wait_for_more_events: timedelta | int, buffer_config: BufferConfig) -> Suppressed:
        """Each key's latest update, once stream time is the limit past when the key was buffered."""
        return Suppressed(False, to_millis(time_to_wait_for_more_events), buffer_config)

    def with_name(self, name: str) -> Suppressed:
        """The same suppression with a name for its processor and buffer (as Java's `withName`)."""
        return Suppressed(self.final_results, self.time_limit_ms, self.buffer_config, name)

    def __repr__(self) -> str:
        kind = "until_window_closes" if self.final_results else f"until_time_limit({self.time_limit_ms} ms)"
        return f"Suppressed.{kind}({self.buffer_config!r}, name={self.name!r})"
