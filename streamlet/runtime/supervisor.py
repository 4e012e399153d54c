"""`Supervisor`: one group member — consumer, producer, task actors — run as one task group.

The supervisor is the only place that talks to the consumer group: it polls, routes each consumed
batch to the actor of its task, commits on the commit interval, and handles rebalance callbacks.
Its task group holds the poll loop and every task actor, so a failure anywhere cancels the whole
member (structured concurrency) and surfaces in `KafkaStreams` as the ERROR state.

Rebalances (aiokafka's eager protocol): on revoke, dispatch stops and everything processed so far
is flushed and committed; on assign, tasks whose partitions left are closed and new tasks are
created and restored before any of their records is dispatched. Tasks whose partitions stayed keep
their open stores. After every assignment the supervisor seeks each partition explicitly: a kept
task's partitions to the next offset it has not been handed, a new task's to the committed offset
(under exactly-once a stable one: read once no transaction of the previous owner is pending). A
batch fetched before a rebalance is dropped (its records are fetched again from those positions),
so no record is skipped or handed over twice.

Keeping a task across a rebalance is safe only while this member stayed in the group the whole
time: then nobody else can have run the task in between. A member that was dropped (frozen past its
session timeout, cut off from the coordinator) learns it from a heartbeat or a commit that the
coordinator answers with "unknown member" or "illegal generation"; aiokafka then resets its member id
and rejoins through the same revoke/assign callbacks as an ordinary rebalance, and may well be handed
its own tasks back. Those tasks are *lost*, as Kafka Streams calls it (`onPartitionsLost`): another
member may have processed and committed their partitions meanwhile, so their stores and positions
are stale. They are closed dirty without committing anything, and whatever comes back is created
anew: restored from the changelog and started at the group's committed offsets.

Under exactly-once a failed commit (refused by the group because it moved on, or a producer error)
closes every task of the shared transaction dirty — transaction aborted, local state discarded —
and rejoins the group: whatever this member still owns is then rebuilt from the changelogs and the
committed offsets.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.client import ConnectionGroup
from aiokafka.conn import CloseReason
from aiokafka.errors import (
    ClusterAuthorizationFailedError,
    CommitFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailed,
)

from streamlet.actors.error_handlers import dead_letter_topic, skip_failed_productions
from streamlet.actors.record_collector import UnknownTopicError
from streamlet.actors.task_id import TaskId
from streamlet.config import StreamsConfig
from streamlet.errors import ApplicationShutdownError, StrayCancellationError
from streamlet.kafka.assignor import make_assignor
from streamlet.kafka.changelog_reader import ChangelogReader
from streamlet.kafka.client_settings import (
    ClientRole,
    KafkaAuthorizationError,
    client_kwargs,
    resolved_settings,
    stop_client,
)
from streamlet.kafka.fenced_offsets import fetch_stable_offsets
from streamlet.kafka.restore_records import always_hand_out_as_decoded
from streamlet.kafka.topic_manager import TopicPlan, await_sink_topics, prepare_topics
from streamlet.metrics import latency_trace
from streamlet.metrics.counters import ThreadCounters
from streamlet.runtime.commit_protocol import (
    AtLeastOnceCommits,
    CommitFailed,
    CommitProtocol,
    ExactlyOnceCommits,
)
from streamlet.runtime.global_state import GlobalStreamThread, start_global_thread
from streamlet.runtime.instance_id import claim_instance_id, state_root
from streamlet.runtime.repartition_purger import RepartitionPurger
from streamlet.runtime.standby import StandbyTasks
from streamlet.runtime.task_manager import TaskManager
from streamlet.topology import Topology

log = logging.getLogger(__name__)

RESTORE_PARTITION_FETCH_BYTES = 4 << 20
"""The restore consumer's fetch size per partition (Kafka's default is 1 MiB). Every changelog partition
still to restore is fetched at once (see `ChangelogReader`): `RESTORE_FETCH_BYTES` bounds the total."""
RESTORE_FETCH_BYTES = 50 << 20
"""The restore consumer's fetch size in all (Kafka's default)."""


_AUTHORIZATION_ERRORS = (TransactionalIdAuthorizationFailed, GroupAuthorizationFailedError,
                         TopicAuthorizationFailedError, ClusterAuthorizationFailedError)


def _authorization_message(exc: BaseException, app_id: str) -> str:
    """What the cluster refused, with the ACL Kafka Streams documents for it."""
    if isinstance(exc, TransactionalIdAuthorizationFailed):
        return (f"the cluster refuses this instance's transactional id (exactly-once needs WRITE and DESCRIBE "
                f"on TRANSACTIONAL_ID with the prefix {app_id!r}, e.g. ALL on it): {exc}")
    if isinstance(exc, GroupAuthorizationFailedError):
        return f"the cluster refuses the consumer group {app_id!r} (needs READ on GROUP {app_id!r}): {exc}"
    if isinstance(exc, ClusterAuthorizationFailedError):
        return f"the cluster refuses a cluster-level operation (e.g. IDEMPOTENT_WRITE on CLUSTER): {exc}"
    return f"the cluster refuses access to a topic (READ on inputs, WRITE on outputs, ALL on {app_id!r}-*): {exc}"


async def _stop_group_consumer(consumer: AIOKafkaConsumer) -> None:
    """Stop the group consumer, also in the middle of a rebalance.

    aiokafka's stop() first lets its coordination routine finish, and during a rebalance that routine
    sits in a JoinGroup the coordinator answers only when every member rejoined or timed out: a close
    while another member is frozen would wait for that member's session to expire. This member is
    leaving anyway, so the pending join is abandoned: its routine is cancelled and its connection closed
    (a broker answers one request per connection at a time, so a LeaveGroup behind the parked JoinGroup
    would wait just as long). stop() then sends LeaveGroup on a new connection, which also lets the
    rebalance go on without this member at once."""
    coordinator: Any = getattr(consumer, "_coordinator", None)
    routine = getattr(coordinator, "_coordination_task", None)
    if routine is not None and not routine.done() and consumer._subscription.reassignment_in_progress:
        log.info("closing during a rebalance: abandoning the pending join and leaving the group")
        routine.cancel()
        await asyncio.wait({routine})  # never raises: the routine's cancellation is not ours
        joining = consumer._client._conns.get((coordinator.coordinator_id, ConnectionGroup.COORDINATION))
        if joining is not None:
            joining.close(reason=CloseReason.SHUTDOWN)
    await stop_client(consumer)


class _RebalanceListener(ConsumerRebalanceListener):
    def __init__(self, supervisor: Supervisor) -> None:
        self._sup = supervisor

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._sup.on_revoked(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._sup.on_assigned(assigned)


async def _stop_groupless_consumer(consumer: AIOKafkaConsumer) -> None:
    """Stop a consumer without a group (restoration, standbys). Its stop() cancels a background task
    and awaits it; a task cancelled before it first ran (a stop straight after start, when start-up
    fails) re-raises CancelledError, which would look like a cancellation of the caller. One
    checkpoint lets the task start first."""
    await anyio.lowlevel.checkpoint()
    await stop_client(consumer)


class Supervisor:
    def __init__(self, topology: Topology, config: StreamsConfig,
                 on_rebalance: Callable[[bool], None] | None = None) -> None:
        self.topology = topology
        self.config = config
        self.app_id = config.application_id
        self._on_rebalance = on_rebalance or (lambda _running: None)
        self._stop = anyio.Event()
        # Around the poll: aiokafka's getmany waits, without a timeout, for a rebalance in progress to
        # finish; stop() cancels it so that a close during a rebalance stuck on a frozen member is prompt.
        self._poll_scope: anyio.CancelScope | None = None
        self._dispatch_lock = anyio.Lock()
        self._commit_interval_s = int(config["commit.interval.ms"]) / 1000
        self.plan: TopicPlan | None = None
        self._partition_counts: dict[str, int] = {}
        self.tasks: TaskManager | None = None
        self.consumer: Any = None
        self.producer: Any = None
        self.restore_consumer: Any = None
        self.assigned: set[tuple[str, int]] = set()
        self.commits = 0
        self.commit_protocol: CommitProtocol | None = None
        self.standby_consumer: Any = None
        self.standbys: StandbyTasks | None = None
        self.global_thread: GlobalStreamThread | None = None
        self._assignor: Any = None
        self.dirty_recoveries = 0
        self.full_queue_pauses = 0
        self.shutdown_requested = False
        self._epoch = 0  # bumped by every rebalance callback; a batch fetched in an older epoch is stale
        # (member id, generation) under which the current tasks were assigned: see _lost_since_assignment.
        self._assigned_as: tuple[str, int] | None = None
        self.lost_memberships = 0
        self._fatal: BaseException | None = None  # ends the member: retrying cannot help (see on_assigned)
        # Per partition: the task actor it feeds and the next offset not yet handed to that actor. An
        # entry of an actor that is gone (closed, or replaced by a new task) is stale and ignored.
        self._next_offset: dict[tuple[str, int], tuple[Any, int]] = {}
        # Partitions of tasks that read several partitions and whose fetch is not yet known to be at the
        # partition's end: such a task idles while one of them is empty (PartitionGroup's docstring).
        self._awaited: dict[tuple[str, int], Any] = {}
        # Partitions paused because their task's queue is full (`buffered.records.per.partition`).
        self._paused_full: set[tuple[str, int]] = set()
        self._max_buffered = int(config["buffered.records.per.partition"])
        self.counters = ThreadCounters()  # poll and commit times behind the thread metrics
        self._trace_uncommitted: list[tuple[str, int]] = []  # (sub-topology, timestamp): see latency_trace
        self.on_loop: Callable[[], None] = lambda: None  # called once per poll loop (metrics sampling)
        self.on_task_created: Callable[[Any], None] = lambda _task: None  # see TaskManager.on_task_created

    def _fail(self, exc: BaseException) -> None:
        """End the member with `exc` (the global thread failed)."""
        self._fatal = self._fatal or exc
        self.stop()

    def resolve_topic(self, name: str) -> str:
        return f"{self.app_id}-{name}" if name in self.topology.internal_topics else name

    def _partition_count(self, topic: str) -> int:
        n = self._partition_counts.get(topic)
        if n is None:
            raise UnknownTopicError(f"topic {topic!r} is unknown to this application (not created or described)")
        return n

    async def _learn_topics(self, topics: set[str]) -> None:
        """Partition counts of topics a dynamically routed sink named for the first time. They must exist, as
        in Kafka Streams (whose producer waits `max.block.ms` for them): waits up to 60 s, then fails."""
        missing = topics - self._partition_counts.keys()
        if missing:
            self._partition_counts.update(
                await await_sink_topics(self._client_kwargs(ClientRole.ADMIN), missing, 60.0))
            log.info("output topic(s) %s named by a topic name extractor: partition counts %s", sorted(missing),
                     {t: self._partition_counts[t] for t in sorted(missing)})

    def _state_root(self) -> Path:
        return state_root(self.config, self.app_id)

    def _tasks_with_local_state(self) -> list[TaskId]:
        """Tasks whose state directory survives from an earlier run: claimed at the first join, so
        that the sticky assignor gives them back to this instance instead of restoring them elsewhere."""
        root = self._state_root()
        found = []
        if root.is_dir():
            for entry in root.iterdir():
                try:
                    task = TaskId.parse(entry.name)
                except ValueError:
                    continue
                if entry.is_dir() and task.subtopology in self.plan_subtopologies():
                    found.append(task)
        return sorted(found)

    def plan_subtopologies(self) -> set[int]:
        return set(self.plan.subtopology_partitions) if self.plan is not None else set()

    @property
    def stop_requested(self) -> bool:
        """True once `stop()` was called or the member decided to stop (application shutdown, a fatal error)."""
        return self._stop.is_set()

    async def wait_for_stop(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for `stop()`; True if it came."""
        with anyio.move_on_after(timeout):
            await self._stop.wait()
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        if self._poll_scope is not None:
            self._poll_scope.cancel()

    def _client_kwargs(self, role: ClientRole = ClientRole.MAIN_CONSUMER) -> dict[str, Any]:
        """Connection, security and tuning arguments of one client (see `client_settings`)."""
        return client_kwargs(self.config, role)

    async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until `stop()`; then commit and close cleanly. Reports started once the group is joined.

        Every resource is released through one exit stack, in the reverse order of acquisition, so a
        start-up that fails half-way (the broker went away, a store could not open) still stops the
        clients it started and releases the instance id it claimed."""
        async with AsyncExitStack() as resources:
            await self._run(resources, task_status)

    async def _run(self, resources: AsyncExitStack, task_status: Any) -> None:
        config = self.config
        self.plan = await prepare_topics(self.topology, self.app_id, self._client_kwargs(ClientRole.ADMIN),
                                         replication_factor=int(config["replication.factor"]),
                                         dead_letter_topic=dead_letter_topic(config))
        self._partition_counts = self.plan.partition_counts
        producer_config = {**self._client_kwargs(ClientRole.PRODUCER), "acks": "all"}
        replicas = int(config["num.standby.replicas"])
        stateful = {sub.id for sub in self.topology.sub_topologies() if sub.stores}
        assignor = make_assignor(self.plan.source_topics, self._tasks_with_local_state(),
                                 standby_replicas=replicas, stateful_subtopologies=stateful,
                                 application_server=str(config.get("application.server") or ""))
        self._assignor = assignor
        self.consumer = AIOKafkaConsumer(  # auto.offset.reset, max.poll.records, timeouts: _client_kwargs
            **self._client_kwargs(ClientRole.MAIN_CONSUMER), group_id=self.app_id, enable_auto_commit=False,
            isolation_level="read_committed" if config.exactly_once else "read_uncommitted",
            partition_assignment_strategy=(assignor,),
        )
        commits: CommitProtocol
        if config.exactly_once:
            instance_id, release_instance_id = claim_instance_id(self._state_root())
            resources.callback(release_instance_id)
            commits = ExactlyOnceCommits(self.app_id, f"{self.app_id}-{instance_id}", producer_config,
                                         int(config["transaction.timeout.ms"]), self.consumer,
                                         skip_failed_productions(config))
        else:
            self.producer = AIOKafkaProducer(**producer_config, enable_idempotence=True)
            commits = AtLeastOnceCommits(self.producer, self._commit_offsets, skip_failed_productions(config))
        self.commit_protocol = commits
        # A short fetch wait: restoration reads finite data, and a long-poll still waiting on the
        # partition restored last would delay the first fetch of the next one. Large fetches: a
        # changelog is read from its start, and every round trip to the broker is time not restoring
        # (`restore.consumer.` settings still win).
        self.restore_consumer = AIOKafkaConsumer(
            **{"fetch_max_wait_ms": 20, "max_partition_fetch_bytes": RESTORE_PARTITION_FETCH_BYTES,
               "fetch_max_bytes": RESTORE_FETCH_BYTES, **self._client_kwargs(ClientRole.RESTORE_CONSUMER)},
            group_id=None,
            enable_auto_commit=False, auto_offset_reset="earliest",
            isolation_level="read_committed" if config.exactly_once else "read_uncommitted",
        )
        self.purger = RepartitionPurger(
            self._client_kwargs(ClientRole.ADMIN),
            [self.resolve_topic(n) for n, spec in self.topology.internal_topics.items() if spec.kind == "repartition"],
            int(config["repartition.purge.interval.ms"]))
        reader = ChangelogReader(self.restore_consumer, read_committed=config.exactly_once)
        self.tasks = TaskManager(self.topology, config, commits, reader,
                                 self._state_root(), self.resolve_topic, self._partition_count)
        self.tasks.on_task_created = self.on_task_created
        self.tasks.resolve_topics = self._learn_topics
        resources.callback(self.tasks.abandon)  # runs last: tasks a failure left open are closed dirty
        if self.producer is not None:
            await self.producer.start()
            resources.push_async_callback(stop_client, self.producer)
        if replicas > 0:
            self.standby_consumer = AIOKafkaConsumer(
                **self._client_kwargs(ClientRole.RESTORE_CONSUMER), group_id=None, enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level="read_committed" if config.exactly_once else "read_uncommitted",
            )
            await self.standby_consumer.start()
            resources.push_async_callback(_stop_groupless_consumer, self.standby_consumer)
            self.standbys = StandbyTasks(self.topology, config, self.standby_consumer, self._state_root(),
                                         self.resolve_topic, self._partition_count)
            resources.callback(self.standbys.close)
        await self.restore_consumer.start()
        resources.push_async_callback(_stop_groupless_consumer, self.restore_consumer)
        self.global_thread = await start_global_thread(  # restored before any task starts
            self.topology, config, self._state_root(), self._client_kwargs(ClientRole.RESTORE_CONSUMER),
            self._client_kwargs(ClientRole.ADMIN), self._fail)
        if self.global_thread is not None:
            resources.push_async_callback(self.global_thread.close)
            self.tasks.global_stores = self.global_thread.stores
        await self.consumer.start()
        always_hand_out_as_decoded(self.consumer)  # the tasks need no ConsumerRecord per record
        resources.push_async_callback(_stop_group_consumer, self.consumer)
        resources.push_async_callback(self.commit_protocol.stop)  # before the consumer stops (LIFO)
        self.consumer.subscribe(sorted(self.plan.source_topics), listener=_RebalanceListener(self))
        async with anyio.create_task_group() as tg:
            self.tasks.bind(tg)
            task_status.started()
            try:
                try:
                    await self._poll_loop()
                except asyncio.CancelledError as exc:
                    StrayCancellationError.check(exc, "the poll loop")
                    raise
                if self._fatal is not None:
                    async with self._dispatch_lock:
                        await self.tasks.close_all(clean=False)
                    raise self._fatal
                await self._shutdown()
            finally:
                await self.purger.close()
            if self.shutdown_requested:
                raise ApplicationShutdownError(
                    f"an instance of application {self.app_id!r} requested an application shutdown")

    async def _poll_loop(self) -> None:
        assert self.tasks is not None
        consumer = self.consumer
        poll_ms = int(self.config["poll.ms"])
        # The main consumer's own value: `main.consumer.max.poll.records` > `consumer.` > unprefixed.
        max_records = int(resolved_settings(self.config, ClientRole.MAIN_CONSUMER)["max.poll.records"])
        last_commit = time.monotonic()
        while not self._stop.is_set():
            if self.tasks.restoring:
                async with self._dispatch_lock:
                    await self._restore_step()
            if self.standbys is not None:
                async with self._dispatch_lock:
                    await self.standbys.step()
            epoch = self._epoch
            timeout = 0 if self.tasks.restoring else poll_ms
            if self._paused_full:
                self._resume_drained()
            polled_at = time.perf_counter_ns()
            batches: dict[Any, list[Any]] = {}
            with anyio.CancelScope() as self._poll_scope:
                if self._stop.is_set():  # set during the awaits above
                    self._poll_scope.cancel()
                batches = await consumer.getmany(timeout_ms=timeout, max_records=max_records)
            self._poll_scope = None
            if self._stop.is_set():
                break  # what was fetched stays unconsumed: the next owner reads it from the committed offsets
            self.counters.record_poll(time.perf_counter_ns() - polled_at, sum(map(len, batches.values())))
            if latency_trace.TRACE is not None:
                latency_trace.TRACE.duration("loop.poll", polled_at)
                dispatched_at = time.perf_counter_ns()
            self.on_loop()
            if batches and self.plan is not None and self.plan.missing_sinks - self._partition_counts.keys():
                await self._await_sink_topics()
            if batches or self._awaited:
                async with self._dispatch_lock:
                    if epoch == self._epoch and not self._out_of_group():
                        await self._dispatch(batches)
                    else:
                        self._refetch(batches)
                if latency_trace.TRACE is not None:
                    latency_trace.TRACE.duration("loop.dispatch", dispatched_at)
            if time.monotonic() - last_commit >= self._commit_interval_s or self._commit_requested():
                async with self._dispatch_lock:
                    await self._commit()
                # The interval runs from the end of a commit, as Kafka Streams' maybeCommit() times it: a
                # slow commit (tasks working off their mailboxes, a transaction per task) is followed by
                # a full interval of processing, never by the next commit straight away.
                last_commit = time.monotonic()

    async def _await_sink_topics(self) -> None:
        """Before the first output: sink topics missing at start-up must exist (see `await_sink_topics`)."""
        assert self.plan is not None
        missing = self.plan.missing_sinks - self._partition_counts.keys()
        self._partition_counts.update(await await_sink_topics(self._client_kwargs(ClientRole.ADMIN), missing, 60.0))
        log.info("sink topic(s) %s exist now: writing output to them", sorted(missing))

    async def _restore_step(self) -> None:
        """Restore a slice; tasks that completed start at their committed offsets (see ChangelogReader)."""
        assert self.tasks is not None
        activated = await self.tasks.restore_step()
        if activated:
            parts = set(activated) & self.assigned
            await self._seek_assigned(parts)
            self.consumer.resume(*(TopicPartition(t, p) for t, p in sorted(parts)))
        if not self.tasks.restoring and self.assigned:
            self._on_rebalance(True)

    async def _dispatch(self, batches: dict[Any, list[Any]]) -> None:
        assert self.tasks is not None
        for tp, records in batches.items():
            key = (tp.topic, tp.partition)
            actor = self.tasks.actor_for(tp.topic, tp.partition)
            if actor is None or key not in self.assigned or not records:
                continue
            expected = self._expected_offset(key, actor)
            if expected is not None and records[0].offset != expected:
                # Never skip or repeat: only a batch that starts where the task left off is handed over.
                records = [r for r in records if r.offset >= expected]
                if not records:
                    continue
            self._next_offset[key] = (actor, records[-1].offset + 1)
            if latency_trace.TRACE is not None:
                sub = latency_trace.sub_topology_of(actor.task_id)
                latency_trace.TRACE.record(f"{sub}.1-fetched", (r.timestamp for r in records))
                self._trace_uncommitted.extend((sub, r.timestamp) for r in records)
            caught_up = None
            if key in self._awaited or self._multi_input(actor):
                caught_up = await self._caught_up(tp)
                if caught_up:
                    self._awaited.pop(key, None)
                else:
                    self._awaited[key] = actor
            await actor.post_records(tp.topic, tp.partition, records, caught_up)
            if actor.task.partition_group.buffered_in(*key) >= self._max_buffered:
                # The task is not keeping up with this partition (it idles, waiting for another one):
                # stop fetching it rather than buffer without bound. Resumed by _resume_drained.
                self.consumer.pause(tp)
                self._paused_full.add(key)
                self.full_queue_pauses += 1
        for key, awaiting in list(self._awaited.items()):
            # A partition that returns nothing may be empty: tell its task once the fetch reached the end.
            actor = self.tasks.actor_for(*key)
            if actor is None or actor is not awaiting:
                del self._awaited[key]
            elif await self._caught_up(TopicPartition(*key)):
                del self._awaited[key]
                await actor.post_records(key[0], key[1], (), True)

    def _resume_drained(self) -> None:
        """Resume the partitions paused for a full queue once their task has worked it down below the
        limit (or the partition moved: the new assignment starts unpaused)."""
        assert self.tasks is not None
        for key in list(self._paused_full):
            actor = self.tasks.actor_for(*key)
            if actor is None or key not in self.assigned:
                self._paused_full.discard(key)
            elif actor.task.partition_group.buffered_in(*key) < self._max_buffered:
                self._paused_full.discard(key)
                self.consumer.resume(TopicPartition(*key))

    @staticmethod
    def _multi_input(actor: Any) -> bool:
        return len(actor.task.sources_by_topic) > 1

    async def _caught_up(self, tp: TopicPartition) -> bool:
        """True when this partition's fetch position is at its end (last stable offset under read_committed)."""
        consumer = self.consumer
        end = consumer.last_stable_offset(tp) if self.config.exactly_once else consumer.highwater(tp)
        if end is None:
            return False
        try:
            return bool(await consumer.position(tp) >= end)
        except Exception:  # not assigned any more: the next assignment decides
            return False

    def _expected_offset(self, key: tuple[str, int], actor: Any) -> int | None:
        entry = self._next_offset.get(key)
        return entry[1] if entry is not None and actor is not None and entry[0] is actor else None

    def _refetch(self, batches: dict[Any, list[Any]]) -> None:
        """A rebalance ran while this batch was fetched, or this member is out of the group and about to
        rejoin: drop the batch and seek its partitions back to the next offset their tasks expect, so
        the same records come again through the new assignment."""
        for tp in batches:
            key = (tp.topic, tp.partition)
            offset = self._expected_offset(key, self.tasks.actor_for(*key) if self.tasks else None)
            if offset is not None and key in self.assigned:
                self.consumer.seek(tp, offset)

    def _commit_requested(self) -> bool:
        assert self.tasks is not None
        return any(a.task.commit_requested for a in self.tasks.actors.values())

    async def _commit_offsets(self, offsets: dict[tuple[str, int], int]) -> None:
        """At-least-once offset commit. A task that moved to another member in an eager rebalance is
        closed (cleanly) only once the new assignment arrives, when its partitions are no longer this
        consumer's: their offsets were committed on revocation, and committing them now would fail the
        whole takeover. Such offsets are skipped; at worst the new owner replays a little (at-least-once)."""
        if self._out_of_group():
            # aiokafka would send generation -1, which the coordinator takes as a group-less commit
            # when the group is empty: stale offsets of a dropped member would overwrite its successor's.
            raise CommitFailedError("this member is out of the group; its partitions may be another member's now")
        assigned = self.consumer.assignment()
        mine = {TopicPartition(t, p): o for (t, p), o in offsets.items() if TopicPartition(t, p) in assigned}
        if len(mine) < len(offsets):
            log.debug("not committing offsets of %d partitions no longer assigned", len(offsets) - len(mine))
        if mine:
            await self.consumer.commit(mine)

    async def _commit(self) -> None:
        assert self.tasks is not None
        started = time.perf_counter_ns()
        covered, self._trace_uncommitted = self._trace_uncommitted, []
        try:
            if await self.tasks.commit():
                self.commits += 1
                self.counters.record_commit(time.perf_counter_ns() - started)
                if latency_trace.TRACE is not None:
                    latency_trace.TRACE.duration("commit", started)
                    for sub in {s for s, _ in covered}:
                        latency_trace.TRACE.record(f"{sub}.3-committed", (ts for s, ts in covered if s == sub))
        except CommitFailed as exc:
            await self._recover_dirty(exc)
            return
        await self.purger.maybe_purge(self.tasks.committed_offsets)

    async def _recover_dirty(self, exc: CommitFailed, rejoin: bool = True) -> None:
        """Exactly-once after a failed commit: the failed tasks' uncommitted work is dropped (their
        transactions aborted, their local state discarded) and the member rejoins the group, which
        decides who runs them now. Tasks whose commit succeeded keep running."""
        assert self.tasks is not None
        self.dirty_recoveries += 1
        log.warning("%s; closing tasks %s dirty and rejoining the group", exc, ", ".join(exc.task_ids))
        dropped = await self.tasks.close_dirty(exc.task_ids)
        self.assigned -= set(dropped)
        self._epoch += 1
        if rejoin:
            self.consumer._coordinator.request_rejoin()

    async def _shutdown(self) -> None:
        assert self.tasks is not None
        async with self._dispatch_lock:
            await self._commit()
            await self.tasks.close_all(clean=True)

    # -- group membership ---------------------------------------------------------------------------
    def _membership(self) -> tuple[str, int]:
        """This member's id and generation as the consumer's group coordinator knows them now."""
        coordinator = self.consumer._coordinator
        return str(coordinator.member_id or ""), int(coordinator.generation)

    def _out_of_group(self) -> bool:
        """True once aiokafka reset the membership (the coordinator did not know this member any more)."""
        member_id, generation = self._membership()
        return generation < 0 or not member_id

    def _lost_since_assignment(self) -> str | None:
        """Why the tasks of the last assignment cannot be kept, or None while they can.

        Kept tasks are safe only if this member took part in every generation since it was handed
        them: the same member id (a dropped member rejoins under a new one) and the next generation
        (a gap means a generation whose assignment this member never received, in which the tasks may
        have run elsewhere)."""
        if self._assigned_as is None:
            return None
        before_id, before_generation = self._assigned_as
        member_id, generation = self._membership()
        if generation < 0 or not member_id:
            return f"the group coordinator no longer knows member {before_id} of generation {before_generation}"
        if member_id != before_id:
            return f"this member rejoined as {member_id}; its tasks were assigned to {before_id}"
        if generation != before_generation + 1:
            return (f"the group went from generation {before_generation} to {generation}; "
                    "this member missed the assignments in between")
        return None

    async def _close_lost_tasks(self, reason: str) -> None:
        """Kafka Streams' handleLostAll: every task closed dirty, nothing committed (the offsets and
        the open transaction belong to a membership the group has ended). Under exactly-once the local
        state is wiped; a task assigned again is restored and starts at the group's committed offsets."""
        assert self.tasks is not None
        open_tasks = sorted(a.task_id for a in self.tasks.actors.values())
        open_tasks += sorted(task.task_id for task, _, _ in self.tasks.restoring.values())
        self._assigned_as = None
        if not open_tasks:
            return
        self.lost_memberships += 1
        log.warning("group membership lost (%s): closing tasks %s dirty without committing; those assigned "
                    "again are restored from their changelogs", reason, ", ".join(open_tasks))
        self._epoch += 1
        self.assigned = set()
        await self.tasks.close_all(clean=False)

    # -- rebalance callbacks ------------------------------------------------------------------------
    async def on_revoked(self, revoked: Any) -> None:
        self._on_rebalance(False)
        assert self.tasks is not None
        async with self._dispatch_lock:
            self._epoch += 1
            self.assigned = set()
            if self._out_of_group():
                await self._close_lost_tasks(self._lost_since_assignment() or "this member is out of the group")
                return
            try:
                await self.tasks.commit()
            except CommitFailed as exc:
                await self._recover_dirty(exc, rejoin=False)  # the group is rejoining already
            except Exception:
                log.exception("commit on revocation failed; the new owners will reprocess from the last commit")
            if self._out_of_group():
                # The commit was refused because the group had moved on without this member (at-least-once;
                # under exactly-once the refusal already closed the tasks dirty).
                await self._close_lost_tasks(self._lost_since_assignment() or "the revocation commit was refused")

    async def on_assigned(self, assigned: Any) -> None:
        assert self.tasks is not None
        if self._assignor.shutdown_requested:
            self.shutdown_requested = True
            self._stop.set()
            return
        async with self._dispatch_lock:
            self._epoch += 1
            lost = self._lost_since_assignment()
            if lost is not None:
                # Missed by the revocation callback (e.g. a generation this member never saw assigned).
                await self._close_lost_tasks(lost)
            self._assigned_as = self._membership()
            parts = {(tp.topic, tp.partition) for tp in assigned}
            try:
                standby = set(self._assignor.standby_tasks) - set(self._assignor.active_tasks)
                if self.standbys is not None:
                    self.standbys.release(standby)  # a standby that became active here lets go first
                await self.tasks.assign(parts)
                if self.standbys is not None:
                    await self.standbys.update(standby)  # after an active that became standby closed
                restoring = self.tasks.restoring_partitions()
                if restoring:
                    # Nothing of a restoring task is fetched until its stores are complete.
                    self.consumer.pause(*(TopicPartition(t, p) for t, p in restoring))
                await self._seek_assigned(parts)
            except _AUTHORIZATION_ERRORS as exc:
                # A missing ACL does not heal by rejoining: every attempt would fail the same way (and
                # aiokafka swallows what a rebalance callback raises), so the member stops with the reason.
                self._fatal = KafkaAuthorizationError(_authorization_message(exc, self.app_id))
                self._fatal.__cause__ = exc
                self._stop.set()
                return
            except Exception:
                # E.g. the broker went away while a task was created. Dispatch nothing of this
                # assignment and go through the group again: the next assignment creates what is missing.
                log.exception("taking over the assigned partitions failed; rejoining the group")
                self.consumer._coordinator.request_rejoin()
                return
            self.assigned = parts
            self._paused_full.clear()  # a new assignment starts unpaused
        if not self.tasks.restoring:
            self._on_rebalance(True)

    async def _committed(self, parts: list[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
        """The group's committed offsets; under exactly-once only stable ones (see `fenced_offsets`)."""
        if self.config.exactly_once:
            return await fetch_stable_offsets(self.consumer, parts,
                                              int(self.config["transaction.timeout.ms"]) / 1000 + 30)
        return {tp: await self.consumer.committed(TopicPartition(*tp)) for tp in parts}

    async def _seek_assigned(self, parts: set[tuple[str, int]]) -> None:
        """Position every assigned partition where its task continues (see the module docstring)."""
        consumer = self.consumer
        actors = {tp: actor for tp in sorted(parts) if (actor := self.tasks.actor_for(*tp) if self.tasks else None)}
        committed = await self._committed([tp for tp, a in actors.items() if self._expected_offset(tp, a) is None])
        offsets = {tp: self._expected_offset(tp, actor) for tp, actor in actors.items()}
        offsets = {tp: committed.get(tp) if offset is None else offset for tp, offset in offsets.items()}
        unset = [TopicPartition(*tp) for tp, offset in offsets.items() if offset is None]
        if unset:
            # No commit yet: auto.offset.reset, resolved here as explicit offsets (one request for all
            # of them), because the fetcher may already have moved past the reset point meanwhile.
            latest = str(self.config["auto.offset.reset"]) == "latest"
            ends = await (consumer.end_offsets(unset) if latest else consumer.beginning_offsets(unset))
            offsets.update({(tp.topic, tp.partition): offset for tp, offset in ends.items()})
        for (topic, partition), actor in actors.items():
            tp = TopicPartition(topic, partition)
            offset = offsets[(topic, partition)]
            assert offset is not None
            self._next_offset[(topic, partition)] = (actor, offset)
            consumer.seek(tp, offset)
            if self._multi_input(actor):
                self._awaited[(topic, partition)] = actor
                actor.task.partition_group.expect([(topic, partition)])


async def request_application_shutdown(topology: Topology, config: StreamsConfig, timeout_s: float = 30.0) -> bool:
    """Join the application's group once with the shutdown flag set (see the assignor): every member
    then gets a shutdown assignment and stops. True when the group acknowledged it in time."""
    app_id = config.application_id
    topics = {(f"{app_id}-{t}" if t in topology.internal_topics else t): sub.id
              for sub in topology.sub_topologies() for t in sub.source_topics}
    assignor = make_assignor(topics)
    assignor.request_shutdown = True
    consumer = AIOKafkaConsumer(
        **client_kwargs(config, ClientRole.MAIN_CONSUMER, client_id=f"{config.application_id}-shutdown-request"),
        group_id=config.application_id, enable_auto_commit=False, partition_assignment_strategy=(assignor,))
    await consumer.start()
    try:
        consumer.subscribe(sorted(topics))
        with anyio.move_on_after(timeout_s):
            while not assignor.shutdown_requested:
                await consumer.getmany(timeout_ms=200)
        return assignor.shutdown_requested
    finally:
        await stop_client(consumer)
