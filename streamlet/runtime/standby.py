"""`StandbyTasks`: warm copies of other instances' stores (`num.standby.replicas`).

A standby task is a task's stores without its processors: it follows the task's changelog partitions
with a consumer of its own (no group; `read_committed` under exactly-once, so it only ever holds
committed state) and applies every record through the stores' restore callbacks. After each commit
interval its stores are flushed, and a checkpoint of the changelog offsets it has applied is written
once they moved far enough since the last one (as for active tasks).
When the active task fails over to this instance, the standby is closed first (flush, checkpoint) and
the new active task restores only the changelog tail beyond that checkpoint instead of everything.

Standbys are advanced from the supervisor's poll loop with a zero-timeout fetch: they never hold up
active processing, and a slow standby only means a longer tail to restore at failover.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition

from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_id import TaskId
from streamlet.config import StreamsConfig
from streamlet.kafka.restore_records import restore_entries
from streamlet.runtime.task_manager import new_runtime_task
from streamlet.topology import Topology

log = logging.getLogger(__name__)


class StandbyTasks:
    def __init__(self, topology: Topology, config: StreamsConfig, consumer: Any, state_root: Path,
                 resolve_topic: Callable[[str], str], partition_count: Callable[[str], int]) -> None:
        self.topology = topology
        self.config = config
        self.consumer = consumer
        self.state_root = state_root
        self.resolve_topic = resolve_topic
        self.partition_count = partition_count
        self._subs = {s.id: s for s in topology.sub_topologies()}
        self.tasks: dict[TaskId, StreamTask] = {}
        self._store_of: dict[TopicPartition, tuple[StreamTask, str]] = {}
        self._positions: dict[TopicPartition, int] = {}  # next changelog offset to apply
        self._checkpoint_interval_s = int(config["commit.interval.ms"]) / 1000
        self._last_checkpoint = time.monotonic()
        self.applied = 0
        self._read_committed = config.exactly_once

    def is_stateful(self, sub_id: int) -> bool:
        return bool(self._subs[sub_id].stores) if sub_id in self._subs else False

    def release(self, keep: Iterable[TaskId]) -> None:
        """Close the standbys not in `keep` (checkpointed). Before active tasks are created: a standby
        that became active here must release its stores first."""
        keep = set(keep)
        for task_id in [t for t in self.tasks if t not in keep]:
            self._close(task_id)

    async def update(self, wanted: Iterable[TaskId]) -> None:
        """Run exactly the standbys of `wanted`. After active tasks that moved away were closed: an
        active task that became a standby here must release its stores (and checkpoint) first."""
        want = {t for t in wanted if self.is_stateful(t.subtopology)}
        self.release(want)
        for task_id in sorted(want - set(self.tasks)):
            self._open(task_id)
        await self._reassign()

    def _open(self, task_id: TaskId) -> None:
        task = new_runtime_task(self.topology, self._subs[task_id.subtopology], task_id.partition, self.config,
                                self.state_root, self.resolve_topic, self.partition_count, cache_bytes=0)
        task.initialize_stores()
        self.tasks[task_id] = task
        log.info("standby task %s opened", task.task_id)

    def _close(self, task_id: TaskId) -> None:
        task = self.tasks.pop(task_id)
        self._write_checkpoint(task, enforce=True)
        task.state.close()
        log.info("standby task %s closed", task.task_id)

    async def _reassign(self) -> None:
        consumer = self.consumer
        previous = self._positions
        self._store_of = {}
        self._positions = {}
        starts: dict[TopicPartition, int | None] = {}
        for task in self.tasks.values():
            checkpoint = task.state.restore_starts()
            for store, (topic, partition) in task.state.changelog_partitions().items():
                tp = TopicPartition(topic, partition)
                self._store_of[tp] = (task, store)
                starts[tp] = previous.get(tp, checkpoint.get(f"{topic}:{partition}"))
        consumer.assign(sorted(self._store_of))
        if not starts:
            return
        need_begin = [tp for tp, o in starts.items() if o is None]
        begins = await consumer.beginning_offsets(need_begin) if need_begin else {}
        for tp, offset in starts.items():
            start = begins[tp] if offset is None else offset
            consumer.seek(tp, start)
            self._positions[tp] = start

    async def step(self) -> int:
        """Apply whatever the changelogs have for the standbys now (no waiting); checkpoint now and then."""
        if not self._store_of:
            return 0
        batches = await self.consumer.getmany(timeout_ms=0, max_records=20_000)
        n = 0
        for tp, records in batches.items():
            owner = self._store_of.get(tp)
            if owner is None or not records:
                continue
            task, store = owner
            registered = task.state.registered[store]
            registered.restore(restore_entries(records, registered.with_headers))
            self._positions[tp] = records[-1].offset + 1
            n += len(records)
        self.applied += n
        now = time.monotonic()
        if now - self._last_checkpoint >= self._checkpoint_interval_s:
            self._last_checkpoint = now
            for task in self.tasks.values():
                self._write_checkpoint(task)
        return n

    def next_offsets(self) -> dict[TaskId, list[int]]:
        """Per standby task, the next offset of each of its changelogs it has a position in (what its
        stores hold: the task offsets a streams group member reports)."""
        found: dict[TaskId, list[int]] = {}
        for tp, (task, _store) in self._store_of.items():
            position = self._positions.get(tp)
            if position is not None:
                found.setdefault(TaskId(task.subtopology.id, task.partition), []).append(position)
        return found

    def end_offsets(self) -> dict[TaskId, list[int | None]]:
        """Per standby task, its changelogs' end offsets as last fetched (None: not fetched yet): the last
        stable offset under read_committed, else the high watermark."""
        found: dict[TaskId, list[int | None]] = {}
        for tp, (task, _store) in self._store_of.items():
            end = self.consumer.last_stable_offset(tp) if self._read_committed else self.consumer.highwater(tp)
            found.setdefault(TaskId(task.subtopology.id, task.partition), []).append(end)
        return found

    def _write_checkpoint(self, task: StreamTask, enforce: bool = False) -> None:
        """Flush the stores, then record how far they hold each changelog (the consumer's position):
        at close (`enforce`), or once the changelogs moved far enough, as for an active task
        (`ProcessorStateManager.maybe_checkpoint`)."""
        task.state.flush()
        offsets = {}
        for topic, partition in task.state.changelog_partitions().values():
            position = self._positions.get(TopicPartition(topic, partition))
            if position is not None:
                offsets[f"{topic}:{partition}"] = position
        task.state.maybe_checkpoint(offsets, enforce)

    def close(self) -> None:
        for task_id in list(self.tasks):
            self._close(task_id)
