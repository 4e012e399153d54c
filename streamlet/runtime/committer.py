"""`Committer`: when the member commits, and what a failed commit costs (Kafka Streams' `maybeCommit`).

A commit comes on the commit interval, timed from the end of the previous commit as Kafka Streams'
`StreamThread.maybeCommit()` times it (a slow commit — tasks working off their mailboxes, a
transaction — is followed by a full interval of processing, never by the next commit straight away),
or earlier when a task asked for one (`ProcessorContext.commit()`). Which tasks take part and how
their offsets become durable are the `TaskManager`'s and the `CommitProtocol`'s job; this class adds
what surrounds a commit: its metrics and latency trace, the purge of repartition records every task
has consumed, and the recovery from a failed one.

Under exactly-once a failed commit (refused by the group because it moved on, or a producer error)
closes every task of the shared transaction dirty — transaction aborted, local state discarded —
and rejoins the group: whatever this member still owns is then rebuilt from the changelogs and the
committed offsets.

A task that stopped on an outage (`TaskManager.corrupted_tasks`), under either guarantee, is closed dirty
and revived in place (`TaskManager.revive`): no rejoin, the group never hears of it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

import anyio

from streamlet.metrics import latency_trace
from streamlet.metrics.counters import ThreadCounters
from streamlet.runtime.commit_protocol import CommitFailed
from streamlet.runtime.membership import Membership
from streamlet.runtime.positions import PartitionPositions
from streamlet.runtime.repartition_purger import RepartitionPurger
from streamlet.runtime.task_manager import TaskManager, TasksCorrupted

log = logging.getLogger(__name__)


class Committer:
    """Commits every task of the member when one is due, and recovers from a failed commit."""

    def __init__(self, tasks: TaskManager, positions: PartitionPositions, membership: Membership,
                 counters: ThreadCounters, purger: RepartitionPurger, dispatch_lock: anyio.Lock,
                 interval_s: float) -> None:
        self._tasks = tasks
        self._positions = positions
        self._membership = membership
        self._counters = counters
        self._purger = purger
        self._lock = dispatch_lock
        self._interval_s = interval_s
        self._last_commit = time.monotonic()
        self._trace_uncommitted: list[tuple[str, int]] = []  # (sub-topology, timestamp): see latency_trace
        self.commits = 0  # successful commits
        self.dirty_recoveries = 0  # failed exactly-once commits whose tasks were closed dirty
        self.revivals = 0  # times tasks stopped on an outage were closed dirty and revived

    def restart_interval(self) -> None:
        """The commit interval runs from now (the poll loop starts)."""
        self._last_commit = time.monotonic()

    def trace_handed(self, sub: str, timestamps: Iterable[int]) -> None:
        """Latency trace only: records of sub-topology `sub` were handed to their task; the next
        successful commit marks them committed."""
        self._trace_uncommitted.extend((sub, ts) for ts in timestamps)

    def _requested(self) -> bool:
        return any(a.task.commit_requested for a in self._tasks.actors.values())

    async def maybe_commit(self) -> None:
        """Commit if the interval has passed since the last commit ended, or a task asked for one."""
        if time.monotonic() - self._last_commit >= self._interval_s or self._requested():
            async with self._lock:
                await self.commit()
            self._last_commit = time.monotonic()

    async def commit(self) -> None:
        """Commit every task now; the caller holds the dispatch lock."""
        started = time.perf_counter_ns()
        covered, self._trace_uncommitted = self._trace_uncommitted, []
        try:
            if await self._tasks.commit():
                self.commits += 1
                self._counters.record_commit(time.perf_counter_ns() - started)
                if latency_trace.TRACE is not None:
                    latency_trace.TRACE.duration("commit", started)
                    for sub in {s for s, _ in covered}:
                        latency_trace.TRACE.record(f"{sub}.3-committed", (ts for s, ts in covered if s == sub))
        except TasksCorrupted as exc:
            await self.revive(exc)
            return
        except CommitFailed as exc:
            await self.recover_dirty(exc)
            return
        await self._purger.maybe_purge(self._tasks.committed_offsets)

    async def maybe_recover(self) -> None:
        """Revive the tasks that stopped on an outage (raises the outage's error once it has lasted
        task.timeout.ms)."""
        if not any(actor.outage is not None and actor.closed.is_set() for actor in self._tasks.actors.values()):
            return
        async with self._lock:
            corrupted = self._tasks.corrupted_tasks()
            if corrupted is not None:
                await self.revive(corrupted)

    async def revive(self, exc: TasksCorrupted) -> None:
        """Close tasks stopped on an outage dirty and create them again; their partitions wait, paused, until
        they are restored, and start at the committed offsets (the poll loop's restoration step)."""
        self.revivals += 1
        log.warning("%s; closing tasks %s dirty and reviving them", exc, ", ".join(exc.task_ids))
        revived = await self._tasks.revive(exc.task_ids)
        positions = self._positions
        kept = positions.assigned & set(revived)
        positions.drop(revived)  # what was fetched for them is stale
        positions.assigned |= kept
        positions.pause(sorted(kept))  # until restored: then sought and resumed

    async def recover_dirty(self, exc: CommitFailed, rejoin: bool = True) -> None:
        """Exactly-once after a failed commit: the failed tasks' uncommitted work is dropped (their
        transactions aborted, their local state discarded) and the member rejoins the group, which
        decides who runs them now. Tasks whose commit succeeded keep running. `rejoin` is False
        inside a rebalance, which rejoins already."""
        self.dirty_recoveries += 1
        log.warning("%s; closing tasks %s dirty and rejoining the group", exc, ", ".join(exc.task_ids))
        dropped = await self._tasks.close_dirty(exc.task_ids)
        self._positions.drop(dropped)
        if rejoin:
            self._membership.request_rejoin()
