"""Durations and instants as the API takes them: `timedelta` or int milliseconds, aware `datetime` or epoch ms.

Every part of streamlet that accepts a duration (windows, grace periods, punctuation intervals, store
retention, the test driver's clock) or an instant (a punctuation's start) reads it the same way, so the
conversion sits here, at the bottom, beside the errors and serdes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def to_millis(duration: timedelta | int | float) -> int:
    """Durations in the API are `timedelta` or int milliseconds."""
    if isinstance(duration, timedelta):
        return int(duration / timedelta(milliseconds=1))
    if isinstance(duration, bool) or not isinstance(duration, int | float):
        raise TypeError(f"a duration must be a timedelta or milliseconds, got {duration!r}")
    return int(duration)


def epoch_millis(instant: datetime | int) -> int:
    """Instants in the API are timezone-aware `datetime` or int epoch milliseconds (a naive datetime is
    refused: which zone it meant cannot be known)."""
    if isinstance(instant, datetime):
        if instant.tzinfo is None:
            raise ValueError(f"a datetime instant needs a timezone (e.g. tzinfo=timezone.utc), got {instant!r}")
        return int((instant - _EPOCH) / timedelta(milliseconds=1))
    if isinstance(instant, bool) or not isinstance(instant, int):
        raise TypeError(f"an instant must be a datetime or epoch milliseconds, got {instant!r}")
    return instant


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
