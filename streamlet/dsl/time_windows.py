"""`TimeWindows`: fixed-size windows aligned to the epoch, tumbling or hopping, with a grace period.

A record with timestamp t belongs to every window `[start, start + size)` with `start` a multiple
of the advance (the size, for tumbling windows) and `start <= t < start + size`. The grace period
is how long after a window's end it still accepts late records: once the stream time observed by
the aggregation passes `end + grace`, the window is closed and later records for it are dropped.
Rules and error messages' conditions are Kafka Streams'.
"""

from __future__ import annotations

from datetime import timedelta

from streamlet.durations import to_millis
from streamlet.errors import TopologyError
from streamlet.windowed import TimeWindow

Duration = timedelta | int


def _positive(duration: Duration, what: str) -> int:
    ms = to_millis(duration)
    if ms <= 0:
        raise TopologyError(f"{what} must be larger than zero, got {ms} ms")
    return ms


class TimeWindows:
    """Build with `of_size_with_no_grace(size)` or `of_size_and_grace(size, grace)`, then optionally
    `advance_by(step)` for hopping windows. Immutable: `advance_by` returns a new object."""

    def __init__(self, size_ms: int, advance_ms: int, grace_ms: int) -> None:
        if size_ms <= 0:
            raise TopologyError(f"window size must be larger than zero, got {size_ms} ms")
        if advance_ms <= 0 or advance_ms > size_ms:
            raise TopologyError(
                f"window advance must be larger than zero and at most the window size ({size_ms} ms), "
                f"got {advance_ms} ms"
            )
        if grace_ms < 0:
            raise TopologyError(f"grace period must not be negative, got {grace_ms} ms")
        self.size_ms = size_ms
        self.advance_ms = advance_ms
        self.grace_ms = grace_ms

    @staticmethod
    def of_size_with_no_grace(size: Duration) -> TimeWindows:
        """Tumbling windows of `size`; records after a window's end are dropped."""
        size_ms = _positive(size, "window size")
        return TimeWindows(size_ms, size_ms, 0)

    @staticmethod
    def of_size_and_grace(size: Duration, grace: Duration) -> TimeWindows:
        """Tumbling windows of `size` that accept records up to `grace` after their end."""
        size_ms = _positive(size, "window size")
        return TimeWindows(size_ms, size_ms, to_millis(grace))

    def advance_by(self, advance: Duration) -> TimeWindows:
        """Hopping windows: a new window every `advance` (0 < advance <= size)."""
        return TimeWindows(self.size_ms, to_millis(advance), self.grace_ms)

    def size(self) -> int:
        """The window size in ms (a method, as Java's `Windows.size()`)."""
        return self.size_ms

    def grace_period_ms(self) -> int:
        """How long after a window ends records may still arrive for it, in ms (later ones are dropped)."""
        return self.grace_ms

    def windows_for(self, timestamp: int) -> list[TimeWindow]:
        """The windows `timestamp` falls into, oldest first (none before 0)."""
        size, advance = self.size_ms, self.advance_ms
        start = (max(0, timestamp - size + advance) // advance) * advance
        windows = []
        while start <= timestamp:
            windows.append(TimeWindow.for_size(start, size))
            start += advance
        return windows

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TimeWindows) and (self.size_ms, self.advance_ms, self.grace_ms)
                == (other.size_ms, other.advance_ms, other.grace_ms))

    def __hash__(self) -> int:
        return hash((self.size_ms, self.advance_ms, self.grace_ms))

    def __repr__(self) -> str:
        return f"TimeWindows(size_ms={self.size_ms}, advance_ms={self.advance_ms}, grace_ms={self.grace_ms})"
