"""`Supervisor`: one group member — consumer, producer, task actors — run as one task group.

The supervisor wires the member's clients and parts together and runs them in one anyio task group:
the poll loop and every task actor. A failure anywhere cancels the whole member (structured
concurrency: no task outlives the scope that started it) and surfaces in `KafkaStreams` as the ERROR
state or a replaced member. It owns the parts, each with one job, named after their Kafka Streams
counterparts:

- `PollLoop` (StreamThread's run loop): polls, routes each batch to its task actor, restores and
  advances standbys between polls, and waits out a group still held by another protocol's members
  (`ForeignMembersWait`: a Kafka Streams application closed a moment ago);
- `StreamsRebalanceListener`: revocation, assignment and lost tasks, called by aiokafka's group
  coordination;
- `Committer` (StreamThread's maybeCommit): when to commit, and the recovery from a failed commit;
- `TaskManager`: which tasks run here, and the commit across them (`CommitProtocol`);
- `PartitionPositions`: where each assigned partition's task continues, so that no record is skipped
  or handed over twice across rebalances; `GroupMembership`: whether this member is still the one its
  tasks were assigned to.
- `JoinWait`: in a classic group, what a join that takes long waits for (the previous member's session).

The member's clients carry Kafka Streams' client ids (`ClientIds`: the instance's process id and the
worker's number), and `group.instance.id` makes it a static member of either kind of group.

The poll loop and the rebalance callbacks run concurrently (the callbacks inside aiokafka's
coordination task); they share one dispatch lock, taken around everything that touches the tasks.
What the rest of the client reads of a member goes through `MemberView` (`Supervisor.view`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from types import MappingProxyType
from typing import Any

import anyio
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.client import ConnectionGroup
from aiokafka.conn import CloseReason

from streamlet.actors.error_handlers import dead_letter_topic, skip_failed_productions
from streamlet.actors.record_collector import UnknownTopicError
from streamlet.actors.task_id import TaskId
from streamlet.config import StreamsConfig
from streamlet.errors import ApplicationShutdownError, StrayCancellationError
from streamlet.kafka.assignor import HostTasks, TaskAssignor, make_assignor
from streamlet.kafka.changelog_reader import ChangelogReader
from streamlet.kafka.client_settings import ClientIds, ClientRole, client_kwargs, group_instance_id, stop_client
from streamlet.kafka.group_description import describe_group
from streamlet.kafka.restore_records import always_hand_out_as_decoded
from streamlet.kafka.streams_group_protocol import describe_topology
from streamlet.kafka.topic_manager import TopicPlan, await_sink_topics, prepare_topics
from streamlet.metrics.counters import ThreadCounters
from streamlet.runtime.commit_protocol import AtLeastOnceCommits, CommitProtocol, ExactlyOnceCommits
from streamlet.runtime.committer import Committer
from streamlet.runtime.foreign_members import ForeignMembersWait
from streamlet.runtime.global_state import GlobalStreamThread, start_global_thread
from streamlet.runtime.instance_id import claim_instance_id, state_root
from streamlet.runtime.join_wait import JoinWait, joining_classic_group
from streamlet.runtime.membership import GroupMembership
from streamlet.runtime.poll_loop import PollLoop
from streamlet.runtime.positions import PartitionPositions
from streamlet.runtime.rebalance_listener import StreamsRebalanceListener
from streamlet.runtime.repartition_purger import RepartitionPurger
from streamlet.runtime.standby import StandbyTasks
from streamlet.runtime.streams_membership import StreamsGroupMembership, request_group_shutdown
from streamlet.runtime.task_manager import TaskManager
from streamlet.runtime.task_offsets import last_applied, local_task_offsets, offset_sum
from streamlet.runtime.thread_state import ThreadState, ThreadStateTracker
from streamlet.runtime.workers import thread_number
from streamlet.topology import Topology

log = logging.getLogger(__name__)

RESTORE_PARTITION_FETCH_BYTES = 4 << 20
"""The restore consumer's fetch size per partition (Kafka's default is 1 MiB). Every changelog partition
still to restore is fetched at once (see `ChangelogReader`): `RESTORE_FETCH_BYTES` bounds the total."""
RESTORE_FETCH_BYTES = 50 << 20
"""The restore consumer's fetch size in all (Kafka's default)."""


async def _stop_group_consumer(consumer: AIOKafkaConsumer, leave_group: bool = True) -> None:
    """Stop the group consumer, also in the middle of a rebalance.

    aiokafka's stop() first lets its coordination routine finish, and during a rebalance that routine
    sits in a JoinGroup the coordinator answers only when every member rejoined or timed out: a close
    while another member is frozen would wait for that member's session to expire. This member is
    leaving anyway, so the pending join is abandoned: its routine is cancelled and its connection closed
    (a broker answers one request per connection at a time, so a LeaveGroup behind the parked JoinGroup
    would wait just as long). stop() then sends LeaveGroup on a new connection, which also lets the
    rebalance go on without this member at once.

    Without `leave_group` (CloseOptions' REMAIN_IN_GROUP) the member's generation is forgotten first, so
    aiokafka's stop() sends no LeaveGroup: the member stays in the group until its session times out."""
    coordinator: Any = getattr(consumer, "_coordinator", None)
    if not leave_group and coordinator is not None:
        coordinator.generation = -1  # aiokafka leaves only a group it has a generation of
    routine = getattr(coordinator, "_coordination_task", None)
    if routine is not None and not routine.done() and consumer._subscription.reassignment_in_progress:
        log.info("closing during a rebalance: abandoning the pending join and leaving the group")
        # A cancellation that lands in a shielded part of the routine (the revocation callback's commit) is
        # absorbed there, and the routine goes on to join and take an assignment: ask again until it ends.
        while not routine.done():
            routine.cancel()
            await asyncio.wait({routine}, timeout=0.5)  # never raises: the routine's cancellation is not ours
        joining = consumer._client._conns.get((coordinator.coordinator_id, ConnectionGroup.COORDINATION))
        if joining is not None:
            joining.close(reason=CloseReason.SHUTDOWN)
    await stop_client(consumer)


async def _stop_groupless_consumer(consumer: AIOKafkaConsumer) -> None:
    """Stop a consumer without a group (restoration, standbys). Its stop() cancels a background task
    and awaits it; a task cancelled before it first ran (a stop straight after start, when start-up
    fails) re-raises CancelledError, which would look like a cancellation of the caller. One
    checkpoint lets the task start first."""
    await anyio.lowlevel.checkpoint()
    await stop_client(consumer)


class Supervisor:
    """One consumer-group member: its clients, its tasks and the parts that drive them, run by `run()`
    as one task group (see the module docstring).

    `view` is what the rest of the client reads of the member. Set `on_loop` (called once a poll-loop
    round) and `on_task_created` (called with every new active task) before `run()`."""

    def __init__(self, topology: Topology, config: StreamsConfig,
                 on_rebalance: Callable[[bool], None] | None = None) -> None:
        self.topology = topology
        self.config = config
        self.app_id = config.application_id
        self._on_client_rebalance = on_rebalance or (lambda _running: None)
        self.thread_state = ThreadStateTracker()
        """The member's state as Kafka Streams' StreamThread names it (the `thread-state` metric)."""
        self._stop = anyio.Event()
        self._dispatch_lock = anyio.Lock()  # the poll loop's dispatch and the rebalance callbacks take turns
        self.plan: TopicPlan | None = None
        self._partition_counts: dict[str, int] = {}
        self.tasks: TaskManager | None = None
        self.consumer: Any = None
        self.producer: Any = None
        self.restore_consumer: Any = None
        self.commit_protocol: CommitProtocol | None = None
        self.standby_consumer: Any = None
        self.standbys: StandbyTasks | None = None
        self.global_thread: GlobalStreamThread | None = None
        self.shutdown_requested = False
        self._leave_group = True  # what closing does with the membership (stop(leave_group=...))
        self._fatal: BaseException | None = None  # ends the member: retrying cannot help (see _end_with)
        # The parts that drive the tasks, wired by run() once the clients exist (see _wire_parts).
        self._assignor: TaskAssignor | None = None
        self._streams_membership: StreamsGroupMembership | None = None  # group.protocol=streams
        self._positions: PartitionPositions | None = None
        self._committer: Committer | None = None
        self._listener: StreamsRebalanceListener | None = None
        self._loop: PollLoop | None = None
        self.counters = ThreadCounters()  # poll and commit times behind the thread metrics
        self.on_loop: Callable[[], None] = lambda: None  # called once per poll loop (metrics sampling)
        self.on_task_created: Callable[[Any], None] = lambda _task: None  # see TaskManager.on_task_created
        self.view = MemberView(self)
        self.thread = thread_number()
        """This member's number among its instance's workers, from 1 (Kafka Streams' stream thread index)."""
        self.join_wait: JoinWait | None = None  # a classic group's long joins, reported (see `JoinWait`)
        self.client_ids = ClientIds.of(config, "streamlet", self.thread)
        """The client ids of the member's clients; formed with the instance's process id once `run()` claimed it."""

    def _on_rebalance(self, running: bool) -> None:
        """A rebalance began (False: Kafka Streams' thread goes PARTITIONS_REVOKED) or every task is restored
        (True: RUNNING); the client is told too."""
        self.thread_state.set(ThreadState.RUNNING if running else ThreadState.PARTITIONS_REVOKED)
        self._on_client_rebalance(running)

    def _on_assigned(self) -> None:
        """An assignment was taken over (its tasks may still restore): PARTITIONS_ASSIGNED."""
        self.thread_state.set(ThreadState.PARTITIONS_ASSIGNED)

    def _fail(self, exc: BaseException) -> None:
        """End the member with `exc` (the global thread failed)."""
        self._fatal = self._fatal or exc
        self.stop()

    def _end_with(self, exc: BaseException) -> None:
        """End the member with `exc`, an error retrying cannot help (the rebalance listener met a missing ACL,
        the broker refused a streams group member)."""
        self._fatal = exc
        self.thread_state.set(ThreadState.PENDING_SHUTDOWN)
        self._stop.set()
        if self._loop is not None:
            self._loop.interrupt()  # a poll may be waiting for a first assignment that will not come

    def _end_on_shutdown_request(self) -> None:
        """The assignment said the application shuts down (see the assignor): end with `ApplicationShutdownError`."""
        self.shutdown_requested = True
        self._stop.set()

    def resolve_topic(self, name: str) -> str:
        """The topic's name in the cluster: internal topics carry the application id as a prefix."""
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

    async def _await_sink_topics(self) -> None:
        """Before the first output: sink topics missing at start-up must exist (see `await_sink_topics`)."""
        missing = self.plan.missing_sinks - self._partition_counts.keys() if self.plan is not None else set()
        if missing:
            self._partition_counts.update(
                await await_sink_topics(self._client_kwargs(ClientRole.ADMIN), missing, 60.0))
            log.info("sink topic(s) %s exist now: writing output to them", sorted(missing))

    def _state_root(self) -> Path:
        """This application's state directory (tasks' stores, the instance id)."""
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
        """The sub-topologies of the topic plan (none before `run()` prepared the topics)."""
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

    def stop(self, leave_group: bool = True) -> None:
        """Ask the member to stop: `run()` then commits, closes its tasks and returns, leaving the group
        unless `leave_group` is False (see `CloseOptions`)."""
        self._leave_group = leave_group
        self.thread_state.set(ThreadState.PENDING_SHUTDOWN)
        self._stop.set()
        if self._loop is not None:
            self._loop.interrupt()

    def _client_kwargs(self, role: ClientRole = ClientRole.MAIN_CONSUMER) -> dict[str, Any]:
        """Connection, security and tuning arguments of one client (see `client_settings`), with the client id
        Kafka Streams would give it (`ClientIds`)."""
        return client_kwargs(self.config, role, client_id=self.client_ids.of_role(role))

    async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until `stop()`; then commit and close cleanly. Reports started once the group is joined.

        Every resource is released through one exit stack, in the reverse order of acquisition, so a
        start-up that fails half-way (the broker went away, a store could not open) still stops the
        clients it started and releases the instance id it claimed."""
        self.thread_state.set(ThreadState.STARTING)
        try:
            async with AsyncExitStack() as resources:
                listener = await self._open(resources)
                await self._serve(listener, task_status)
        finally:
            self.thread_state.set(ThreadState.PENDING_SHUTDOWN)  # a failure ends the member too
            self.thread_state.set(ThreadState.DEAD)

    async def _open(self, resources: AsyncExitStack) -> StreamsRebalanceListener:
        """Prepare the topics, make the member's clients and parts and start them, each start followed by
        the cleanup that undoes it on `resources`; returns the rebalance listener `_serve` subscribes with."""
        config = self.config
        # The instance id is the process id in the client ids, and the member id in a streams group; under
        # exactly-once it names the transactional producer (see `claim_instance_id`).
        instance_id, release_instance_id = claim_instance_id(self._state_root())
        resources.callback(release_instance_id)
        self.client_ids = ClientIds.of(config, str(uuid.UUID(hex=instance_id)), self.thread)
        log.info("process id %s: the group shows this member as client id %s", uuid.UUID(hex=instance_id),
                 self.client_ids.of_role(ClientRole.MAIN_CONSUMER))
        self.plan = await prepare_topics(self.topology, self.app_id, self._client_kwargs(ClientRole.ADMIN),
                                         replication_factor=int(config["replication.factor"]),
                                         dead_letter_topic=dead_letter_topic(config),
                                         internal_topics_check=config["internal.topics.check"])
        self._partition_counts = self.plan.partition_counts
        membership, group = self._make_clients(instance_id)
        assert self.tasks is not None and self.commit_protocol is not None
        resources.callback(self.tasks.abandon)  # runs last: tasks a failure left open are closed dirty
        if self.producer is not None:
            await self.producer.start()
            resources.push_async_callback(stop_client, self.producer)
        replicas = int(config["num.standby.replicas"])
        if replicas > 0 or config.streams_group:  # in a streams group the broker decides (a group config)
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
            self.topology, config, self._state_root(),
            {**self._client_kwargs(ClientRole.RESTORE_CONSUMER), "client_id": self.client_ids.global_consumer},
            self._client_kwargs(ClientRole.ADMIN), self._fail)
        if self.global_thread is not None:
            resources.push_async_callback(self.global_thread.close)
            self.tasks.global_stores = self.global_thread.stores
        listener = self._wire_parts(self.tasks, membership, group)
        await self.consumer.start()
        always_hand_out_as_decoded(self.consumer)  # the tasks need no ConsumerRecord per record
        streams_membership = self._streams_membership
        if streams_membership is None:
            resources.push_async_callback(lambda: _stop_group_consumer(self.consumer, self._leave_group))
        else:
            resources.push_async_callback(stop_client, self.consumer)
            resources.push_async_callback(self._leave_streams_group, streams_membership)  # after the tasks closed
            # Assigned by hand from now on; until the first assignment a poll returns nothing after its
            # timeout (a consumer that was never assigned anything would wait for an assignment instead).
            self.consumer.assign([])
        resources.push_async_callback(self.commit_protocol.stop)  # before the consumer stops (LIFO)
        return listener

    def _make_clients(self, instance_id: str) -> tuple[GroupMembership | StreamsGroupMembership, Any]:
        """Make (not start) the group consumer and its membership, the commit protocol with its producer,
        the restore consumer, the repartition purger and the task manager; returns the membership and the
        group (see `_wire_parts`)."""
        assert self.plan is not None
        config = self.config
        producer_config = {**self._client_kwargs(ClientRole.PRODUCER), "acks": "all"}
        replicas = int(config["num.standby.replicas"])
        stateful = {sub.id for sub in self.topology.sub_topologies() if sub.stores}
        isolation = "read_committed" if config.exactly_once else "read_uncommitted"
        membership: GroupMembership | StreamsGroupMembership
        group: Any  # who answers for the group's offsets: the group consumer, or the streams group membership
        if config.streams_group:
            # KIP-1071: the broker assigns the tasks; the consumer only fetches what it is told to.
            self.consumer = AIOKafkaConsumer(**self._client_kwargs(ClientRole.MAIN_CONSUMER), group_id=None,
                                             enable_auto_commit=False, isolation_level=isolation)
            self._streams_membership = membership = group = self._streams_group_membership(instance_id)
        else:
            self._assignor = make_assignor(self.plan.source_topics, self._tasks_with_local_state(),
                                           standby_replicas=replicas, stateful_subtopologies=stateful,
                                           application_server=str(config.get("application.server") or ""))
            self.consumer = group = AIOKafkaConsumer(  # auto.offset.reset, max.poll.records, timeouts: _client_kwargs
                **self._client_kwargs(ClientRole.MAIN_CONSUMER), group_id=self.app_id, enable_auto_commit=False,
                isolation_level=isolation, partition_assignment_strategy=(self._assignor,),
                group_instance_id=group_instance_id(config, self.thread),
            )
            membership = GroupMembership(self.consumer)
        commits: CommitProtocol
        if config.exactly_once:
            commits = ExactlyOnceCommits(self.app_id, f"{self.app_id}-{instance_id}", producer_config,
                                         int(config["transaction.timeout.ms"]), group,
                                         skip_failed_productions(config))
        else:
            self.producer = AIOKafkaProducer(**producer_config, enable_idempotence=True)
            commits = AtLeastOnceCommits(self.producer, membership.commit_offsets, skip_failed_productions(config))
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
        return membership, group

    async def _serve(self, listener: StreamsRebalanceListener, task_status: Any) -> None:
        """Join the group and run the poll loop and the task actors in one task group until the member
        stops; then commit and close the tasks (clean), or close them dirty and raise what ended it."""
        assert self.plan is not None and self.tasks is not None
        streams_membership = self._streams_membership
        if streams_membership is None:
            self.consumer.subscribe(sorted(self.plan.source_topics), listener=listener)
        join_wait_scope = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            self.tasks.bind(tg)
            if streams_membership is not None:
                tg.start_soon(self._run_streams_membership, streams_membership, listener)
            else:
                tg.start_soon(self._report_long_joins, join_wait_scope)
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
                join_wait_scope.cancel()
                await self.purger.close()
            if self.shutdown_requested:
                raise ApplicationShutdownError(
                    f"an instance of application {self.app_id!r} requested an application shutdown")

    async def _report_long_joins(self, scope: anyio.CancelScope) -> None:
        """Say what a long join of the classic group waits for (see `JoinWait`), until `scope` is cancelled."""
        main_consumer = self._client_kwargs(ClientRole.MAIN_CONSUMER)
        self.join_wait = JoinWait(
            joining=joining_classic_group(self.consumer),
            describe=lambda: describe_group(self._client_kwargs(ClientRole.ADMIN), self.app_id),
            own_client_id=None if self.config.get("client.id") else main_consumer["client_id"],
            session_timeout_ms=int(main_consumer.get("session_timeout_ms") or self.config["session.timeout.ms"]),
            static=group_instance_id(self.config, self.thread) is not None)
        with scope:
            await self.join_wait.run()

    def _streams_group_membership(self, instance_id: str) -> StreamsGroupMembership:
        """This instance's membership in a streams group (`group.protocol=streams`), named by its instance id."""
        assert self.plan is not None
        plan, config = self.plan, self.config
        counts = plan.partition_counts

        def partitions_of(task: TaskId) -> list[tuple[str, int]]:
            return [(topic, task.partition) for topic, sub in sorted(plan.source_topics.items())
                    if sub == task.subtopology and task.partition < counts.get(topic, 0)]

        if int(config["num.standby.replicas"]) > 0:
            log.warning("num.standby.replicas is not used in a streams group: the broker assigns standby tasks "
                        "as the group config streams.num.standby.replicas says (kafka-configs --entity-type groups)")
        server = str(config.get("application.server") or "")
        host, _, port = server.rpartition(":")
        return StreamsGroupMembership(
            consumer=self.consumer, group_id=self.app_id, member_id=str(uuid.UUID(hex=instance_id)),
            topology=describe_topology(self.topology, plan, int(config["replication.factor"])),
            partitions_of=partitions_of, dispatch_lock=self._dispatch_lock,
            rebalance_timeout_ms=int(config.get("max.poll.interval.ms") or 300000),
            endpoint=(host, int(port)) if host and port.isdigit() else None, fail=self._end_with,
            on_shutdown_request=self._end_on_shutdown_request, task_offsets=self._task_offsets,
            subtopology_of=plan.source_topics, instance_id=group_instance_id(config, self.thread))

    def _task_offsets(self) -> tuple[dict[TaskId, int], dict[TaskId, int]]:
        """The task offsets and end offsets this member reports in a streams group (see `task_offsets`):
        the checkpoints on disk, overridden by the standbys' (and warm-ups') live positions; running
        active tasks left out. End offsets for the standbys only (a restoring active task is reported by
        its checkpoint, without an end offset)."""
        offsets = local_task_offsets(self._state_root(), self.plan_subtopologies())
        ends: dict[TaskId, int] = {}
        if self.standbys is not None:
            for task, positions in self.standbys.next_offsets().items():
                offsets[task] = last_applied(positions)
            ends = {task: offset_sum(e) for task, e in self.standbys.end_offsets().items()}
        if self.tasks is not None:
            for key in self.tasks.actors:
                offsets.pop(TaskId(*key), None)
        return offsets, ends

    async def _leave_streams_group(self, membership: StreamsGroupMembership) -> None:
        """Leave the streams group on close, unless the close keeps the membership (`stop(leave_group=False)`:
        a restart under the same instance id rejoins as the same member and gets its tasks back)."""
        if self._leave_group:
            await membership.leave()

    async def _run_streams_membership(self, membership: StreamsGroupMembership,
                                      listener: StreamsRebalanceListener) -> None:
        """Heartbeat and reconcile until the member stops; a failure ends the member."""
        try:
            await membership.run(listener)
        except Exception as exc:
            log.exception("the streams group membership failed")
            self._end_with(exc)

    def _wire_parts(self, tasks: TaskManager, membership: GroupMembership | StreamsGroupMembership,
                    group: Any) -> StreamsRebalanceListener:
        """Create the parts that drive the tasks (see the module docstring) once every client they use
        exists; returns the rebalance listener to subscribe with."""
        assignor: Any = self._assignor if self._streams_membership is None else self._streams_membership
        assert assignor is not None
        positions = PartitionPositions(self.consumer, tasks, self.config, self.topology.offset_reset_policies(),
                                       group)
        tasks.read_commits = positions.committed_with_metadata
        tasks.committable = positions.committable
        committer = Committer(tasks, positions, membership, self.counters, self.purger, self._dispatch_lock,
                              int(self.config["commit.interval.ms"]) / 1000)
        listener = StreamsRebalanceListener(
            app_id=self.app_id, tasks=tasks, standbys=self.standbys, assignor=assignor, positions=positions,
            membership=membership, committer=committer, dispatch_lock=self._dispatch_lock,
            on_rebalance=self._on_rebalance, request_shutdown=self._end_on_shutdown_request, fail=self._end_with,
            on_assigned=self._on_assigned)
        self._loop = PollLoop(
            consumer=self.consumer, config=self.config, tasks=tasks, standbys=self.standbys, positions=positions,
            membership=membership, committer=committer, counters=self.counters, dispatch_lock=self._dispatch_lock,
            stop=self._stop, before_output=self._await_sink_topics, on_loop=self.on_loop,
            on_rebalance=self._on_rebalance, group_wait=ForeignMembersWait(
                self.app_id, int(self.config["task.timeout.ms"]),
                lambda: describe_group(self._client_kwargs(ClientRole.ADMIN), self.app_id)))
        self._positions, self._committer, self._listener = positions, committer, listener
        return listener

    async def _poll_loop(self) -> None:
        """Run the poll loop until the member stops (see `PollLoop`)."""
        assert self._loop is not None
        await self._loop.run()

    async def _shutdown(self) -> None:
        """The clean end: commit what was processed, then close every task."""
        assert self.tasks is not None and self._committer is not None
        if self._streams_membership is not None:
            self._streams_membership.stop()  # no reconciliation any more; the group is left once the tasks close
        async with self._dispatch_lock:
            await self._committer.commit()
            await self.tasks.close_all(clean=True)


class MemberView:
    """What the rest of the client reads of a group member, read-only: its assignment and the next
    offset of each partition (the consumer lag of the metrics and the live page), the last
    assignment's host map and the topics' partition counts (the metadata queries of `KafkaStreams`),
    and the counts `KafkaStreams.metrics` reports.

    Every read looks at the member as it is now, so one view serves the member's whole life; before
    `run()` has wired the member it shows no assignment and zero counts. A view rather than the
    member's attributes: those belong to its parts (positions, committer, rebalance listener, poll
    loop), which are the member's own business; this is the contract the readers rely on."""

    def __init__(self, member: Supervisor) -> None:
        self._member = member

    @property
    def assigned(self) -> frozenset[tuple[str, int]]:
        """The partitions whose records are dispatched to their tasks now (none during a rebalance)."""
        positions = self._member._positions
        return frozenset(positions.assigned) if positions is not None else frozenset()

    @property
    def next_offsets(self) -> Mapping[tuple[str, int], int]:
        """Per partition, the next offset its task is handed: the lag is the high watermark minus it."""
        positions = self._member._positions
        return positions.next_offsets() if positions is not None else {}

    @property
    def hosts(self) -> tuple[HostTasks, ...] | None:
        """The last assignment's host map (every instance's endpoint and tasks); None before the member
        made its assignor, empty before the first assignment."""
        streams_membership = self._member._streams_membership
        if streams_membership is not None:  # a streams group: the broker's endpoint information
            return streams_membership.hosts
        assignor = self._member._assignor
        return assignor.hosts if assignor is not None else None

    @property
    def partition_counts(self) -> Mapping[str, int]:
        """The partition count of every topic the member knows: from its topic plan, and output topics
        learned since."""
        return MappingProxyType(self._member._partition_counts)

    @property
    def commits(self) -> int:
        """Successful commits."""
        committer = self._member._committer
        return committer.commits if committer is not None else 0

    @property
    def dirty_recoveries(self) -> int:
        """Failed exactly-once commits after which the failed tasks were closed dirty."""
        committer = self._member._committer
        return committer.dirty_recoveries if committer is not None else 0

    @property
    def lost_memberships(self) -> int:
        """Times the member found itself dropped from the group and closed its tasks as lost."""
        listener = self._member._listener
        return listener.lost_memberships if listener is not None else 0

    @property
    def full_queue_pauses(self) -> int:
        """Times a partition was paused because its task held `buffered.records.per.partition` records."""
        loop = self._member._loop
        return loop.full_queue_pauses if loop is not None else 0


async def request_application_shutdown(topology: Topology, config: StreamsConfig, timeout_s: float = 30.0) -> bool:
    """Join the application's group once with the shutdown flag set (see the assignor): every member
    then gets a shutdown assignment and stops. True when the group acknowledged it in time.
    In a streams group the request is a heartbeat's flag instead (`request_group_shutdown`)."""
    app_id = config.application_id
    if config.streams_group:
        plan = await prepare_topics(topology, app_id, client_kwargs(config, ClientRole.ADMIN),
                                    replication_factor=int(config["replication.factor"]))
        consumer = AIOKafkaConsumer(
            **client_kwargs(config, ClientRole.MAIN_CONSUMER, client_id=f"{app_id}-shutdown-request"), group_id=None)
        await consumer.start()
        try:
            return await request_group_shutdown(consumer, app_id, describe_topology(
                topology, plan, int(config["replication.factor"])), timeout_s)
        finally:
            await stop_client(consumer)
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
