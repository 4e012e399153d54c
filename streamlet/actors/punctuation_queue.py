"""`PunctuationQueue`: when each scheduled punctuation fires, for one clock of one task.

Kafka Streams' rules, which we follow exactly:
- a stream-time schedule starts at time 0, so it fires as soon as the task has any stream time
  (the first record), then at every multiple of the interval that stream time reaches;
- a wall-clock schedule first fires one interval after it was scheduled;
- after a gap that spans several intervals, the punctuation fires once, and the next one is
  re-aligned to the schedule's grid (missed intervals are not replayed).
The callback receives the current time of the clock (stream time or wall-clock time), not the
grid point.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streamlet.processor import Cancellable, Punctuator


@dataclass(eq=False)
class PunctuationSchedule(Cancellable):
    """One `schedule()` call: the owning node, the interval and the next time it is due."""

    node: Any
    interval: int
    callback: Punctuator
    next_time: int
    cancelled: bool = field(default=False)

    def cancel(self) -> None:
        self.cancelled = True

    def advance(self, now: int) -> None:
        """Move to the next grid point after `now` (skipping missed intervals)."""
        nxt = self.next_time + self.interval
        if now >= nxt:
            nxt = now - ((now - self.next_time) % self.interval) + self.interval
        self.next_time = nxt


def first_punctuation(start: int, interval: int, now: int) -> int:
    """When a punctuation anchored at `start` is first due, seen at `now`: `start` itself unless it has
    passed, else the next grid point after `now` (Kafka Streams' PunctuationSchedule.next)."""
    if start >= now:
        return start
    first = start + interval
    if now >= first:
        first = now - ((now - start) % interval) + interval
    return first


class PunctuationQueue:
    """Schedules of one clock, ordered by when they are next due."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, PunctuationSchedule]] = []
        self._seq = itertools.count()

    def schedule(self, node: Any, interval: int, callback: Punctuator, first_time: int) -> PunctuationSchedule:
        if interval < 1:
            raise ValueError(f"the punctuation interval must be at least 1 ms, got {interval}")
        sched = PunctuationSchedule(node, interval, callback, first_time)
        heapq.heappush(self._heap, (first_time, next(self._seq), sched))
        return sched

    def next_due(self) -> int | None:
        """When the earliest live schedule is due, or None if there is none."""
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def may_punctuate(self, now: int, run: Callable[[PunctuationSchedule, int], None]) -> bool:
        """Fire every schedule due at `now` once (through `run`); True if any fired."""
        fired = False
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, sched = heapq.heappop(heap)
            if sched.cancelled:
                continue
            run(sched, now)
            fired = True
            if not sched.cancelled:
                sched.advance(now)
                heapq.heappush(heap, (sched.next_time, next(self._seq), sched))
        return fired

    def next_times(self) -> list[int]:
        """When each schedule is next due, in the order they were made; -1 for a cancelled one."""
        live = sorted(self._heap, key=lambda entry: entry[1])
        return [-1 if sched.cancelled else sched.next_time for _, _, sched in live]

    def restore_next_times(self, times: list[int]) -> None:
        """Apply `next_times()` of an earlier incarnation to the same schedules made again in the same
        order (a rebuilt task's processors schedule in `init` as before); extra schedules keep theirs."""
        ordered = [sched for _, _, sched in sorted(self._heap, key=lambda entry: entry[1])]
        for sched, when in zip(ordered, times, strict=False):
            if when == -1:
                sched.cancelled = True
            else:
                sched.next_time = when
        self._heap = [(s.next_time, next(self._seq), s) for s in ordered if not s.cancelled]
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return sum(1 for _, _, s in self._heap if not s.cancelled)
