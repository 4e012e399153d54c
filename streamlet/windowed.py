"""`Window`, `TimeWindow`, `SessionWindow` and `Windowed`: the keys of windowed results.

A windowed aggregation does not produce one value per key but one per key *and window*, so its
results are keyed by `Windowed(key, window)`. Windows are plain value objects (hashable, ordered by
start then end) so that tests can put them in dicts and sets; times are epoch milliseconds. Kept
outside the DSL because the window stores hand them out too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_TIME = (1 << 63) - 1
"""Java's Long.MAX_VALUE: the end of a window whose end would overflow."""


@dataclass(frozen=True, order=True, slots=True)
class Window:
    """A time interval `[start, end]`; whether `end` is included depends on the kind of window."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0:
            raise ValueError(f"a window cannot start before 0, got start={self.start}")
        if self.end < self.start:
            raise ValueError(f"a window cannot end ({self.end}) before it starts ({self.start})")

    def overlap(self, other: Window) -> bool:
        """True if the two windows share a point in time (end exclusive for time windows)."""
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True, order=True, slots=True)
class TimeWindow(Window):
    """A window of `TimeWindows`: `start` inclusive, `end` exclusive, as in Kafka Streams."""

    def __post_init__(self) -> None:
        Window.__post_init__(self)
        if self.end == self.start:
            raise ValueError(f"a time window must end after it starts, got [{self.start}, {self.end})")

    @staticmethod
    def for_size(start: int, size: int) -> TimeWindow:
        """The window of `size` ms at `start`, its end capped at the largest time (as Java does)."""
        end = start + size
        return TimeWindow(start, end if end <= MAX_TIME else MAX_TIME)


@dataclass(frozen=True, order=True, slots=True)
class SessionWindow(Window):
    """A window of `SessionWindows`: `start` and `end` both inclusive (the first and last record's
    timestamps), so a session of one record has `start == end`, as in Kafka Streams."""

    def overlap(self, other: Window) -> bool:
        return not (other.end < self.start or self.end < other.start)


@dataclass(frozen=True, slots=True)
class Windowed:
    """A record key together with the window its value belongs to."""

    key: Any
    window: Window

    def __str__(self) -> str:
        # Kafka Streams' Windowed.toString(), so logs read the same.
        return f"[{self.key}@{self.window.start}/{self.window.end}]"
