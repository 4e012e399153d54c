"""`ChangelogReader`: rebuilds a task's stores from their changelog topics, a slice at a time.

For each logged store of a task it reads the changelog partition from the checkpointed offset (or
from the beginning when there is no trustworthy local state) up to the partition's end offset as it
was when restoration began, and hands the entries to the store's restore callback in batches.

Why slices: restoration runs in the supervisor's poll loop, between polls, never inside a rebalance
callback. A restore of millions of records takes seconds; done inside the callback it kept the
member from the group long enough to be evicted, and two instances then took every task from each
other in turn. `step()` works for a bounded time and returns, so the consumer keeps polling and
heartbeating, and tasks that did not move keep processing meanwhile. One restore consumer (no group)
serves every task of the process, with every changelog partition still to restore assigned at once:
the consumer fetches them together, in the background, while the records already fetched are written
into the stores (one partition at a time left the reader waiting for a fetch at every partition's
start and after every fetch-sized stretch). A finished partition is paused rather than unassigned, so
the data already fetched for the others is kept; the assignment changes only when tasks arrive or
leave. Progress (records restored, records/s, remaining) is logged every few seconds and kept in
`history`.

Under exactly-once the consumer reads `read_committed`, which shows a partition only up to its last
stable offset (LSO): the start of the oldest transaction still open there. Records that later
transactions committed lie beyond it, invisible until the open one ends. A previous owner's
transaction can hang open on a changelog for up to the transaction timeout (a frozen or cut-off
instance, or an abort whose markers are not written yet); if the task changed hands again meanwhile,
its last owner's committed writes sit behind that transaction. Stopping at the LSO would restore
stale state, so a changelog counts as restored only once no transaction is open on it (its LSO has
reached its high watermark) and everything up to there is read. The wait is logged.

Both engines restore through this reader, so that a store is rebuilt the same way (and as fast) in
either. The asyncio runtime drives it in slices (`begin`, then `step` from its poll loop), from the
task's checkpoint. The Spark engine restores one task at a time, before the task's micro-batch, from
the changelog positions its Spark state holds (`restore(task, positions)`, see `spark.catch_up`), and
without waiting for open transactions (`wait_for_open_transactions=False`): each changelog is read up
to its stable end as it was when the restore began (the batch has waited for the task's committed
offsets to be stable before).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition

from streamlet.actors.stream_task import StreamTask
from streamlet.kafka.restore_records import hand_out_as_decoded, restore_entries

log = logging.getLogger(__name__)


@dataclass
class RestoreProgress:
    task_id: str
    store: str
    restored: int = 0
    seconds: float = 0.0

    @property
    def records_per_s(self) -> float:
        return self.restored / self.seconds if self.seconds > 0 else 0.0


@dataclass
class _StoreRestore:
    store: str
    tp: TopicPartition
    start: int | None  # checkpointed offset, None = from the beginning
    end: int = 0
    position: int = 0
    first: int = 0  # where reading began: `start`, or the log's start when that is later
    began: float = 0.0
    last_log: float = 0.0
    progress: RestoreProgress | None = None
    waiting_since: float | None = None  # when an open transaction on the changelog was first seen
    done: bool = False

    @property
    def restored_to(self) -> int:
        """Once done: the changelog offset the store reflects (everything before it is in the store)."""
        return max(self.first, self.end)


@dataclass
class _RestoreJob:
    task: StreamTask
    stores: list[_StoreRestore] = field(default_factory=list)
    prepared: bool = False


class ChangelogReader:
    """Restores tasks' stores from their changelogs through `consumer` (no group; see the module docstring).

    `read_committed`: the consumer reads `read_committed`. `wait_for_open_transactions` (by default
    what `read_committed` says): a changelog counts as restored only once no transaction is open on it;
    else each changelog is restored up to its end as it was when its restoration began."""

    def __init__(self, consumer: Any, batch_records: int = 20_000, read_committed: bool = False, *,
                 wait_for_open_transactions: bool | None = None) -> None:
        self._consumer = consumer
        self._batch = batch_records
        # Follow the changelog's stable end as it moves, until no transaction is open on it.
        self._wait = read_committed if wait_for_open_transactions is None else wait_for_open_transactions
        self._jobs: deque[_RestoreJob] = deque()
        self._reading: dict[TopicPartition, tuple[_RestoreJob, _StoreRestore]] = {}
        self._assigned: set[TopicPartition] | None = None  # what the consumer holds; None: reassign
        self.total_restored = 0
        self.history: list[RestoreProgress] = []

    @property
    def restoring(self) -> bool:
        return bool(self._jobs)

    def progress(self) -> dict[str, tuple[int, int | None]]:
        """Per restoring task id: (records restored so far, records still to restore or None while
        the changelogs' ends are not known yet). For the live page; cheap, reads no broker."""
        found: dict[str, tuple[int, int | None]] = {}
        for job in self._jobs:
            task_id = job.task.task_id
            restored = sum(s.progress.restored for s in job.stores if s.progress is not None and not s.done)
            restored += sum(p.restored for p in self.history if p.task_id == task_id)
            remaining: int | None = None
            if job.prepared:
                remaining = sum(max(0, s.end - s.position) for s in job.stores if not s.done)
            found[task_id] = (restored, remaining)
        return found

    def begin(self, task: StreamTask, positions: Mapping[str, int] | None = None) -> None:
        """Queue `task` for restoration from `positions` ('topic:partition' -> the changelog offset its
        store reflects; a changelog not named is read from its start). Without `positions`, from the
        task's checkpoint: local state is trusted only where a checkpoint says so."""
        self._queue(task, positions)

    def _queue(self, task: StreamTask, positions: Mapping[str, int] | None) -> _RestoreJob:
        state = task.state
        starts = state.restore_starts() if positions is None else positions
        job = _RestoreJob(task)
        for store_name, (topic, partition) in state.changelog_partitions().items():
            job.stores.append(_StoreRestore(store_name, TopicPartition(topic, partition),
                                            starts.get(f"{topic}:{partition}")))
        self._jobs.append(job)
        return job

    async def restore(self, task: StreamTask, positions: Mapping[str, int] | None = None) -> dict[str, int]:
        """Restore `task` now, completely (for an engine that restores a task before running it, with
        nothing else queued here); `positions` as for `begin`. Returns, per changelog ('topic:partition'),
        the offset its store reflects now."""
        if self._jobs:
            raise RuntimeError("restore() needs a reader with nothing else to restore")
        job = self._queue(task, positions)
        while self._jobs:
            await self.step()
        return {f"{cur.tp.topic}:{cur.tp.partition}": cur.restored_to for cur in job.stores}

    def cancel(self, task: StreamTask) -> None:
        """Forget a task that was closed before its restoration finished."""
        for job in list(self._jobs):
            if job.task is task:
                self._jobs.remove(job)
                for cur in job.stores:
                    if self._reading.pop(cur.tp, None) is not None:
                        self._assigned = None  # the others are reassigned without it
        if not self._jobs:
            self._unassign()

    async def step(self, max_seconds: float = 0.2) -> list[StreamTask]:
        """Restore for about `max_seconds`; returns the tasks whose stores are now complete."""
        finished: list[StreamTask] = []
        deadline = time.monotonic() + max_seconds
        while self._jobs:
            for job in self._jobs:
                if not job.prepared:
                    await self._prepare(job)
            self._close_complete(finished)
            if not self._jobs or time.monotonic() >= deadline:
                break
            if self._assigned is None:
                self._assign()
            await self._read_batch()
        if not self._jobs:
            self._unassign()
        return finished

    async def _prepare(self, job: _RestoreJob) -> None:
        """Where each of the task's changelogs starts and ends, for all of them in two requests (no
        assignment needed: a changelog with nothing to restore is never assigned at all)."""
        consumer = self._consumer
        tps = [s.tp for s in job.stores]
        if tps:
            ends = await consumer.end_offsets(tps)
            # Explicit offsets, never seek_to_beginning(): aiokafka may still apply the assignment's
            # own offset reset after that call returns and land at the end, restoring nothing.
            begins = await consumer.beginning_offsets(tps)
            for cur in job.stores:
                cur.end = ends[cur.tp]
                begin = begins[cur.tp]
                cur.position = cur.first = begin if cur.start is None else max(cur.start, begin)
            pending = sum(max(0, cur.end - cur.position) for cur in job.stores)
            if pending:
                log.info("task %s: restoring %d changelog records into %d store(s)", job.task.task_id, pending,
                         len(job.stores))
        now = time.monotonic()
        for cur in job.stores:
            cur.began = cur.last_log = now
            cur.progress = RestoreProgress(job.task.task_id, cur.store)
            if cur.position < cur.end or self._wait:  # waiting: fetch to learn the stable end and the end
                self._reading[cur.tp] = (job, cur)
                self._assigned = None
        job.prepared = True

    def _assign(self) -> None:
        """Assign every changelog partition being read, each at its position (what was fetched for the
        previous assignment is dropped by the consumer and fetched again from there)."""
        tps = set(self._reading)
        self._consumer.assign(sorted(tps, key=lambda tp: (tp.topic, tp.partition)))
        for tp, (_job, cur) in self._reading.items():
            self._consumer.seek(tp, cur.position)
        self._assigned = tps

    def _unassign(self) -> None:
        if self._assigned != set():
            self._consumer.assign([])
            self._assigned = set()

    def _close_complete(self, finished: list[StreamTask]) -> None:
        """Close the stores that are complete and hand back the tasks whose stores all are."""
        for job in list(self._jobs):
            if not job.prepared:
                continue
            for cur in job.stores:
                if not cur.done and (cur.tp not in self._reading or self._complete(job.task, cur)):
                    self._close(job.task, cur)
            if all(cur.done for cur in job.stores):
                self._jobs.remove(job)
                finished.append(job.task)

    def _complete(self, task: StreamTask, cur: _StoreRestore) -> bool:
        # Stable first: it raises `end` to the stable end the fetcher last saw, and the records up to there
        # must be read too. (Compared first, a transaction that ended after the last read closed the store
        # with none of what its end revealed, when the fetch that said so had not been read yet.)
        return self._stable(task, cur) and cur.position >= cur.end

    def _stable(self, task: StreamTask, cur: _StoreRestore) -> bool:
        """True unless the reader waits for open transactions and one is open on the changelog (or the
        fetcher has not yet said where its stable end is); see the module docstring. Raises `cur.end`
        to the stable end as it moves, so what the ended transaction revealed is restored."""
        if not self._wait:
            return True
        if self._assigned is None or cur.tp not in self._assigned:
            return False  # not fetched yet: its stable end is unknown
        consumer = self._consumer
        lso, high = consumer.last_stable_offset(cur.tp), consumer.highwater(cur.tp)
        if lso is None or high is None or lso < 0 or high < 0:
            return False
        cur.end = max(cur.end, lso)
        if lso >= high:
            if cur.waiting_since is not None:
                log.info("task %s: the open transaction on %s-%d ended after %.1fs; restoring on", task.task_id,
                         cur.tp.topic, cur.tp.partition, time.monotonic() - cur.waiting_since)
                cur.waiting_since = None
            return True
        if cur.position < cur.end:
            return False  # still reading what is stable: not waiting for the transaction yet
        now = time.monotonic()
        if cur.waiting_since is None or now - cur.last_log > 5:
            cur.waiting_since = cur.waiting_since or now
            cur.last_log = now
            log.info("task %s restoring %s: waiting for an open transaction on %s-%d to end (stable up to offset "
                     "%d, written up to %d); a previous owner's transaction ends when it commits, aborts or times "
                     "out", task.task_id, cur.store, cur.tp.topic, cur.tp.partition, lso, high)
        return False

    async def _read_batch(self) -> None:
        """One fetch's worth: records of any partition being read, each into its store."""
        consumer = self._consumer
        hand_out_as_decoded(consumer)  # key, value, timestamp, offset: no ConsumerRecord needed
        batches = await consumer.getmany(timeout_ms=100, max_records=self._batch)
        for tp, records in batches.items():
            reading = self._reading.get(tp)
            if reading is None or not records:
                continue
            job, cur = reading
            assert cur.progress is not None
            # Waiting, read_committed returns only records below the stable end, which may have moved past
            # `end` (and is `end`'s new value); not waiting, records from `end` on are left out.
            if not (self._wait or records[-1].offset < cur.end):  # offsets ascend: else all of them
                records = [r for r in records if r.offset < cur.end]
            registered = job.task.state.registered[cur.store]
            entries = restore_entries(records, registered.with_headers)
            if entries:
                registered.restore(entries)
                cur.progress.restored += len(entries)
            self._log_progress(job.task, cur)
        for tp, (_job, cur) in list(self._reading.items()):
            # Re-checked after every await: a task cancelled meanwhile has left the assignment.
            if self._assigned is not None and tp in self._assigned and tp in self._reading:
                cur.position = await consumer.position(tp)

    def _log_progress(self, task: StreamTask, cur: _StoreRestore) -> None:
        assert cur.progress is not None
        now = time.monotonic()
        if now - cur.last_log > 5:
            cur.last_log = now
            log.info("task %s restoring %s from %s: %d records, %d remaining, %.0f records/s", task.task_id,
                     cur.store, cur.tp.topic, cur.progress.restored, max(0, cur.end - cur.position),
                     cur.progress.restored / (now - cur.began))

    def _close(self, task: StreamTask, cur: _StoreRestore) -> None:
        """A store is complete: stop reading its changelog (paused, so the others keep what was
        fetched for them) and record its progress."""
        cur.done = True
        task.state.note_restored(f"{cur.tp.topic}:{cur.tp.partition}", cur.restored_to)
        if self._reading.pop(cur.tp, None) is not None and self._assigned is not None and cur.tp in self._assigned:
            self._consumer.pause(cur.tp)
        progress = cur.progress
        assert progress is not None
        progress.seconds = time.monotonic() - cur.began
        self.total_restored += progress.restored
        self.history.append(progress)
        if progress.restored:
            log.info("task %s restored %d records into %s in %.2fs (%.0f records/s)", task.task_id,
                     progress.restored, cur.store, progress.seconds, progress.records_per_s)
