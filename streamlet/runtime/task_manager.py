"""`TaskManager`: which tasks this instance runs, created and closed as partitions come and go.

A task is (sub-topology, partition). The manager maps consumed partitions to task actors, creates a
task when the group assigns its partitions (wiping local state that no checkpoint vouches for,
restoring stores from their changelogs, then starting the actor), and closes tasks whose
partitions moved elsewhere. It also runs the commit across all actors: each actor flushes its
stores and output and names its consumed offsets, then the `CommitProtocol` (at-least-once or
exactly-once) makes them durable.

A task whose actor stopped on an outage (a `RetriableError`: the schema registry cannot be reached by a
store's value serde, or held output would outlive the transaction) is corrupted, as Kafka Streams calls a
task whose uncommitted work cannot be trusted: `corrupted_tasks` names it for the committer, which has
`revive` close it dirty and create it again at once, without a rebalance (Kafka Streams' `closeDirtyAndRevive`):
restored, it starts from its last committed offsets after a backoff (`schema.registry.retry.backoff.ms`,
doubling up to `schema.registry.retry.backoff.max.ms`). Under exactly-once every running task is revived
with it: the dirty close aborts the member's one transaction, which holds their uncommitted work too, and
their staged store writes go with it. Under at-least-once only the stopped task is: what it sent stays
sent and its store keeps its writes, so reprocessing may apply a record twice, as at-least-once allows.
An outage that has lasted `task.timeout.ms` across revivals fails the member with its error.

With the offsets go the tasks' partition times and processor metadata, in Kafka Streams' encoding
(`streamlet.kafka.commit_metadata`); a task starting reads them back from the group's committed
offsets before its processors' `init`, as Kafka Streams does, so that it continues with the partition
and stream times it stopped at and an `on_window_close` aggregation does not send its final results again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from streamlet.actors.partition_group import IDLE_DISABLED
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask, caching_stores
from streamlet.actors.task_actor import Close, Commit, Committed, TaskActor, TaskStoppedError, TopicResolver
from streamlet.actors.task_progress import CommitTimes
from streamlet.config import RETRY_BACKOFF, RETRY_BACKOFF_MAX, StreamsConfig
from streamlet.errors import RetriableError
from streamlet.kafka.changelog_reader import ChangelogReader
from streamlet.kafka.commit_metadata import decode_committed, encode_commit_metadata, is_streamlet_key
from streamlet.kafka.record_sender import RecordSender
from streamlet.metrics import latency_trace
from streamlet.runtime.commit_protocol import CommitFailed, CommitProtocol, Metadata, Offsets
from streamlet.stores.api import StateStore
from streamlet.telemetry.tracing import commit_span, tracer_for
from streamlet.topology import SubTopology, Topology

log = logging.getLogger(__name__)

TaskKey = tuple[int, int]  # (sub-topology id, partition)
Partitions = list[tuple[str, int]]
CommitReader = Callable[[Partitions], Awaitable[dict[tuple[str, int], tuple[int | None, str]]]]
"""Reads the group's committed offsets (None: none) and their metadata for some partitions."""


class TasksCorrupted(CommitFailed):
    """Tasks stopped on an outage (a `RetriableError` escaped them): closed dirty and revived in place."""


def cache_bytes_per_task(config: StreamsConfig, topology: Topology, task_subs: Iterable[SubTopology]) -> int:
    """Each task's share of the record cache (`statestore.cache.max.bytes`), given the sub-topology of every task
    of this instance: the budget split evenly among the tasks with cached stores. A task without one uses no
    cache, so it takes no share (Kafka Streams' thread cache is used by its stores alone): WordCount's split
    tasks leave the whole budget to its count tasks."""
    cached: dict[int, bool] = {}
    n = 0
    for sub in task_subs:
        has = cached.get(sub.id)
        if has is None:
            has = cached[sub.id] = bool(caching_stores(topology, sub.stores))
        n += has
    return int(config["statestore.cache.max.bytes"]) // max(1, n)


def new_runtime_task(topology: Topology, sub: SubTopology, partition: int, config: StreamsConfig,
                     state_root: Path, resolve_topic: Callable[[str], str],
                     partition_count: Callable[[str], int], cache_bytes: int) -> StreamTask:
    """A task for the Kafka runtime (active or standby), its stores not yet opened. Local state that
    no checkpoint file vouches for (a crash; under exactly-once also any stop but a clean close) is wiped
    here: it may hold writes the changelog never committed, and the changelogs rebuild it. Under
    exactly-once a directory marked as holding only committed data (its LevelDB stores stage the open
    transaction's writes, see `ProcessorStateManager.begin_transactions`) is kept: each store restores
    only the changelog after the offset it keeps. A clean close
    always leaves a checkpoint, so a persistent store without changelog survives it, as in Kafka Streams.
    After a kill -9 under exactly-once, Kafka Streams' such store (RocksDB without write-ahead log) came
    back without the updates since it was opened, in the restart suite (tests/fidelity_restart), and
    once otherwise: it is not defined; streamlet's starts empty."""
    task = StreamTask(topology, sub, partition, config, RecordCollector(partition_count), state_root,
                      clock=lambda: int(time.time() * 1000), resolve_topic=resolve_topic, cache_bytes=cache_bytes)
    if ((state_root / task.task_id).exists() and not task.state.has_checkpoint()
            and not (config.exactly_once and task.state.keeps_committed_state())):
        log.info("task %s: local state without a checkpoint is not trusted; wiping it", task.task_id)
        task.state.wipe_local_state()
    idle_ms = int(config["max.task.idle.ms"])
    if (idle_ms > 0 or idle_ms == IDLE_DISABLED) and len(task.sources_by_topic) > 1:
        task.partition_group.idle_for(idle_ms, lambda: task.clock())
    return task


class TaskManager:
    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig,
        commits: CommitProtocol,
        reader: ChangelogReader,
        state_root: Path,
        resolve_topic: Callable[[str], str],
        partition_count: Callable[[str], int],
    ) -> None:
        self.topology = topology
        self.config = config
        self.commits = commits
        self.reader = reader
        self.committed_offsets: Offsets = {}  # the consumed offsets of the last successful commits
        self.state_root = state_root
        self.resolve_topic = resolve_topic
        self.partition_count = partition_count
        self.tracer = tracer_for(config)  # a span per commit (`tracing.enabled`), else None
        # Told of every new active task once its stores are open (DEBUG-level store metrics wrap them).
        self.on_task_created: Callable[[StreamTask], None] = lambda _task: None
        # Looks up topics first named by a dynamically routed sink (set by the supervisor).
        self.resolve_topics: TopicResolver | None = None
        # Reads what was committed for a task's partitions before it starts (set by the supervisor).
        self.read_commits: CommitReader | None = None
        # What a task commits from the offsets it processed: the consumer's position where the task
        # processed everything fetched (set by the supervisor, see `PartitionPositions.committable`).
        self.committable: Callable[[TaskActor, Offsets], Offsets] = lambda _actor, offsets: offsets
        self.global_stores: Mapping[str, StateStore] = {}  # the instance's global stores, read by every task
        self.actors: dict[TaskKey, TaskActor] = {}
        self.tasks_created = 0
        """Active tasks created (stores opened), for Kafka Streams' thread metric task-created-total."""
        self.tasks_closed = 0
        """Active tasks closed, clean or dirty, restoring or running (task-closed-total)."""
        self.restoring: dict[TaskKey, tuple[StreamTask, RecordSender, list[tuple[str, int]]]] = {}
        self._by_partition: dict[tuple[str, int], TaskActor] = {}
        self._sub_of_topic: dict[str, SubTopology] = {}
        for sub in topology.sub_topologies():
            for t in sub.source_topics:
                self._sub_of_topic[resolve_topic(t)] = sub
        self._tg: TaskGroup | None = None
        self._n_tasks = 1  # active tasks of the last assignment (their share of the uncommitted bytes)
        self._generations: dict[str, int] = {}  # task id -> the generation its last `Commit` sealed
        self._outages: dict[str, tuple[int, int]] = {}
        """Task id -> (wall-clock ms the outage began, revivals so far) of a task revived after an outage
        (module docstring), until it commits progress."""

    def bind(self, tg: TaskGroup) -> None:
        """The supervisor's task group, in which task actors run, and with them the batch pumps that
        hand their output to the producer (see `CommitProtocol.bind`)."""
        self._tg = tg
        self.commits.bind(tg)

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

    def _cache_bytes(self, subs: Iterable[SubTopology]) -> int:
        return cache_bytes_per_task(self.config, self.topology, subs)

    # -- assignment ---------------------------------------------------------------------------------
    async def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Make this instance's tasks exactly those of `partitions`: close the ones that moved away and
        create the new ones, which start in restoration (see `restore_step`)."""
        wanted = self.task_keys_for(partitions)
        for key in [k for k in self.actors if k not in wanted]:
            await self._close_task(key, clean=True)
        for key in [k for k in self.restoring if k not in wanted]:
            await self._close_restoring(key)
        subs = {s.id: s for s in self.topology.sub_topologies()}
        cache_bytes = self._cache_bytes(subs[key[0]] for key in wanted)
        self._n_tasks = len(wanted)
        for key, tps in sorted(wanted.items()):
            if key in self.actors:
                for tp in tps:
                    self._by_partition[tp] = self.actors[key]
            elif key in self.restoring:
                self.restoring[key] = (self.restoring[key][0], self.restoring[key][1], tps)
            else:
                await self._create_task(subs[key[0]], key[1], tps, cache_bytes)

    def restoring_partitions(self) -> list[tuple[str, int]]:
        return [tp for _, _, tps in self.restoring.values() for tp in tps]

    async def _create_task(self, sub: SubTopology, partition: int, tps: list[tuple[str, int]],
                           cache_bytes: int) -> None:
        task = new_runtime_task(self.topology, sub, partition, self.config, self.state_root, self.resolve_topic,
                                self.partition_count, cache_bytes)
        # First the sender: under exactly-once it waits out the previous owner's pending transaction,
        # so the changelog holds no open transaction of theirs when we restore from it.
        task.global_stores = self.global_stores
        task.state.uncommitted_limit = int(self.config["statestore.uncommitted.max.bytes"]) // max(1, self._n_tasks)
        sender = await self.commits.open_task(task.task_id, tps)
        try:
            task.initialize_stores()
        except BaseException:
            task.close(clean=False)
            await self.commits.close_task(task.task_id, clean=False)
            raise
        self.tasks_created += 1
        self.on_task_created(task)
        self.reader.begin(task)
        self.restoring[(sub.id, partition)] = (task, sender, tps)

    async def restore_step(self, max_seconds: float = 0.2) -> list[tuple[str, int]]:
        """Restore for a while; start the actors of tasks whose stores are complete and return their
        input partitions (the caller positions them at the committed offsets and resumes them)."""
        assert self._tg is not None, "bind() the task group first"
        activated: list[tuple[str, int]] = []
        completed = [(task.subtopology.id, task.partition) for task in await self.reader.step(max_seconds)]
        # Read before the processors' init, as Kafka Streams does; a failure leaves the tasks restoring
        # (the member fails, and `abandon` closes them).
        committed = await self._committed_metadata([tp for key in completed for tp in self.restoring[key][2]])
        for key in completed:
            task, sender, tps = self.restoring.pop(key)
            try:
                if self.config.exactly_once:
                    # From now on the local stores run ahead of the committed changelog until a clean
                    # close writes a new checkpoint; a crash before that leaves none: state is rebuilt.
                    task.state.delete_checkpoint()
                    task.state.begin_transactions()  # from now on the stores stage uncommitted writes
                task.restore_times(CommitTimes(*_times_of(committed, tps)))
                task.initialize_processors()
            except BaseException:
                task.close(clean=False)
                await self.commits.close_task(task.task_id, clean=False)
                raise
            actor = TaskActor(task, sender.send, push_out=sender.push_out)
            actor.resolve_topics = self.resolve_topics
            self._prepare_for_outages(actor)
            self.actors[key] = actor
            for tp in tps:
                self._by_partition[tp] = actor
            self._tg.start_soon(actor.run, name=f"task-{task.task_id}")
            activated.extend(tps)
            log.info("task %s started on %s", task.task_id, ", ".join(f"{t}-{p}" for t, p in tps))
        return activated

    def _prepare_for_outages(self, actor: TaskActor) -> None:
        """The actor stops on an outage instead of failing (module docstring); under exactly-once held output
        gives up at half the transaction timeout; a task revived after an outage backs off first."""
        actor.revive_on_outage = True
        if self.config.exactly_once:
            actor.hold_limit_ms = int(self.config["transaction.timeout.ms"]) // 2
        outage = self._outages.get(actor.task_id)
        if outage is not None:
            backoff_ms = int(self.config.get(RETRY_BACKOFF, 100))
            actor.start_delay_ms = min(int(self.config.get(RETRY_BACKOFF_MAX, 1000)),
                                       backoff_ms << min(outage[1], 30))

    def corrupted_tasks(self) -> TasksCorrupted | None:
        """The running tasks whose actor stopped on an outage, as the failure the committer recovers from
        (None: there is none). Raises the outage's error once it has lasted `task.timeout.ms`."""
        failed: list[str] = []
        now = int(time.time() * 1000)
        timeout_ms = int(self.config["task.timeout.ms"])
        for actor in self.actors.values():
            error = actor.outage
            if error is None or not actor.closed.is_set():
                continue  # (at-least-once: it may still be delivering what it produced)
            since, revivals = self._outages.get(actor.task_id, (actor.outage_since, 0))
            if now - since >= timeout_ms:
                error.add_note(f"task {actor.task_id}: it lasted longer than task.timeout.ms ({timeout_ms} ms) "
                               f"over {revivals} revivals: raise it to wait longer")
                raise error
            self._outages[actor.task_id] = (since, revivals + 1)
            failed.append(actor.task_id)
        if not failed:
            return None
        return TasksCorrupted("tasks stopped for want of a service they need (their uncommitted work is thrown "
                              "away, and they start again from their last commit)", sorted(failed))

    async def revive(self, task_ids: Iterable[str]) -> list[tuple[str, int]]:
        """Close the named tasks dirty (under exactly-once every running task: they share the transaction the
        close aborts) and create them again, restoring (module docstring); returns their input partitions,
        which the caller pauses until the restoration is done and seeks to the committed offsets then."""
        wanted = set(task_ids)
        if self.config.exactly_once:
            wanted |= {actor.task_id for actor in self.actors.values()}
        closed: dict[TaskKey, list[tuple[str, int]]] = {}
        outages = {task_id: self._outages[task_id] for task_id in wanted if task_id in self._outages}
        for key, actor in list(self.actors.items()):
            if actor.task_id in wanted:
                closed[key] = [tp for tp, a in self._by_partition.items() if a is actor]
                await self._close_task(key, clean=False)
        self._outages.update(outages)  # (any other close ends a task's outage)
        subs = {s.id: s for s in self.topology.sub_topologies()}
        keys = [*self.actors, *self.restoring, *closed]
        cache_bytes = self._cache_bytes(subs[key[0]] for key in keys)
        for key, tps in sorted(closed.items()):
            await self._create_task(subs[key[0]], key[1], tps, cache_bytes)
        return [tp for tps in closed.values() for tp in tps]

    async def _committed_metadata(self, partitions: Partitions) -> dict[tuple[str, int], str]:
        """The metadata committed with the offsets of `partitions` (those with a committed offset)."""
        if not partitions or self.read_commits is None:
            return {}
        found = await self.read_commits(partitions)
        return {tp: metadata for tp, (offset, metadata) in found.items() if offset is not None}

    async def _close_restoring(self, key: TaskKey) -> None:
        """A task that moved away before its restoration finished: nothing was processed, so nothing
        is committed; its partly restored stores are closed without a checkpoint (rebuilt next time)."""
        task, _, _ = self.restoring.pop(key)
        self.reader.cancel(task)
        task.close(clean=False)
        self.tasks_closed += 1
        await self.commits.close_task(task.task_id, clean=False)
        log.info("task %s closed while restoring", task.task_id)

    async def _close_task(self, key: TaskKey, clean: bool) -> None:
        """Close a task. Clean: flush, commit its last work, checkpoint. Dirty: drop uncommitted work
        (under exactly-once its transaction is aborted and its local state will be rebuilt). A clean
        close whose commit is refused (the task's new owner fenced us) becomes a dirty one."""
        actor = self.actors.pop(key)
        self.tasks_closed += 1
        self._outages.pop(actor.task_id, None)
        for tp in [tp for tp, a in self._by_partition.items() if a is actor]:
            del self._by_partition[tp]
        task = actor.task
        task_id = task.task_id
        try:
            if actor.closed.is_set():
                # The actor failed or was cancelled: it never closed the task, whose stores are still
                # open (and a LevelDB store keeps its lock, so reopening it would fail until restart).
                clean = False
                _close_quietly(task)
            else:
                close = Close(clean, keep_stores_open=self.config.exactly_once)
                offsets: Offsets = self.committable(actor, await actor.request(close))
                if clean:
                    acked = await self._commit_with_running({task_id: offsets}, _metadata_of(close.times, offsets))
                    acked.update(await self.commits.close_task(task_id, clean=True))
                    task.post_commit(acked, enforce=True)
        except CommitFailed as exc:
            log.warning("task %s: %s; closing it dirty", task_id, exc)
            clean = False
        except Exception:
            if clean and not self.config.exactly_once:
                await self.commits.close_task(task_id, clean=False)
                raise
            log.exception("error while closing task %s; closing it dirty", task_id)
            clean = False
        finally:
            task.state.close()  # a clean close under exactly-once left them open for its commit
        if not clean:
            await self.commits.close_task(task_id, clean=False)
            _discard_uncommitted(task, self.config)
        log.info("task %s closed (%s)", task_id, "clean" if clean else "dirty")

    def abandon(self) -> None:
        """Close every task still open, dirty and synchronously, when the member ends without having
        closed them (it failed, or a cancellation cut its shutdown short; every actor has stopped).
        Nothing is committed; their stores are closed so that a replacement member can open them
        again, and under exactly-once their local state is wiped, as after any dirty close."""
        tasks = [task for task, _, _ in self.restoring.values()] + [a.task for a in self.actors.values()]
        self.tasks_closed += len(tasks)
        self.restoring.clear()
        self.actors.clear()
        self._by_partition.clear()
        for task in tasks:
            _close_quietly(task)
            _discard_uncommitted(task, self.config)
            log.warning("task %s abandoned: closed dirty as the group member ended", task.task_id)

    async def close_dirty(self, task_ids: Iterable[str]) -> list[tuple[str, int]]:
        """Close the named tasks dirty (their commit failed); returns the partitions they read."""
        wanted = set(task_ids)
        dropped: list[tuple[str, int]] = []
        for key, actor in list(self.actors.items()):
            if actor.task_id in wanted:
                dropped.extend(tp for tp, a in self._by_partition.items() if a is actor)
                await self._close_task(key, clean=False)
        return dropped

    # -- committing ---------------------------------------------------------------------------------
    async def _flush_running(self) -> tuple[dict[str, Offsets], dict[tuple[str, int], str]]:
        """Every running task flushes its stores and output; returns the offsets each consumed, and the
        metadata to commit with them."""
        results: dict[str, Offsets] = {}
        metadata: dict[tuple[str, int], str] = {}
        self._generations = {}

        async def one(actor: TaskActor) -> None:
            commit = Commit()
            try:
                reply = await actor.request(commit)
            except (RetriableError, TaskStoppedError):
                if actor.revive_on_outage and actor.outage is not None:
                    return  # stopped on an outage: closed dirty and revived (`corrupted_tasks`)
                raise
            offsets = results[actor.task_id] = self.committable(actor, reply)
            metadata.update(_metadata_of(commit.times, offsets))
            self._generations[actor.task_id] = commit.generation

        async with anyio.create_task_group() as tg:
            for actor in self.actors.values():
                tg.start_soon(one, actor)
        corrupted = self.corrupted_tasks()
        if corrupted is not None:
            # Nothing is committed: under exactly-once the corrupted tasks' output is in the transaction.
            raise corrupted
        return results, metadata

    async def _post_committed(self, acked: Offsets) -> None:
        """Tell the tasks flushed by the last `_flush_running` that their commit succeeded: under
        at-least-once they checkpoint now and then, under exactly-once their stores write the writes
        staged for it (`Committed.generation`)."""
        generations, self._generations = self._generations, {}
        for actor in self.actors.values():
            if actor.closed.is_set() or actor.outage is not None:
                continue  # stopped on an outage meanwhile: it is closed dirty and revived next
            if actor.task_id in generations and actor.task.processed:
                self._outages.pop(actor.task_id, None)  # a revived task's progress is committed: the outage is over
            if actor.task_id in generations:
                await actor.post(Committed(acked, generations[actor.task_id] if self.config.exactly_once else None))

    async def _commit_with_running(self, closing: dict[str, Offsets], closing_metadata: Metadata) -> Offsets:
        """Commit a closing task. Under exactly-once every running task's output shares its
        transaction, so every running task commits with it (Kafka Streams' EOS-v2 does the same)."""
        if not self.config.exactly_once:
            return await self.commits.commit(closing, closing_metadata)
        results, metadata = await self._flush_running()
        acked = await self.commits.commit({**results, **closing}, {**metadata, **closing_metadata})
        for offsets in results.values():
            self.committed_offsets.update(offsets)
        await self._post_committed(acked)
        return acked

    async def commit(self) -> int:
        """Flush every task, make output and offsets durable, then let tasks checkpoint.
        Raises `CommitFailed` (exactly-once) or the delivery error (at-least-once)."""
        if not self.actors:
            return 0
        started = time.perf_counter_ns()
        with commit_span(self.tracer, [f"{s}_{p}" for s, p in sorted(self.actors)], self.config.exactly_once):
            results, metadata = await self._flush_running()
            if latency_trace.TRACE is not None:
                latency_trace.TRACE.duration("commit.flush-tasks", started)
            acked = await self.commits.commit(results, metadata)
        for offsets in results.values():
            self.committed_offsets.update(offsets)
        # Under exactly-once the checkpoint file is written only at a clean close (see `restore_step`).
        await self._post_committed(acked)
        return sum(len(o) for o in results.values())

    async def close_all(self, clean: bool) -> None:
        """Close every task (clean: commit and checkpoint each; dirty: throw uncommitted work away)."""
        for key in list(self.restoring):
            await self._close_restoring(key)
        first_error: BaseException | None = None
        for key in list(self.actors):
            try:
                await self._close_task(key, clean)
            except Exception as exc:
                first_error = first_error or exc
        if first_error is not None:
            raise first_error

    def stores(self, name: str) -> list[Any]:
        return [a.task.stores[name] for a in self.actors.values() if name in a.task.stores]


def _metadata_of(times: CommitTimes | None, offsets: Offsets) -> dict[tuple[str, int], str]:
    """What to commit with `offsets` (Kafka Streams' encoding of the task's `times`)."""
    if times is None:
        return {}
    return encode_commit_metadata(times.partition_times, times.processor_metadata, offsets)


def _times_of(committed: Mapping[tuple[str, int], str], partitions: Partitions) -> tuple[
        dict[tuple[str, int], int], dict[str, int]]:
    """A task's partition times and processor metadata from what was committed with its partitions.
    streamlet's own entries (the Spark engine's, see `commit_metadata`) describe a Spark task's position
    and are left out here: a task of this runtime starts its punctuations and observed times anew."""
    partition_times, merged = decode_committed({tp: committed[tp] for tp in partitions if tp in committed})
    return partition_times, {k: v for k, v in merged.items() if not is_streamlet_key(k)}


def _discard_uncommitted(task: StreamTask, config: StreamsConfig) -> None:
    """After a dirty close under exactly-once: local state that may hold uncommitted writes is wiped;
    stores that hold only committed data (their staged writes went with the close) are kept."""
    if config.exactly_once and not task.state.keeps_committed_state():
        task.state.wipe_local_state()


def _close_quietly(task: StreamTask) -> None:
    """Close a task dirty whose actor is gone; an error is logged, never raised (the task is dropped)."""
    try:
        task.close(clean=False)
    except Exception:
        log.exception("error while closing task %s dirty", task.task_id)
