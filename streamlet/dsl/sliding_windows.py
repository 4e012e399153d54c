"""`SlidingWindows`: windows of a fixed length that move with the records, not with the clock.

A sliding window is `[start, start + time_difference]`, both ends inclusive. Kafka Streams does not
keep every possible window: for each record at t it keeps the record's left window `[t - d, t]` and,
when later records fall within d after it, its right window `[t + 1, t + 1 + d]`, so each distinct
set of records that lie within d of each other has exactly one window. A window closes once stream
time passes its end plus the grace period; records arriving for it later are dropped. Rules and the
conditions of the errors are Kafka Streams'.
"""

from __future__ import annotations

from datetime import timedelta

from streamlet.durations import to_millis
from streamlet.errors import TopologyError

Duration = timedelta | int


class SlidingWindows:
    """Build with `of_time_difference_with_no_grace(d)` or `of_time_difference_and_grace(d, grace)`."""

    def __init__(self, time_difference_ms: int, grace_ms: int) -> None:
        if time_difference_ms < 0:
            raise TopologyError(f"Window time difference must not be negative, got {time_difference_ms} ms")
        if grace_ms < 0:
            raise TopologyError(f"Window grace period must not be negative, got {grace_ms} ms")
        self.time_difference_ms = time_difference_ms
        self.grace_ms = grace_ms

    @staticmethod
    def of_time_difference_with_no_grace(time_difference: Duration) -> SlidingWindows:
        """Windows over records at most `time_difference` apart; late records are not accepted."""
        return SlidingWindows(to_millis(time_difference), 0)

    @staticmethod
    def of_time_difference_and_grace(time_difference: Duration, grace: Duration) -> SlidingWindows:
        """Windows over records at most `time_difference` apart, accepting records up to `grace` after a
        window's end."""
        return SlidingWindows(to_millis(time_difference), to_millis(grace))

    def time_difference(self) -> int:
        """The largest distance in ms between two records of one window (Java's `timeDifferenceMs()`)."""
        return self.time_difference_ms

    def grace_period_ms(self) -> int:
        """How long after a window ends records may still arrive for it, in ms."""
        return self.grace_ms

    @property
    def size_ms(self) -> int:
        """The length of a window in ms (its store's window size): the time difference."""
        return self.time_difference_ms

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SlidingWindows)
                and (self.time_difference_ms, self.grace_ms) == (other.time_difference_ms, other.grace_ms))

    def __hash__(self) -> int:
        return hash((self.time_difference_ms, self.grace_ms))

    def __repr__(self) -> str:
        return f"SlidingWindows(time_difference_ms={self.time_difference_ms}, grace_ms={self.grace_ms})"
