"""`SessionWindows`: windows that grow with activity and close after an inactivity gap.

Records of one key whose timestamps are at most `gap` apart fall into one session; a session is
`[first timestamp, last timestamp]`, both inclusive. A record that bridges two sessions merges them.
A session is closed once stream time passes its end plus the gap plus the grace period; later
records that would extend it are dropped, as in Kafka Streams.
"""

from __future__ import annotations

from datetime import timedelta

from streamlet.durations import to_millis
from streamlet.errors import TopologyError

Duration = timedelta | int


class SessionWindows:
    """Build with `of_inactivity_gap_with_no_grace(gap)` or `of_inactivity_gap_and_grace(gap, grace)`."""

    def __init__(self, gap_ms: int, grace_ms: int) -> None:
        if gap_ms <= 0:
            raise TopologyError(f"Gap time cannot be zero or negative, got {gap_ms} ms")
        if grace_ms < 0:
            raise TopologyError(f"grace period must not be negative, got {grace_ms} ms")
        self.gap_ms = gap_ms
        self.grace_ms = grace_ms

    @staticmethod
    def of_inactivity_gap_with_no_grace(gap: Duration) -> SessionWindows:
        """Sessions that close after `gap` without a record of their key; late records are not accepted."""
        return SessionWindows(to_millis(gap), 0)

    @staticmethod
    def of_inactivity_gap_and_grace(gap: Duration, grace: Duration) -> SessionWindows:
        """Sessions that close after `gap` without a record of their key, accepting records up to `grace` late."""
        return SessionWindows(to_millis(gap), to_millis(grace))

    def inactivity_gap(self) -> int:
        """The inactivity gap in ms."""
        return self.gap_ms

    def grace_period_ms(self) -> int:
        """The grace period in ms."""
        return self.grace_ms

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionWindows) and (self.gap_ms, self.grace_ms) == (other.gap_ms, other.grace_ms)

    def __hash__(self) -> int:
        return hash((self.gap_ms, self.grace_ms))

    def __repr__(self) -> str:
        return f"SessionWindows(gap_ms={self.gap_ms}, grace_ms={self.grace_ms})"
