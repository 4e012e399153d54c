"""`RetentionClock`: when a window store's windows expire.

Kafka Streams' window stores run retention on the latest window start they were written, not on
wall-clock time: a window is expired once its start is at or before that time minus the retention
period. Both backends share this one rule so they answer reads identically.
"""

from __future__ import annotations


class RetentionClock:
    def __init__(self, retention_ms: int) -> None:
        self.retention_ms = retention_ms
        self.observed = -1
        self.min_live = 0  # the earliest window start still kept

    def advance(self, window_start: int) -> bool:
        """Note a write at `window_start`; True if `min_live` moved (older windows must go)."""
        if window_start <= self.observed:
            return False
        self.observed = window_start
        min_live = max(0, window_start - self.retention_ms + 1)
        moved = min_live > self.min_live
        self.min_live = min_live
        return moved

    def expired(self, window_start: int) -> bool:
        return window_start < self.min_live
