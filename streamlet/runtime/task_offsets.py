"""Task offsets: what a streams group member tells the broker about the task state it holds (KIP-1071).

In a streams group the broker places tasks, so it must learn from the members which of them hold a
copy of a task's stores and how far that copy is. A member reports, per task, the *task offset*: the
sum over the task's changelog partitions of the offset of the last record its copy holds, and the
*task end offset*: the sum of those changelogs' end offsets. The difference is the copy's lag.
Kafka Streams 4.4's client reports:

- task offsets for every task with state here but not running as an active task now: standby and
  warm-up tasks (their live positions), active tasks still restoring, and the task directories left
  on disk by earlier runs (their checkpoint files). Running active tasks are left out: the broker
  knows them from the assignment.
- task end offsets for the tasks being restored or kept warm (standby, warm-up); an end offset not
  known yet counts as the largest long, and a sum that overflows is pinned there.

It sends both lists when it joins; afterwards only a list that changed since it was last sent, and
only when the assignment changed, the broker's `task_offset_interval_ms` passed since the last
report, or a warm-up task has caught up to within the broker's `acceptable_recovery_lag` (so the
broker can move the task at once). `TaskOffsetReport` keeps that schedule; the supervisor supplies
the offsets (`local_task_offsets` reads the checkpoint files).

What the Kafka 4.4.0 broker does with them: its sticky assignor ranks the members that may take a
standby task (previous standbys first, then the larger task offset), and a task whose active member
left goes preferably to a member that reported an offset for it, so it restores less. Warm-up
tasks need the broker's assignment refiner, which in 4.4.0 returns the assignment unchanged: a
4.4.0 broker never hands out warm-up tasks. A broker that does reads the lags from these reports.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from streamlet.actors.state_manager import CHECKPOINT_FILE
from streamlet.actors.task_id import TaskId

LONG_MAX = (1 << 63) - 1
"""Java's Long.MAX_VALUE: an end offset not known, or a sum that overflowed."""
_DEFAULT_INTERVAL_S = 60.0  # the broker's default group.streams.task.offset.interval.ms, until it says


def offset_sum(offsets: Iterable[int | None]) -> int:
    """The task offset of one task from its changelogs' offsets (None: not known, LONG_MAX), pinned to
    LONG_MAX on overflow, as Kafka Streams sums them."""
    total = 0
    for offset in offsets:
        if offset is None or offset >= LONG_MAX:
            return LONG_MAX
        total += offset
        if total >= LONG_MAX:
            return LONG_MAX
    return total


def last_applied(next_offsets: Iterable[int]) -> int:
    """The task offset of a copy from the next changelog offset it would apply per partition: Kafka Streams
    counts the offset of the last record applied (one below), and leaves out a changelog nothing was
    applied from."""
    return offset_sum(offset - 1 for offset in next_offsets if offset > 0)


def local_task_offsets(state_root: Path, subtopologies: Iterable[int]) -> dict[TaskId, int]:
    """The task offsets of the task directories under `state_root` that a checkpoint file vouches for
    (a directory without one is wiped when its task opens: it holds nothing the broker should count)."""
    subs = set(subtopologies)
    found: dict[TaskId, int] = {}
    if not state_root.is_dir():
        return found
    for entry in state_root.iterdir():
        try:
            task = TaskId.parse(entry.name)
        except ValueError:
            continue
        if task.subtopology not in subs:
            continue
        try:
            checkpoint = json.loads((entry / CHECKPOINT_FILE).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(checkpoint, dict) and checkpoint:
            try:
                found[task] = last_applied(int(v) for v in checkpoint.values())
            except (TypeError, ValueError):
                continue
    return found


class TaskOffsetReport:
    """When a heartbeat carries the task offsets and end offsets, and which (see the module docstring).

    `offsets()` returns the member's current (task offsets, task end offsets); `next(...)` says what the
    next heartbeat sends: each list, or None where it is not sent."""

    def __init__(self, offsets: Callable[[], tuple[dict[TaskId, int], dict[TaskId, int]]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._offsets = offsets
        self._clock = clock
        self._sent: tuple[dict[TaskId, int] | None, dict[TaskId, int] | None] = (None, None)
        self._sent_at = float("-inf")
        self.interval_s = _DEFAULT_INTERVAL_S
        self.acceptable_lag = -1

    def reset(self) -> None:
        """The member (re)joins: the next report is a full one."""
        self._sent = (None, None)
        self._sent_at = float("-inf")

    def configure(self, interval_ms: int, acceptable_lag: int) -> None:
        """Take the broker's interval and acceptable recovery lag from a heartbeat's answer (ignored
        when the answer does not say, -1 or 0)."""
        if interval_ms > 0:
            self.interval_s = interval_ms / 1000
        if acceptable_lag >= 0:
            self.acceptable_lag = acceptable_lag

    def next(self, *, joining: bool, assignment_changed: bool, warmups: Iterable[TaskId]
             ) -> tuple[dict[TaskId, int] | None, dict[TaskId, int] | None]:
        """The task offsets and end offsets the next heartbeat sends (None: not sent)."""
        offsets, ends = self._offsets()
        now = self._clock()
        if joining:
            self._sent, self._sent_at = (offsets, ends), now
            return offsets, ends
        due = (assignment_changed or now - self._sent_at >= self.interval_s
               or self._hot_warmup(warmups, offsets, ends))
        if not due:
            return None, None
        send_offsets = offsets if offsets != self._sent[0] else None
        send_ends = ends if ends != self._sent[1] else None
        if send_offsets is not None or send_ends is not None:
            self._sent = (offsets if send_offsets is not None else self._sent[0],
                          ends if send_ends is not None else self._sent[1])
            self._sent_at = now
        return send_offsets, send_ends

    def _hot_warmup(self, warmups: Iterable[TaskId], offsets: Mapping[TaskId, int], ends: Mapping[TaskId, int]) -> bool:
        """A warm-up task that caught up to within the acceptable recovery lag (the broker would move it now)."""
        if self.acceptable_lag < 0:
            return False
        for task in warmups:
            offset, end = offsets.get(task), ends.get(task)
            if offset is None or end is None or offset >= LONG_MAX or end >= LONG_MAX:
                continue
            if end - offset <= self.acceptable_lag:
                return True
        return False
