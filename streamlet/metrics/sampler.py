"""Rates, averages and maxima over the last window, from samples of cumulative counters.

Kafka Streams' sensors keep windowed samples per metric; here the counters are cumulative (see
`counters`) and a sample is a snapshot of all of them, taken at most once a second from the poll
loop and at every read. A rate is the growth between the oldest and newest snapshot of the window
divided by the time between them; a maximum is the largest per-sample maximum in the window.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass

Snapshot = dict[Hashable, float]


@dataclass(frozen=True)
class _Sample:
    at: float
    totals: Snapshot
    maxima: Snapshot
    minima: Snapshot


class Sampler:
    """Keeps the snapshots of the last `window_s` seconds (Kafka's default: 30 s samples)."""

    def __init__(self, collect: Callable[[], tuple[Snapshot, Snapshot, Snapshot]], window_s: float = 30.0,
                 every_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._collect = collect
        self._window_s = window_s
        self._every_s = every_s
        self._clock = clock
        self._samples: deque[_Sample] = deque()

    def maybe_sample(self) -> bool:
        """Take a snapshot if the last one is at least `every_s` old (cheap to call in a loop); True if taken."""
        now = self._clock()
        if not self._samples or now - self._samples[-1].at >= self._every_s:
            self.sample(now)
            return True
        return False

    def sample(self, now: float | None = None) -> None:
        """Take a snapshot now and drop those that fell out of the window (keeping one before it)."""
        now = self._clock() if now is None else now
        totals, maxima, minima = self._collect()
        self._samples.append(_Sample(now, totals, maxima, minima))
        while len(self._samples) > 2 and now - self._samples[1].at >= self._window_s:
            self._samples.popleft()

    def total(self, key: Hashable) -> float:
        """The newest cumulative value."""
        return self._samples[-1].totals.get(key, 0.0) if self._samples else 0.0

    def delta(self, key: Hashable) -> float:
        """Growth of a cumulative value over the window."""
        if len(self._samples) < 2:
            return 0.0
        return self._samples[-1].totals.get(key, 0.0) - self._samples[0].totals.get(key, 0.0)

    def seconds(self) -> float:
        """The time the window's snapshots span."""
        return self._samples[-1].at - self._samples[0].at if len(self._samples) >= 2 else 0.0

    def rate(self, key: Hashable) -> float:
        """Per-second growth over the window."""
        span = self.seconds()
        return self.delta(key) / span if span > 0 else 0.0

    def ratio(self, numerator: Hashable, denominator: Hashable, scale: float = 1.0) -> float:
        """Growth of one value per growth of another over the window (an average), times `scale`."""
        below = self.delta(denominator)
        return self.delta(numerator) / below * scale if below > 0 else 0.0

    def maximum(self, key: Hashable) -> float:
        """The largest per-sample maximum in the window (0 when none)."""
        return max((s.maxima.get(key, 0.0) for s in list(self._samples)[1:] or self._samples), default=0.0)

    def minimum(self, key: Hashable) -> float:
        """The smallest per-sample minimum in the window (0 when none was seen)."""
        found = [s.minima[key] for s in self._samples if key in s.minima]
        return min(found) if found else 0.0

    def interval_ratios(self, numerator: Hashable, denominator: Hashable) -> list[float]:
        """The ratio of growths in each interval between consecutive snapshots of the window (those
        in which the denominator grew): e.g. a cache's hit ratio per second, for its min and max."""
        samples = list(self._samples)
        found = []
        for before, after in itertools.pairwise(samples):
            below = after.totals.get(denominator, 0.0) - before.totals.get(denominator, 0.0)
            if below > 0:
                found.append((after.totals.get(numerator, 0.0) - before.totals.get(numerator, 0.0)) / below)
        return found
