"""`ChangelogReader`: rebuilds a task's stores from their changelog topics, a slice at a time.

For each logged store of a task it reads the changelog partition from the checkpointed offset (or
from the beginning when there is no trustworthy local state) up to the partition's end offset as it
was when restoration began, and hands the entries to the store's restore callback in batches.

Why slices: restoration runs in the supervisor's poll loop, between polls, never inside a rebalance
callback. A restore of millions of records takes seconds; done inside the callback it kept the
member from the group long enough to be evicted, and two instances then took every task from each
other in turn. `step()` works for a bounded time and returns, so the consumer keeps polling and
heartbeating, and tasks that did not move keep processing meanwhile. One restore consumer (no group)
serves every task of the process, one changelog partition at a time. Progress (records restored,
records/s, remaining) is logged every few seconds and kept in `history`.

Under exactly-once the consumer reads `read_committed`, which shows a partition only up to its last
stable offset (LSO): the start of the oldest transaction still open there. Records that later
transactions committed lie beyond it, invisible until the open one ends. A previous owner's
transaction can hang open on a changelog for up to the transaction timeout (a frozen or cut-off
instance, or an abort whose markers are not written yet); if the task changed hands again meanwhile,
its last owner's committed writes sit behind that transaction. Stopping at the LSO would restore
stale state, so a changelog counts as restored only once no transaction is open on it (its LSO has
reached its high watermark) and everything up to there is read. The wait is logged.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition

from streamlet.actors.stream_task import StreamTask

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
    began: float = 0.0
    last_log: float = 0.0
    progress: RestoreProgress | None = None
    waiting_since: float | None = None  # when an open transaction on the changelog was first seen


@dataclass
class _RestoreJob:
    task: StreamTask
    stores: deque[_StoreRestore] = field(default_factory=deque)
    current: _StoreRestore | None = None
    prepared: bool = False


class ChangelogReader:
    def __init__(self, consumer: Any, batch_records: int = 20_000, read_committed: bool = False) -> None:
        self._consumer = consumer
        self._batch = batch_records
        self._read_committed = read_committed  # the consumer's isolation: wait out open transactions
        self._jobs: deque[_RestoreJob] = deque()
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
            cur = job.current
            restored = cur.progress.restored if cur is not None and cur.progress is not None else 0
            restored += sum(p.restored for p in self.history if p.task_id == job.task.task_id)
            remaining: int | None = None
            if job.prepared:
                remaining = max(0, cur.end - cur.position) if cur is not None else 0
                remaining += sum(max(0, s.end - (s.start or 0)) for s in job.stores)
            found[job.task.task_id] = (restored, remaining)
        return found

    def begin(self, task: StreamTask) -> None:
        """Queue `task` for restoration; trusts local state only where a checkpoint says so."""
        state = task.state
        checkpoint = state.read_checkpoint()
        job = _RestoreJob(task)
        for store_name, (topic, partition) in state.changelog_partitions().items():
            job.stores.append(_StoreRestore(store_name, TopicPartition(topic, partition),
                                            checkpoint.get(f"{topic}:{partition}")))
        self._jobs.append(job)

    def cancel(self, task: StreamTask) -> None:
        """Forget a task that was closed before its restoration finished."""
        for job in list(self._jobs):
            if job.task is task:
                self._jobs.remove(job)
                if job.current is not None:
                    self._consumer.assign([])

    async def step(self, max_seconds: float = 0.2) -> list[StreamTask]:
        """Restore for about `max_seconds`; returns the tasks whose stores are now complete."""
        finished: list[StreamTask] = []
        deadline = time.monotonic() + max_seconds
        while self._jobs and time.monotonic() < deadline:
            job = self._jobs[0]
            if not job.prepared:
                await self._prepare(job)
            if job.current is None:
                if not job.stores:
                    self._jobs.popleft()
                    finished.append(job.task)
                    continue
                job.current = job.stores.popleft()
                self._open(job.task, job.current)
            cur = job.current
            if cur.position < cur.end or not self._stable(job.task, cur):
                await self._read_batch(job.task, cur)
            if cur.position >= cur.end and self._stable(job.task, cur):
                self._close(job.task, cur)
                job.current = None
        if not self._jobs:
            self._consumer.assign([])
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
                cur.position = begin if cur.start is None else max(cur.start, begin)
            pending = sum(max(0, cur.end - cur.position) for cur in job.stores)
            if pending:
                log.info("task %s: restoring %d changelog records into %d store(s)", job.task.task_id, pending,
                         len(job.stores))
        job.prepared = True

    def _open(self, task: StreamTask, cur: _StoreRestore) -> None:
        cur.began = cur.last_log = time.monotonic()
        cur.progress = RestoreProgress(task.task_id, cur.store)
        if cur.position < cur.end or self._read_committed:  # read_committed: fetch to learn LSO and end
            self._consumer.assign([cur.tp])
            self._consumer.seek(cur.tp, cur.position)

    def _stable(self, task: StreamTask, cur: _StoreRestore) -> bool:
        """True unless the consumer reads `read_committed` and a transaction is open on the changelog
        (or the fetcher has not yet said where its stable end is); see the module docstring. Raises
        `cur.end` to the stable end as it moves, so what the ended transaction revealed is restored."""
        if not self._read_committed:
            return True
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
        now = time.monotonic()
        if cur.waiting_since is None or now - cur.last_log > 5:
            cur.waiting_since = cur.waiting_since or now
            cur.last_log = now
            log.info("task %s restoring %s: waiting for an open transaction on %s-%d to end (stable up to offset "
                     "%d, written up to %d); a previous owner's transaction ends when it commits, aborts or times "
                     "out", task.task_id, cur.store, cur.tp.topic, cur.tp.partition, lso, high)
        return False

    async def _read_batch(self, task: StreamTask, cur: _StoreRestore) -> None:
        assert cur.progress is not None
        consumer = self._consumer
        batches = await consumer.getmany(cur.tp, timeout_ms=100, max_records=self._batch)
        records = batches.get(cur.tp, [])
        if records:
            # read_committed returns only records below the stable end, which may have moved past `end`.
            if self._read_committed or records[-1].offset < cur.end:  # offsets ascend: all of them
                entries = [(r.key, r.value, r.timestamp) for r in records]
            else:
                entries = [(r.key, r.value, r.timestamp) for r in records if r.offset < cur.end]
            if entries:
                task.state.registered[cur.store].restore(entries)
                cur.progress.restored += len(entries)
        cur.position = await consumer.position(cur.tp)
        now = time.monotonic()
        if now - cur.last_log > 5:
            cur.last_log = now
            log.info("task %s restoring %s from %s: %d records, %d remaining, %.0f records/s", task.task_id,
                     cur.store, cur.tp.topic, cur.progress.restored, max(0, cur.end - cur.position),
                     cur.progress.restored / (now - cur.began))

    def _close(self, task: StreamTask, cur: _StoreRestore) -> None:
        progress = cur.progress
        assert progress is not None
        progress.seconds = time.monotonic() - cur.began
        self.total_restored += progress.restored
        self.history.append(progress)
        if progress.restored:
            log.info("task %s restored %d records into %s in %.2fs (%.0f records/s)", task.task_id,
                     progress.restored, cur.store, progress.seconds, progress.records_per_s)
