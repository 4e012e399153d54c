"""`StreamsGroupMembership`: this instance as a member of a streams group (KIP-1071, `group.protocol=streams`).

In a streams group the broker assigns the tasks. The member joins with the application's topology
(member epoch 0), heartbeats, and each answer carries its member epoch and, when it changed, the
tasks it is to run. The member *reconciles*: it gives up what the broker took away (committing first),
takes over what it was handed, then reports in its next heartbeat the tasks it owns now. The broker
hands a task to a new owner only once its previous owner stopped reporting it, so two members never
run one task while both are in the group. A member the broker dropped (silent past the session
timeout; its next heartbeat is answered FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID) has *lost* its
tasks: another member may have run them meanwhile. It closes them dirty, as the classic path does,
and joins again with epoch 0 under the same member id.

Offsets are committed under the member epoch: the broker takes a commit only with the member's
current epoch. Heartbeats and commits take turns at the dispatch lock, so an epoch a heartbeat
moves on never meets a commit stamped with the epoch before.

The member id is this instance's id (kept in its state directory, `claim_instance_id`): an instance
restarted after a crash rejoins under its old id and gets its tasks back at once, instead of
waiting for the broker to expire the crashed member's session (45 s at least).

Static members (`group.instance.id`, KIP-1071's instance id; `-<worker n>` appended as Kafka Streams
appends its thread's number): the instance id is sent when joining, and a clean close leaves with epoch
-2, so the broker keeps the member's tasks until its session times out and a restart within it takes
them back with no other member's assignment changing. A Kafka 4.4 broker refuses a static member
whose previous incarnation neither left nor timed out (UNRELEASED_INSTANCE_ID): after a kill -9 the
restarted static member waits for the old session to expire (logged as such). The broker then hands out
the old member's tasks at the next heartbeat of any member: this one, retrying every half second, usually
comes first and gets them back; otherwise other members' assignments change. (Kafka Streams 4.4.0 is
refused alike but takes the refusal as fatal: its client goes to ERROR and its tasks move.) A dynamic
member, which rejoins under its kept member id, gets its tasks back at once after a kill -9.

Standby and warm-up tasks are the broker's too: it hands out standbys when the group's config
`streams.num.standby.replicas` (broker default `group.streams.num.standby.replicas`) asks for them, as
for Kafka Streams, whose `num.standby.replicas` a streams group ignores. streamlet keeps both as
standby tasks: warm copies of the stores, restored from the changelogs, never processing. A warm-up
is a task the broker means to move here once its copy caught up; when the broker then makes it
active, the standby is closed with a checkpoint and the active task restores only the changelog tail
beyond it. The broker learns how far each copy is from the task offsets the member reports, as Kafka
Streams' client reports them (`streamlet.runtime.task_offsets`: what, and when). A Kafka 4.4.0 broker
never hands out warm-ups (its assignment refiner returns the assignment unchanged), but its assignor
uses the offsets: a standby, or a task whose active member left, goes preferably to a member that
reported a copy of its state.

Interactive queries: each member sends its `application.server` when it joins, and the broker
answers with the group's endpoints and their partitions whenever they changed since the endpoint
information epoch the member sent (`partitions_by_user_endpoint`); `hosts` holds them as the classic
assignor's host map, so the metadata queries and the HTTP routing work alike in both kinds of group.

Why a class of its own: it stands in for three parts the classic path gets from aiokafka's group
coordinator and streamlet's assignor. Towards the rebalance listener it is the assignor (active and
standby tasks, shutdown); towards the poll loop and the commits it is the `GroupMembership`
(member id and epoch, "out of the group?", lost tasks, the at-least-once commit); towards
`fenced_offsets` it is the group's coordinator (offset fetches, the epoch stamped on transactional
commits). The rebalance listener itself is the classic path's: revocation commits and keeps
nothing, assignment creates what came and keeps the stores of tasks that stayed.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio
from aiokafka import TopicPartition
from aiokafka.client import ConnectionGroup, CoordinationType
from aiokafka.errors import CommitFailedError, KafkaError

from streamlet.actors.task_id import TaskId
from streamlet.errors import StreamsError
from streamlet.kafka.assignor import HostTasks
from streamlet.kafka.fenced_offsets import commit_member_offsets
from streamlet.kafka.streams_group_protocol import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    STATUS_SHUTDOWN_APPLICATION,
    HeartbeatAnswer,
    StreamsGroupDescribe,
    StreamsGroupHeartbeat,
    SubtopologyDescription,
    decode_answer,
    described_topology,
    first_difference,
)
from streamlet.kafka.transactions import Metadata, Offsets, with_metadata
from streamlet.runtime.task_offsets import TaskOffsetReport

log = logging.getLogger(__name__)

_COORDINATOR_MOVED = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
_FENCED = {25: "UNKNOWN_MEMBER_ID", 110: "FENCED_MEMBER_EPOCH"}
_UNRELEASED_INSTANCE_ID = 111  # a static member's previous incarnation is still in the group
# Errors that no retry heals: the member stops with the broker's message.
_FATAL = {29: "TOPIC_AUTHORIZATION_FAILED", 30: "GROUP_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED",
          35: "UNSUPPORTED_VERSION", 42: "INVALID_REQUEST", 82: "FENCED_INSTANCE_ID", 130: "STREAMS_INVALID_TOPOLOGY",
          131: "STREAMS_INVALID_TOPOLOGY_EPOCH", 132: "STREAMS_TOPOLOGY_FENCED"}
_RETRY_BACKOFF_S = 0.5
_ERROR_LOG_INTERVAL_S = 15.0


class StreamsGroupError(StreamsError):
    """The broker refused this member for a reason retrying cannot change (a missing ACL, a topology
    the group does not accept, a broker without streams groups)."""


class StreamsGroupMembership:
    """This instance's membership in its application's streams group (see the module docstring).

    `run(listener)` heartbeats and reconciles until `stop()`; `leave()` leaves the group. The listener
    is the classic path's `StreamsRebalanceListener`, called with source partitions as aiokafka would."""

    def __init__(self, *, consumer: Any, group_id: str, member_id: str, topology: Iterable[SubtopologyDescription],
                 partitions_of: Callable[[TaskId], list[tuple[str, int]]], dispatch_lock: anyio.Lock,
                 rebalance_timeout_ms: int, endpoint: tuple[str, int] | None = None,
                 fail: Callable[[BaseException], None] = lambda _exc: None,
                 on_shutdown_request: Callable[[], None] = lambda: None, request_shutdown: bool = False,
                 task_offsets: Callable[[], tuple[dict[TaskId, int], dict[TaskId, int]]] = lambda: ({}, {}),
                 subtopology_of: Mapping[str, int] | None = None, instance_id: str | None = None) -> None:
        self._consumer = consumer
        self.group_id = group_id
        self.member_id = member_id
        self._topology = tuple(topology)
        self._partitions_of = partitions_of
        self._lock = dispatch_lock
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._endpoint = endpoint
        self._fail = fail
        self._on_shutdown_request = on_shutdown_request
        self._request_shutdown = request_shutdown  # every heartbeat asks the group to shut down
        self._group_instance_id = instance_id  # a static member's group.instance.id (see `leave`)
        self._node: int | None = None
        self.generation = JOIN_EPOCH  # the member epoch; JOIN_EPOCH until the broker answered the join
        self._interval_s = 5.0
        # The broker's assignment (what to run) and what this member reported it owns.
        self._target: tuple[frozenset[TaskId], frozenset[TaskId], frozenset[TaskId]] = (
            frozenset(), frozenset(), frozenset())
        self._owned = self._target
        self._target_changed = False
        self._assigned_once = False  # an assignment (maybe empty) arrived since the member (re)joined
        self._report = False  # the owned tasks changed since the last heartbeat said so
        self._fenced: str | None = None  # why the tasks held now were lost, until the next assignment
        self._lost = False  # dropped by the broker: the tasks held now are closed as lost before rejoining
        self._error_logged_at = 0.0
        self._refused: str | None = None  # why the broker refused this member for good
        self._reassign = False  # request_rejoin: take the current assignment over again
        self._wake = anyio.Event()
        self._stopping = False
        self.active_tasks: tuple[TaskId, ...] = ()
        self.standby_tasks: tuple[TaskId, ...] = ()
        self.shutdown_requested = False
        self.hosts: tuple[HostTasks, ...] = ()
        """The group's endpoints and their tasks, from the broker's `partitions_by_user_endpoint`."""
        self._subtopology_of = dict(subtopology_of or {})
        self._endpoint_epoch = 0  # the endpoint information epoch of the host map held
        self._offset_report = TaskOffsetReport(task_offsets)
        self.lost_count = 0

    # -- the coordinator, as fenced_offsets asks for it ------------------------------------------------------
    async def ensure_coordinator_known(self) -> None:
        """Find the group's coordinator (retrying while the cluster elects one)."""
        while self._node is None:
            try:
                self._node = int(await self._consumer._client.coordinator_lookup(CoordinationType.GROUP,
                                                                                   self.group_id))
            except KafkaError as exc:
                log.debug("group coordinator of %s not known yet: %r", self.group_id, exc)
                await anyio.sleep(_RETRY_BACKOFF_S)

    async def _send_req(self, request: Any) -> Any:
        """Send `request` to the group coordinator and return its response."""
        await self.ensure_coordinator_known()
        assert self._node is not None
        try:
            return await self._consumer._client.send(self._node, request, group=ConnectionGroup.COORDINATION)
        except KafkaError:
            self.coordinator_dead()
            raise

    def coordinator_dead(self) -> None:
        """The coordinator moved or is away: look it up again before the next request."""
        self._node = None

    # -- GroupMembership -------------------------------------------------------------------------------------
    def current(self) -> tuple[str, int]:
        """This member's id and epoch."""
        return self.member_id, self.generation

    def out_of_group(self) -> bool:
        """True while the member has no epoch the broker accepts (joining, or dropped and rejoining)."""
        return self.generation <= JOIN_EPOCH

    def assignment_taken(self) -> None:
        """The tasks being taken over belong to the current membership."""
        self._fenced = None

    def forget_assignment(self) -> None:
        """No task is held any more (they were all closed as lost)."""

    def lost_since_assignment(self) -> str | None:
        """Why the tasks held now cannot be kept (the broker dropped this member), or None."""
        return self._fenced

    def request_rejoin(self) -> None:
        """Take the broker's current assignment over again (tasks a failure closed are created anew)."""
        self._reassign = True
        self._wake.set()

    async def commit_offsets(self, offsets: Offsets, metadata: Metadata) -> None:
        """At-least-once commit under the member epoch, of the partitions still assigned here."""
        if self.out_of_group():
            raise CommitFailedError("this member is out of the group; its tasks may be another member's now")
        assigned = self._consumer.assignment()
        mine = {tp: o for tp, o in with_metadata(offsets, metadata).items() if tp in assigned}
        if mine:
            await commit_member_offsets(self, mine)

    # -- heartbeats and reconciliation -----------------------------------------------------------------------
    def stop(self) -> None:
        """End `run()` at its next step (the member is stopping)."""
        self._stopping = True
        self._wake.set()

    async def run(self, listener: Any) -> None:
        """Heartbeat, and reconcile whenever the broker's assignment changes, until `stop()`."""
        while not self._stopping:
            if self._lost:
                # Before rejoining: a task kept across the rejoin would commit, under the new epoch, work
                # done while another member may have run it.
                await self._lose_tasks(listener)
            answer = await self._heartbeat()
            if self._stopping:
                return
            if answer is None:
                continue
            if self._target_changed or self._reassign:
                await self._reconcile_with_keepalive(listener)
                continue  # report what is owned now at once
            with anyio.move_on_after(self._interval_s):
                await self._wake.wait()
            self._wake = anyio.Event()

    async def leave(self) -> None:
        """Leave the group; best effort. A dynamic member's tasks go to the other members at once. A static
        member (`group.instance.id`) leaves *temporarily* (epoch -2, as Kafka's consumer does): the broker
        keeps its tasks for it, and a restart under the same instance id within the group's session
        timeout takes them back without moving any other member's task."""
        if self.generation <= JOIN_EPOCH:
            return
        epoch = LEAVE_EPOCH if self._group_instance_id is None else STATIC_LEAVE_EPOCH
        with anyio.move_on_after(5):
            try:
                async with self._lock:
                    await self._send_req(StreamsGroupHeartbeat(self.group_id, self.member_id, epoch,
                                                               instance_id=self._group_instance_id))
            except KafkaError as exc:
                log.info("leaving the streams group %s failed (%r); the broker drops this member after its "
                         "session timeout", self.group_id, exc)
        self.generation = JOIN_EPOCH

    def _request(self) -> StreamsGroupHeartbeat:
        joining = self.generation == JOIN_EPOCH
        report = joining or self._report
        active, standby, warmup = self._owned if not joining else (frozenset(), frozenset(), frozenset())
        if joining:
            self._offset_report.reset()
        offsets, end_offsets = self._offset_report.next(joining=joining, assignment_changed=report, warmups=warmup)
        return StreamsGroupHeartbeat(
            self.group_id, self.member_id, self.generation,
            topology=self._topology if joining else None,
            rebalance_timeout_ms=self._rebalance_timeout_ms if joining else -1,
            process_id=self.member_id if joining else None,
            active=active if report else None, standby=standby if report else None,
            warmup=warmup if report else None,
            endpoint=self._endpoint if joining else None, endpoint_information_epoch=self._endpoint_epoch,
            task_offsets=offsets, task_end_offsets=end_offsets, shutdown_application=self._request_shutdown,
            instance_id=self._group_instance_id if joining else None)

    async def _heartbeat(self) -> HeartbeatAnswer | None:
        """One heartbeat; the answer is applied (epoch, assignment, errors). None when it must be retried."""
        try:
            async with self._lock:  # a commit never sees the epoch change under it
                request = self._request()
                reported = self._report
                answer = decode_answer(await self._send_req(request))
                self._apply(answer, reported)
        except KafkaError as exc:
            log.info("streams group heartbeat failed (%r); retrying", exc)
            self._offset_report.reset()  # the broker may not have the last report: send it again
            await anyio.sleep(_RETRY_BACKOFF_S)
            return None
        if self._refused is not None:
            await self._fail_refused(self._refused)
            return None
        if answer.error_code:
            if answer.error_code not in _FENCED:
                await anyio.sleep(_RETRY_BACKOFF_S)  # the coordinator is moving, or the group is not ready
            return None
        return answer

    async def _fail_refused(self, reason: str) -> None:
        """End the member: the broker refused it. A topology the group does not take is named by its first
        difference from the group's (a Kafka Streams application moved to streamlet must match it)."""
        message = f"the broker refused this member of streams group {self.group_id!r} {reason}"
        if "topology" in reason.lower():
            try:
                theirs = described_topology(await self._send_req(StreamsGroupDescribe(self.group_id)))
            except KafkaError as exc:
                log.info("describing streams group %s failed: %r", self.group_id, exc)
                theirs = None
            difference = first_difference(self._topology, theirs) if theirs is not None else None
            if difference is not None:
                message += (f"; this instance's topology differs from the one the group runs: {difference} "
                            "(every instance of the application must run the same topology)")
        self._fail(StreamsGroupError(message))

    def _apply(self, answer: HeartbeatAnswer, reported: bool) -> None:
        """Take a heartbeat's answer in; the caller holds the dispatch lock."""
        code = answer.error_code
        if code in _COORDINATOR_MOVED:
            self.coordinator_dead()
            return
        if code in _FENCED:
            if self.generation != JOIN_EPOCH:
                self._fenced = (f"the broker dropped member {self.member_id} at epoch {self.generation} "
                                f"({_FENCED[code]}: {answer.error_message})")
                log.warning("%s; its tasks are lost and it rejoins", self._fenced)
                self._lost = True
            self.generation = JOIN_EPOCH
            self._assigned_once = False
            return
        if code == _UNRELEASED_INSTANCE_ID:
            # The previous incarnation of this static member (killed, or still running elsewhere) neither
            # left nor timed out yet: the broker takes the instance id back once its session expired.
            now = time.monotonic()
            if now - self._error_logged_at > _ERROR_LOG_INTERVAL_S:
                self._error_logged_at = now
                log.warning("streams group %s: waiting for the previous member with group.instance.id %r to "
                            "leave or for its session to expire (the group's streams.session.timeout.ms, broker "
                            "default group.streams.session.timeout.ms=45000); the broker answers: %s",
                            self.group_id, self._group_instance_id, answer.error_message)
            return
        if code in _FATAL:
            self._stopping = True
            self._refused = f"({_FATAL[code]}): {answer.error_message}"
            return
        if code:
            now = time.monotonic()
            if now - self._error_logged_at > _ERROR_LOG_INTERVAL_S:
                self._error_logged_at = now
                log.warning("streams group %s: the heartbeat was answered with error %d (%s); retrying",
                            self.group_id, code, answer.error_message)
            return
        if reported:
            self._report = False
        if self.generation != answer.member_epoch:
            log.debug("member %s: epoch %d -> %d", self.member_id, self.generation, answer.member_epoch)
        self.generation = answer.member_epoch
        self._interval_s = max(answer.heartbeat_interval_ms, 100) / 1000
        self._offset_report.configure(answer.task_offset_interval_ms, answer.acceptable_recovery_lag)
        if answer.endpoints is not None:
            self.hosts = endpoint_host_map(answer.endpoints, self._subtopology_of)
            log.debug("streams group %s: endpoints at epoch %d: %s", self.group_id,
                      answer.endpoint_information_epoch, self.hosts)
        self._endpoint_epoch = answer.endpoint_information_epoch
        for status, detail in answer.status:
            log.debug("streams group %s status %d: %s", self.group_id, status, detail)
            if status == STATUS_SHUTDOWN_APPLICATION and not self.shutdown_requested:
                # Kafka Streams' SHUTDOWN_APPLICATION: some member asked for it; every member stops.
                log.warning("streams group %s: %s", self.group_id, detail)
                self.shutdown_requested = True
                self._stopping = True
                self._on_shutdown_request()
        if answer.active is not None:
            target = (answer.active, answer.standby or frozenset(), answer.warmup or frozenset())
            if target != self._owned or target != self._target:
                self._target_changed = True
            self._target = target
        if not self._assigned_once:
            # The first answer after joining is taken over even when it hands out no task (none at all, or
            # none while their previous owners still hold them): a member holding no task is RUNNING, as a
            # Kafka Streams thread is once its (empty) assignment arrived; tasks that come later move it
            # to REBALANCING and back.
            self._assigned_once = True
            self._target_changed = True

    async def _reconcile_with_keepalive(self, listener: Any) -> None:
        """Reconcile while heartbeats go on (restoring a task may take longer than the session timeout)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._keepalive)
            try:
                await self._reconcile(listener)
            finally:
                tg.cancel_scope.cancel()

    async def _keepalive(self) -> None:
        """Heartbeats that report nothing; an assignment or fence they bring is handled after reconciling."""
        while True:
            await anyio.sleep(self._interval_s)
            if self.generation == JOIN_EPOCH:
                return
            await self._heartbeat()

    async def _reconcile(self, listener: Any) -> None:
        """Give up what the broker took away, take over what it handed out (see the module docstring)."""
        active, standby, warmup = self._target
        self._target_changed = False
        self._reassign = False
        began = time.monotonic()
        self.active_tasks = tuple(sorted(active))
        self.standby_tasks = tuple(sorted(standby | warmup))
        partitions = sorted({tp for task in active for tp in self._partitions_of(task)})
        await listener.on_partitions_revoked(set(self._consumer.assignment()))
        if self._lost:
            return  # the revocation closed the tasks as lost; the rejoin hands out what this member runs now
        self._consumer.assign([TopicPartition(t, p) for t, p in partitions])
        await listener.on_partitions_assigned({TopicPartition(t, p) for t, p in partitions})
        self._owned = (active, standby, warmup)
        self._report = True
        log.info("streams group %s, member %s epoch %d: running active tasks %s, standby %s (%.1f s)",
                 self.group_id, self.member_id, self.generation, ", ".join(map(str, sorted(active))) or "none",
                 ", ".join(map(str, sorted(standby | warmup))) or "none", time.monotonic() - began)

    async def _lose_tasks(self, listener: Any) -> None:
        """The broker dropped this member: its tasks are closed dirty, nothing committed, before it rejoins."""
        self._lost = False
        self.lost_count += 1
        await listener.on_partitions_revoked(set(self._consumer.assignment()))
        self._consumer.assign([])
        self.active_tasks, self.standby_tasks = (), ()
        empty: frozenset[TaskId] = frozenset()
        self._owned = self._target = (empty, empty, empty)
        self._target_changed = False


def endpoint_host_map(endpoints: Iterable[tuple[str, int, Iterable[tuple[str, int]], Iterable[tuple[str, int]]]],
                      subtopology_of: Mapping[str, int]) -> tuple[HostTasks, ...]:
    """The broker's endpoints (host, port, active and standby partitions) as the classic assignor's host
    map: each endpoint's tasks (partition p of a source topic of sub-topology s is task s_p), the members
    sharing one endpoint merged (a Kafka Streams instance is one member per stream thread). Standby
    tasks include warm-ups (the broker lists them together); topics of no sub-topology here are skipped."""
    by_endpoint: dict[str, tuple[set[TaskId], set[TaskId]]] = {}
    for host, port, active, standby in endpoints:
        tasks = by_endpoint.setdefault(f"{host}:{port}", (set(), set()))
        for kind, partitions in zip(tasks, (active, standby), strict=True):
            kind.update(TaskId(subtopology_of[topic], p) for topic, p in partitions if topic in subtopology_of)
    return tuple(HostTasks(endpoint, tuple(sorted(active)), tuple(sorted(standby - active)))
                 for endpoint, (active, standby) in sorted(by_endpoint.items()))


async def request_group_shutdown(consumer: Any, group_id: str, topology: Iterable[SubtopologyDescription],
                                 timeout_s: float) -> bool:
    """Join the streams group once asking for an application shutdown (a member whose uncaught-exception
    handler said SHUTDOWN_APPLICATION): the broker passes the request on to every member in its
    heartbeats' answers, and they stop. True once the broker acknowledged it (within `timeout_s`)."""
    member = StreamsGroupMembership(consumer=consumer, group_id=group_id, member_id=str(uuid.uuid4()),
                                    topology=topology, partitions_of=lambda _task: [], dispatch_lock=anyio.Lock(),
                                    rebalance_timeout_ms=int(timeout_s * 1000), request_shutdown=True)
    with anyio.move_on_after(timeout_s):
        while not member.shutdown_requested:
            await member._heartbeat()
            if not member.shutdown_requested:
                await anyio.sleep(0.2)
    await member.leave()
    return member.shutdown_requested
