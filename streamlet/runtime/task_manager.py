"""`TaskManager`: which tasks this instance runs, created and closed as partitions come and go.

A task is (sub-topology, partition). The manager maps consumed partitions to task actors, creates a
task when the group assigns its partitions (wiping local state that no checkpoint vouches for,
restoring stores from their changelogs, then starting the actor), and closes tasks whose
partitions moved elsewhere. It also runs the commit protocol across all actors.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask, task_id_str
from streamlet.actors.task_actor import Close, Commit, Committed, TaskActor
from streamlet.config import StreamsConfig
from streamlet.runtime.changelog_reader import ChangelogReader
from streamlet.runtime.record_sender import RecordSender
from streamlet.topology import SubTopology, Topology

log = logging.getLogger(__name__)

TaskKey = tuple[int, int]  # (sub-topology id, partition)


class TaskManager:
    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig,
        sender: RecordSender,
        reader: ChangelogReader,
        state_root: Path,
        resolve_topic: Callable[[str], str],
        partition_count: Callable[[str], int],
    ) -> None:
        self.topology = topology
        self.config = config
        self.sender = sender
        self.reader = reader
        self.state_root = state_root
        self.resolve_topic = resolve_topic
        self.partition_count = partition_count
        self.actors: dict[TaskKey, TaskActor] = {}
        self._by_partition: dict[tuple[str, int], TaskActor] = {}
        self._sub_of_topic: dict[str, SubTopology] = {}
        for sub in topology.sub_topologies():
            for t in sub.source_topics:
                self._sub_of_topic[resolve_topic(t)] = sub
        self._tg: TaskGroup | None = None

    def bind(self, tg: TaskGroup) -> None:
        """The supervisor's task group, in which task actors run."""
        self._tg = tg

    def actor_for(self, topic: str, partition: int) -> TaskActor | None:
        return self._by_partition.get((topic, partition))

    def task_keys_for(self, partitions: Iterable[tuple[str, int]]) -> dict[TaskKey, list[tuple[str, int]]]:
        keys: dict[TaskKey, list[tuple[str, int]]] = {}
        for topic, partition in partitions:
            sub = self._sub_of_topic.get(topic)
            if sub is None:
                log.warning("assigned partition %s-%d is not read by this topology", topic, partition)
                continue
            keys.setdefault((sub.id, partition), []).append((topic, partition))
        return keys

    def _cache_bytes(self, n_tasks: int) -> int:
        return int(self.config["statestore.cache.max.bytes"]) // max(1, n_tasks)

    # -- assignment ---------------------------------------------------------------------------------
    async def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Make the running tasks exactly those of `partitions`: close moved ones, create new ones."""
        wanted = self.task_keys_for(partitions)
        moved = [k for k in self.actors if k not in wanted]
        closed = [self.actors[k].task for k in moved]
        for key in moved:
            await self._close_task(key, clean=True)
        if closed:
            acked = await self.sender.flush()
            for task in closed:
                task.post_commit(acked)
        subs = {s.id: s for s in self.topology.sub_topologies()}
        cache_bytes = self._cache_bytes(len(wanted))
        for key, tps in sorted(wanted.items()):
            if key in self.actors:
                for tp in tps:
                    self._by_partition[tp] = self.actors[key]
                continue
            await self._create_task(subs[key[0]], key[1], tps, cache_bytes)

    async def _create_task(self, sub: SubTopology, partition: int, tps: list[tuple[str, int]],
                           cache_bytes: int) -> None:
        assert self._tg is not None, "bind() the task group first"
        collector = RecordCollector(self.partition_count)
        task = StreamTask(self.topology, sub, partition, self.config, collector, self.state_root,
                          clock=lambda: int(time.time() * 1000), resolve_topic=self.resolve_topic,
                          cache_bytes=cache_bytes)
        task_dir = self.state_root / task.task_id
        if task_dir.exists() and not task.state.read_checkpoint():
            log.info("task %s: local state without a checkpoint is not trusted; wiping it", task.task_id)
            task.state.wipe_local_state()
        task.initialize_stores()
        await self.reader.restore(task)
        task.initialize_processors()
        actor = TaskActor(task, self.sender.send)
        self.actors[(sub.id, partition)] = actor
        for tp in tps:
            self._by_partition[tp] = actor
        self._tg.start_soon(actor.run, name=f"task-{task.task_id}")
        log.info("task %s started on %s", task.task_id, ", ".join(f"{t}-{p}" for t, p in tps))

    async def _close_task(self, key: TaskKey, clean: bool) -> dict[tuple[str, int], int]:
        actor = self.actors.pop(key)
        for tp in [tp for tp, a in self._by_partition.items() if a is actor]:
            del self._by_partition[tp]
        if actor.closed.is_set():
            return {}
        offsets: dict[tuple[str, int], int] = await actor.request(Close(clean))
        log.info("task %s closed (%s)", task_id_str(*key), "clean" if clean else "dirty")
        return offsets

    # -- committing ---------------------------------------------------------------------------------
    async def commit(self, commit_offsets: Callable[[dict[tuple[str, int], int]], Any]) -> int:
        """Flush every task, wait for delivery, commit input offsets, then let tasks checkpoint."""
        if not self.actors:
            return 0
        offsets: dict[tuple[str, int], int] = {}
        results: dict[TaskKey, dict[tuple[str, int], int]] = {}

        async def one(key: TaskKey, actor: TaskActor) -> None:
            results[key] = await actor.request(Commit())

        async with anyio.create_task_group() as tg:
            for key, actor in self.actors.items():
                tg.start_soon(one, key, actor)
        for r in results.values():
            offsets.update(r)
        acked = await self.sender.flush()
        if offsets:
            await commit_offsets(offsets)
        for actor in self.actors.values():
            await actor.post(Committed(acked))
        return len(offsets)

    async def close_all(self, clean: bool) -> dict[tuple[str, int], int]:
        """Close every task; after a clean close, wait for delivery and write the checkpoints."""
        offsets: dict[tuple[str, int], int] = {}
        closed: list[StreamTask] = []
        for key in list(self.actors):
            task = self.actors[key].task
            try:
                offsets.update(await self._close_task(key, clean))
                closed.append(task)
            except Exception:
                if clean:
                    raise
                log.exception("error while closing task %s dirty", task_id_str(*key))
        if clean and closed:
            acked = await self.sender.flush()
            for task in closed:
                task.post_commit(acked)
        return offsets

    def stores(self, name: str) -> list[Any]:
        return [a.task.stores[name] for a in self.actors.values() if name in a.task.stores]
