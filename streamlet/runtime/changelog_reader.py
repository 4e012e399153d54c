"""`ChangelogReader`: rebuilds a task's stores from their changelog topics before it processes.

For each logged store of a task it reads the changelog partition from the checkpointed offset (or
from the beginning when there is no trustworthy local state) up to the partition's end offset as it
was when restoration started, and hands the entries to the store's restore callback in batches.
One restore consumer (no consumer group) serves every task of the process, one task at a time.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import anyio
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


class ChangelogReader:
    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer
        self._lock = anyio.Lock()
        self.total_restored = 0
        self.history: list[RestoreProgress] = []

    async def restore(self, task: StreamTask) -> list[RestoreProgress]:
        """Restore every logged store of `task`; trusts local state only where a checkpoint says so."""
        state = task.state
        partitions = state.changelog_partitions()
        if not partitions:
            return []
        checkpoint = state.read_checkpoint()
        progress = []
        async with self._lock:
            for store_name, (topic, partition) in partitions.items():
                start = checkpoint.get(f"{topic}:{partition}")
                p = await self._restore_one(task, store_name, TopicPartition(topic, partition), start)
                progress.append(p)
        return progress

    async def _restore_one(self, task: StreamTask, store_name: str, tp: TopicPartition,
                           start: int | None) -> RestoreProgress:
        consumer = self._consumer
        restore = task.state.registered[store_name].restore
        progress = RestoreProgress(task.task_id, store_name)
        began = time.monotonic()
        consumer.assign([tp])
        end = (await consumer.end_offsets([tp]))[tp]
        # An explicit offset, never seek_to_beginning(): aiokafka may still apply the assignment's
        # own offset reset after that call returns and land at the end, restoring nothing.
        begin = (await consumer.beginning_offsets([tp]))[tp]
        position = begin if start is None else max(start, begin)
        consumer.seek(tp, position)
        last_log = began
        while position < end:
            batches = await consumer.getmany(tp, timeout_ms=500, max_records=10_000)
            records = batches.get(tp, [])
            if records:
                entries = [(r.key, r.value, r.timestamp) for r in records if r.offset < end]
                if entries:
                    restore(entries)
                    progress.restored += len(entries)
            position = await consumer.position(tp)
            now = time.monotonic()
            if now - last_log > 5:
                last_log = now
                log.info("task %s restoring %s from %s: %d records, %d remaining, %.0f records/s",
                         task.task_id, store_name, tp.topic, progress.restored, max(0, end - position),
                         progress.restored / (now - began))
        progress.seconds = time.monotonic() - began
        consumer.assign([])
        self.total_restored += progress.restored
        self.history.append(progress)
        if progress.restored:
            log.info("task %s restored %d records into %s in %.2fs (%.0f records/s)", task.task_id,
                     progress.restored, store_name, progress.seconds, progress.records_per_s)
        return progress
