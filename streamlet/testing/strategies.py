"""Hypothesis strategies for property-based tests of a topology: the input a stream really sees.

Real topics are not tidy: keys repeat, records arrive out of order within some bound, a few arrive far
too late for their window, tombstones delete keys, headers ride along. These strategies draw such
input, shrink towards small and ordered cases when a property fails, and pair with the
`TopologyTestDriver` (or a real broker) to state what a topology must do whatever the input::

    from hypothesis import given
    from streamlet.testing import TopologyTestDriver
    from streamlet.testing.strategies import records

    @given(records(keys=st.sampled_from(["a", "b", "c"]), values=st.integers(0, 9)))
    def test_count_is_the_number_of_records_per_key(batch):
        with TopologyTestDriver(my_topology(), config) as driver:
            ...pipe `batch` in, read the output, compare with a plain-Python count...

Timestamps are milliseconds. `max_disorder_ms` bounds how far a record may come before an earlier-
stamped one (the usual network and producer reordering); `late` records go further back, beyond any
grace period a test picks smaller than `late_by_ms`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from streamlet.dsl.time_windows import TimeWindows
from streamlet.record import Headers, Record

DEFAULT_START_MS = 1_700_000_000_000
"""2023-11-14: a fixed, recent-looking epoch, so failures reproduce and windows align the same way."""


def keys(alphabet: Sequence[str] = ("a", "b", "c", "d", "e"), *, max_keys: int | None = None) -> st.SearchStrategy[str]:
    """Keys from a small alphabet (small, so that keys repeat and aggregations have work to do); with
    `max_keys`, only the first `max_keys` of it."""
    chosen = list(alphabet[:max_keys] if max_keys is not None else alphabet)
    if not chosen:
        raise ValueError("keys() needs at least one key")
    return st.sampled_from(chosen)


_default_keys = keys  # `records(keys=...)` shadows the function inside records()


def headers(*, max_headers: int = 2) -> st.SearchStrategy[Headers]:
    """Record headers: a few (name, bytes) pairs; names may repeat, as Kafka allows."""
    pair = st.tuples(st.sampled_from(["trace", "source", "h"]), st.binary(max_size=8))
    return st.lists(pair, max_size=max_headers).map(tuple)


@st.composite
def records(
    draw: st.DrawFn,
    keys: st.SearchStrategy[Any] | None = None,
    values: st.SearchStrategy[Any] | None = None,
    *,
    min_size: int = 0,
    max_size: int = 30,
    start_ms: int = DEFAULT_START_MS,
    max_step_ms: int = 1_000,
    max_disorder_ms: int = 0,
    late: bool = False,
    late_by_ms: int = 60_000,
    tombstones: bool = False,
    with_headers: bool = False,
) -> list[Record]:
    """A list of records (`Record` objects) in arrival order.

    Event time moves forward by 0..`max_step_ms` per record; each timestamp is then pulled back by up
    to `max_disorder_ms` (bounded disorder: a record may precede an earlier-stamped one by at most
    that much). With `late`, some records are stamped `late_by_ms` or more before the time reached so
    far, as records that miss their window's grace period. With `tombstones`, some values are None.
    """
    key_strategy = keys if keys is not None else _default_keys()
    value_strategy = values if values is not None else st.integers(0, 1_000)
    if tombstones:
        value_strategy = st.one_of(st.none(), value_strategy)
    n = draw(st.integers(min_size, max_size))
    out: list[Record] = []
    clock = start_ms
    for _ in range(n):
        clock += draw(st.integers(0, max_step_ms))
        ts = clock - (draw(st.integers(0, max_disorder_ms)) if max_disorder_ms else 0)
        if late and draw(st.integers(0, 9)) == 0:
            ts = clock - late_by_ms - draw(st.integers(0, late_by_ms))
        ts = max(ts, 0)
        hdrs: Headers = draw(headers()) if with_headers else ()
        out.append(Record(draw(key_strategy), draw(value_strategy), ts, hdrs))
    return out


@dataclass(frozen=True)
class WindowSpec:
    """A drawn window definition, with the numbers a test needs to compute the expected result."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    def time_windows(self) -> TimeWindows:
        """The `TimeWindows` for the DSL's `windowed_by`."""
        windows = TimeWindows.of_size_and_grace(self.size_ms, self.grace_ms)
        return windows.advance_by(self.advance_ms) if self.advance_ms != self.size_ms else windows

    def starts_of(self, timestamp: int) -> list[int]:
        """The start of every window a record at `timestamp` falls into (aligned to the epoch)."""
        last = timestamp - timestamp % self.advance_ms
        return [s for s in range(last, timestamp - self.size_ms, -self.advance_ms) if s >= 0]


@st.composite
def window_specs(draw: st.DrawFn, *, max_size_ms: int = 10_000, hopping: bool = True,
                 max_grace_ms: int = 5_000) -> WindowSpec:
    """Tumbling (and, with `hopping`, hopping) windows with a grace period of 0..`max_grace_ms`."""
    size = draw(st.integers(1, max_size_ms // 1_000)) * 1_000
    advance = size
    if hopping and draw(st.booleans()):
        advance = draw(st.sampled_from([d for d in range(1_000, size + 1, 1_000) if size % d == 0]))
    grace = draw(st.sampled_from([0, *range(1_000, max_grace_ms + 1, 1_000)]))
    return WindowSpec(size, advance, grace)


__all__ = ["DEFAULT_START_MS", "WindowSpec", "headers", "keys", "records", "window_specs"]
