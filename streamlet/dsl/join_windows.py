"""`JoinWindows`: how far apart in time two records of a stream-stream join may be.

A record at time t joins the other stream's records in `[t - before, t + after]` (the other side looks
the other way round). The grace period is how long past a window's end late records are still joined;
a left or outer join emits its unmatched records only once their window is closed (Kafka Streams 3.x's
spurious-result fix). Rules and error conditions are Kafka Streams'.
"""

from __future__ import annotations

from datetime import timedelta

from streamlet.durations import to_millis
from streamlet.errors import TopologyError

Duration = timedelta | int


class JoinWindows:
    """Build with `of_time_difference_with_no_grace(d)` or `of_time_difference_and_grace(d, grace)`;
    `before(d)` / `after(d)` make the window asymmetric. Immutable."""

    def __init__(self, before_ms: int, after_ms: int, grace_ms: int) -> None:
        if before_ms + after_ms < 0:
            raise TopologyError("Window interval (ie, beforeMs+afterMs) must not be negative.")
        if grace_ms < 0:
            raise TopologyError("Grace period must not be negative.")
        self.before_ms = before_ms
        self.after_ms = after_ms
        self.grace_ms = grace_ms

    @staticmethod
    def of_time_difference_with_no_grace(time_difference: Duration) -> JoinWindows:
        """Join records whose timestamps differ by at most `time_difference`, either way; no late records."""
        d = to_millis(time_difference)
        return JoinWindows(d, d, 0)

    @staticmethod
    def of_time_difference_and_grace(time_difference: Duration, after_window_end: Duration) -> JoinWindows:
        """Join records whose timestamps differ by at most `time_difference`, accepting records up to
        `after_window_end` late."""
        d = to_millis(time_difference)
        return JoinWindows(d, d, to_millis(after_window_end))

    def before(self, time_difference: Duration) -> JoinWindows:
        """The same windows, reaching `time_difference` back from the left record's time."""
        return JoinWindows(to_millis(time_difference), self.after_ms, self.grace_ms)

    def after(self, time_difference: Duration) -> JoinWindows:
        """The same windows, reaching `time_difference` ahead of the left record's time."""
        return JoinWindows(self.before_ms, to_millis(time_difference), self.grace_ms)

    def size(self) -> int:
        """before + after, in ms."""
        return self.before_ms + self.after_ms

    def grace_period_ms(self) -> int:
        """The grace period in ms."""
        return self.grace_ms

    def __repr__(self) -> str:
        return f"JoinWindows(before_ms={self.before_ms}, after_ms={self.after_ms}, grace_ms={self.grace_ms})"
