"""A task-aware, sticky partition assignor for aiokafka's consumer group protocol.

Kafka Streams does not assign partitions, it assigns *tasks*: task (s, p) is partition p of every
source topic of sub-topology s, and all of them must go to the same member, or a join/aggregation
would see only half of its co-partitioned input. Generic assignors (range, round-robin) only get that
right by accident. This assignor groups partitions into tasks and hands out whole tasks:

* balanced: members' task counts differ by at most one, and on a fresh group each sub-topology's
  tasks are spread evenly too (so one member does not get all the stateful work);
* sticky: a member keeps the tasks it owned (it has their state open and warm) as far as balance
  allows. Members report what they own in the JoinGroup metadata, tagged with the *assignment epoch*
  in which they got it; when two members claim one task (a member that rejoins after its tasks moved)
  the newer epoch wins, and the older claim still counts as "this member has state for it", which
  decides where the current owner's surplus goes;
* deterministic: the same members, metadata and claims always give the same assignment.

aiokafka looks assignors up by attribute (`name`, `metadata()`, `assign()`, `on_assignment()`), so an
*instance* works in `AIOKafkaConsumer(partition_assignment_strategy=(instance,))`; each KafkaStreams
instance gets its own, holding its topology's topic map and its record of the last assignment.

Wire format of `user_data` (both directions; integers big-endian):
    u8 version (=1) | i32 epoch | i32 n_active | n_active * (i32 subtopology, i32 partition)
                    | i32 n_standby | n_standby * (i32 subtopology, i32 partition) | [u8 shutdown]
The optional trailing `shutdown` byte carries an application shutdown: a member that joins with it set
asks for one (its uncaught-exception handler said SHUTDOWN_APPLICATION), and the leader then hands
every member an assignment with it set and no tasks, as Kafka Streams does with its assignment error
code.
In JoinGroup metadata the lists are what the member owns now; in the assignment they are what it
must run. Later versions only append fields, so a reader takes the fields it knows and ignores the rest.
Version 2 always writes the shutdown byte and appends where interactive queries find their owners
(Kafka Streams' `application.server`, its AssignmentInfo's partitions-by-host):
    ... | u8 shutdown | str endpoint | i32 n_hosts | n_hosts * (str endpoint | active list | standby list)
(str: i16 length + UTF-8). In JoinGroup metadata `endpoint` is the member's own `application.server`
("" when unset) and there are no hosts; in the assignment every member gets the same host map: the
tasks (active, standby) of each member that has an endpoint. A version-1 member ignores the tail,
and a version-1 leader sends none, so a rolling upgrade only delays the host map to its end.
Standby tasks (`num.standby.replicas`): each stateful task gets that many warm copies on members other
than its active owner (never two on one member), placed stickily where a member already keeps one, else
on the member with the fewest; a member that keeps a standby counts as "has state" when the active
task must move, so a failover lands where the state is warm.
"""

from __future__ import annotations

import logging
import struct
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

from streamlet.actors.task_id import TaskId

log = logging.getLogger(__name__)

ASSIGNOR_NAME = "streamlet"
"""The group protocol name; every member of an application's group must offer it."""

USER_DATA_VERSION = 2
_HEADER = struct.Struct(">Bi")
_COUNT = struct.Struct(">i")
_TASK = struct.Struct(">ii")
_STR_LEN = struct.Struct(">h")


# -- user_data encoding --------------------------------------------------------------------------------
@dataclass(frozen=True)
class HostTasks:
    """One member's tasks as the assignment's host map shows them to every member."""

    endpoint: str
    active: tuple[TaskId, ...] = ()
    standby: tuple[TaskId, ...] = ()


def _pack_tasks(tasks: Iterable[TaskId]) -> list[bytes]:
    ordered = sorted(tasks)
    return [_COUNT.pack(len(ordered)), *(_TASK.pack(t.subtopology, t.partition) for t in ordered)]


def _pack_str(text: str) -> bytes:
    data = text.encode("utf-8")
    return _STR_LEN.pack(len(data)) + data


class _Reader:
    """Reads the fields of a payload in order; every read checks the bytes are there."""

    def __init__(self, data: bytes, offset: int) -> None:
        self.data, self.offset = data, offset

    def _take(self, size: int) -> int:
        start = self.offset
        if size < 0 or start + size > len(self.data):
            raise ValueError("task payload truncated")
        self.offset += size
        return start

    def tasks(self) -> tuple[TaskId, ...]:
        (count,) = _COUNT.unpack_from(self.data, self._take(_COUNT.size))
        start = self._take(count * _TASK.size)
        return tuple(TaskId(*_TASK.unpack_from(self.data, start + i * _TASK.size)) for i in range(count))

    def text(self) -> str:
        (length,) = _STR_LEN.unpack_from(self.data, self._take(_STR_LEN.size))
        start = self._take(length)
        return self.data[start:start + length].decode("utf-8")

    def count(self) -> int:
        (count,) = _COUNT.unpack_from(self.data, self._take(_COUNT.size))
        return int(count)


@dataclass(frozen=True)
class TaskPayload:
    """What travels in `user_data`: the tasks (active and standby) and the epoch they belong to, and
    (version 2) the member's `application.server` and the host map of an assignment."""

    epoch: int
    active: tuple[TaskId, ...] = ()
    standby: tuple[TaskId, ...] = ()
    shutdown: bool = False
    endpoint: str = ""
    hosts: tuple[HostTasks, ...] = ()

    def encode(self) -> bytes:
        parts = [_HEADER.pack(USER_DATA_VERSION, self.epoch), *_pack_tasks(self.active), *_pack_tasks(self.standby),
                 b"\x01" if self.shutdown else b"\x00", _pack_str(self.endpoint), _COUNT.pack(len(self.hosts))]
        for host in self.hosts:
            parts += [_pack_str(host.endpoint), *_pack_tasks(host.active), *_pack_tasks(host.standby)]
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> TaskPayload:
        """Parse `data`; raises ValueError if it is not (a prefix-compatible version of) this format."""
        if len(data) < _HEADER.size:
            raise ValueError(f"task payload too short ({len(data)} bytes)")
        version, epoch = _HEADER.unpack_from(data)
        if version < 1:
            raise ValueError(f"unknown task payload version {version}")
        reader = _Reader(data, _HEADER.size)
        active, standby = reader.tasks(), reader.tasks()
        shutdown = len(data) > reader.offset and data[reader.offset] == 1
        if version < 2 or len(data) <= reader.offset:
            return cls(epoch, active, standby, shutdown)
        reader.offset += 1
        endpoint = reader.text()
        hosts = tuple(HostTasks(reader.text(), reader.tasks(), reader.tasks()) for _ in range(reader.count()))
        return cls(epoch, active, standby, shutdown, endpoint, hosts)


# -- the pure assignment logic -------------------------------------------------------------------------
def tasks_for_partition_counts(
    topic_to_subtopology: Mapping[str, int], partition_counts: Mapping[str, int]
) -> dict[TaskId, list[tuple[str, int]]]:
    """Every task and its partitions: sub-topology s has max(partitions of its source topics) tasks, and
    task (s, p) holds partition p of each of s's source topics that has that many partitions."""
    topics_of: dict[int, list[str]] = defaultdict(list)
    for topic in sorted(topic_to_subtopology):
        if topic in partition_counts:
            topics_of[topic_to_subtopology[topic]].append(topic)
    tasks: dict[TaskId, list[tuple[str, int]]] = {}
    for sub in sorted(topics_of):
        topics = topics_of[sub]
        for p in range(max(partition_counts[t] for t in topics)):
            tasks[TaskId(sub, p)] = [(t, p) for t in topics if p < partition_counts[t]]
    return tasks


@dataclass(frozen=True)
class MemberClaim:
    """What one member reports at JoinGroup: the tasks it owns and the epoch it got them in."""

    epoch: int = -1
    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()


@dataclass
class _Member:
    member_id: str
    quota: int = 0
    tasks: list[TaskId] = field(default_factory=list)
    per_sub: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    def take(self, task: TaskId) -> None:
        self.tasks.append(task)
        self.per_sub[task.subtopology] += 1


def assign_tasks(
    tasks: Collection[TaskId],
    members: Collection[str],
    claims: Mapping[str, MemberClaim] | None = None,
    eligible: Mapping[str, Collection[int]] | None = None,
) -> dict[str, list[TaskId]]:
    """Assign whole tasks to members: balanced, sticky, deterministic.

    `claims`: each member's previously owned tasks (see `MemberClaim`); `eligible`: the sub-topologies
    a member can run (it subscribes to their topics; all of them when omitted). Returns
    member -> sorted tasks; every member appears, every task goes to exactly one eligible member.
    """
    claims = claims or {}
    order = sorted(members)
    if not order:
        return {}
    all_tasks = sorted(set(tasks))
    task_set = set(all_tasks)
    subs = {t.subtopology for t in all_tasks}
    can_run = {m: subs if eligible is None else set(eligible.get(m, ())) & subs for m in order}

    # 1. Current owner of each claimed task: the newest epoch wins, then the lowest member id.
    #    Losing claims are remembered as "has state for it" (a softer preference below).
    owner: dict[TaskId, str] = {}
    owner_epoch: dict[TaskId, int] = {}
    stale: dict[TaskId, set[str]] = defaultdict(set)
    for m in order:
        claim = claims.get(m, MemberClaim())
        for t in sorted(claim.active):
            if t not in task_set or t.subtopology not in can_run[m]:
                continue
            if t not in owner or claim.epoch > owner_epoch[t]:
                if t in owner:
                    stale[t].add(owner[t])
                owner[t], owner_epoch[t] = m, claim.epoch
            else:
                stale[t].add(m)
        for t in claim.standby:
            if t in task_set and t.subtopology in can_run[m]:
                stale[t].add(m)

    # 2. Quotas: base for all, base + 1 for `extra` of them, given to the members owning the most
    #    tasks (that maximises the tasks that stay where they are).
    owned: dict[str, list[TaskId]] = {m: [] for m in order}
    for t in all_tasks:
        if t in owner:
            owned[owner[t]].append(t)
    base, extra = divmod(len(all_tasks), len(order))
    state = {m: _Member(m) for m in order}
    for rank, m in enumerate(sorted(order, key=lambda m: (-len(owned[m]), m))):
        state[m].quota = base + (1 if rank < extra else 0)

    # 3. Keep owned tasks up to the quota; drop first what another member has state for, and keep
    #    a mix of sub-topologies rather than a run of one.
    for m in order:
        mine = owned[m]
        rank_in_sub: dict[TaskId, int] = {}
        seen: dict[int, int] = defaultdict(int)
        for t in mine:
            rank_in_sub[t] = seen[t.subtopology]
            seen[t.subtopology] += 1
        mine.sort(key=lambda t: (bool(stale.get(t)), rank_in_sub[t], t))
        for t in mine[: state[m].quota]:
            state[m].take(t)
    placed = {t for s in state.values() for t in s.tasks}

    # 4. Place the rest, task by task in (sub-topology, partition) order: prefer a member with state
    #    for it, then the one with fewest tasks of that sub-topology, then the emptiest, then by id.
    index = {m: i for i, m in enumerate(order)}
    for t in all_tasks:
        if t in placed:
            continue
        runners = [state[m] for m in order if t.subtopology in can_run[m]]
        if not runners:
            log.warning("no group member subscribes to the topics of task %s; it stays unassigned", t)
            continue
        room = [s for s in runners if len(s.tasks) < s.quota]
        if not room:  # only when members subscribe to different topics: keep it as even as possible
            least = min(len(s.tasks) for s in runners)
            room = [s for s in runners if len(s.tasks) == least]
        holders = stale.get(t, set())
        best = min(room, key=lambda s: (s.member_id not in holders, s.per_sub[t.subtopology],
                                        len(s.tasks) - s.quota, index[s.member_id]))
        best.take(t)
    return {m: sorted(state[m].tasks) for m in order}


def assign_standbys(
    active: Mapping[str, Collection[TaskId]],
    stateful: Collection[TaskId],
    replicas: int,
    claims: Mapping[str, MemberClaim] | None = None,
) -> dict[str, list[TaskId]]:
    """`replicas` standby copies of every stateful task, each on a different member than its active
    owner and than its other copies; sticky to members that kept one before, else the least loaded."""
    claims = claims or {}
    order = sorted(active)
    result: dict[str, list[TaskId]] = {m: [] for m in order}
    if replicas <= 0 or len(order) < 2:
        return result
    owner = {t: m for m in order for t in active[m]}
    load = {m: len(active[m]) for m in order}
    for t in sorted(set(stateful)):
        if t not in owner:
            continue
        for _ in range(replicas):
            candidates = [m for m in order if m != owner[t] and t not in result[m]]
            if not candidates:
                break
            kept = claims.get
            best = min(candidates, key=lambda m: (t not in kept(m, MemberClaim()).standby
                                                  and t not in kept(m, MemberClaim()).active,
                                                  load[m], m))
            result[best].append(t)
            load[best] += 1
    return {m: sorted(ts) for m, ts in result.items()}


# -- the aiokafka assignor -----------------------------------------------------------------------------
class TaskAssignor(AbstractPartitionAssignor):
    """One instance per KafkaStreams instance; pass it as `partition_assignment_strategy=(assignor,)`.

    After each rebalance, `active_tasks` (and `partitions_by_task`) say which tasks this member runs;
    both are empty until the first assignment. `previous_active_tasks` lets a restarted instance claim
    the tasks it still has local state for at its first join; they are sent with epoch 0, so a member
    that owns them now keeps them.
    """

    name = ASSIGNOR_NAME
    version = 0  # the consumer protocol's metadata/assignment schema version

    def __init__(self, topic_to_subtopology: Mapping[str, int],
                 previous_active_tasks: Iterable[TaskId] = (), *, standby_replicas: int = 0,
                 stateful_subtopologies: Collection[int] = (), application_server: str = "") -> None:
        self.topic_to_subtopology = dict(topic_to_subtopology)
        self.application_server = application_server
        # Every member's tasks by its application.server, from the last assignment (interactive queries).
        self.hosts: tuple[HostTasks, ...] = ()
        self.standby_replicas = standby_replicas
        self.stateful_subtopologies = frozenset(stateful_subtopologies)
        self.request_shutdown = False  # set to ask the whole application to shut down at the next join
        self.shutdown_requested = False  # the last assignment said: shut down
        self.epoch = 0
        self._local_state_tasks = frozenset(previous_active_tasks)
        self.active_tasks: set[TaskId] = set()
        self.standby_tasks: set[TaskId] = set()
        self.partitions_by_task: dict[TaskId, list[tuple[str, int]]] = {}
        self.assignments = 0  # how many assignments this member has received

    # Called on every (re)join: tell the leader what we own.
    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        owned = self.active_tasks if self.assignments else self._local_state_tasks
        payload = TaskPayload(self.epoch, tuple(owned), tuple(self.standby_tasks), self.request_shutdown,
                              self.application_server)
        return ConsumerProtocolMemberMetadata(self.version, sorted(topics), payload.encode())

    # Called on the elected leader only.
    def assign(self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
               ) -> dict[str, ConsumerProtocolMemberAssignment]:
        counts: dict[str, int] = {}
        for topic in self.topic_to_subtopology:
            partitions = cluster.partitions_for_topic(topic)
            if partitions:
                counts[topic] = len(partitions)
        tasks = tasks_for_partition_counts(self.topic_to_subtopology, counts)

        claims: dict[str, MemberClaim] = {}
        eligible: dict[str, set[int]] = {}
        shutdown = False
        endpoints: dict[str, str] = {}
        topics_of: dict[int, set[str]] = defaultdict(set)
        for topic in counts:
            topics_of[self.topic_to_subtopology[topic]].add(topic)
        for member_id, meta in members.items():
            subscribed = set(meta.subscription)
            unknown = subscribed - set(self.topic_to_subtopology)
            if unknown:
                log.warning("member %s subscribes to topics %s this topology does not read; they stay "
                            "unassigned (are members running different topologies?)", member_id, sorted(unknown))
            eligible[member_id] = {s for s, ts in topics_of.items() if ts <= subscribed}
            try:
                payload = TaskPayload.decode(meta.user_data or b"")
            except ValueError as exc:
                log.warning("member %s sent unreadable task metadata (%s); treating it as owning nothing",
                            member_id, exc)
                payload = TaskPayload(-1)
            shutdown |= payload.shutdown
            if payload.endpoint:
                endpoints[member_id] = payload.endpoint
            claims[member_id] = MemberClaim(payload.epoch, frozenset(payload.active), frozenset(payload.standby))

        epoch = max((c.epoch for c in claims.values()), default=0) + 1
        if shutdown:
            log.warning("a member requested an application shutdown: every member is told to shut down")
            return {m: ConsumerProtocolMemberAssignment(self.version, [], TaskPayload(epoch, shutdown=True).encode())
                    for m in members}
        by_member = assign_tasks(tasks, list(members), claims, eligible)
        standbys = assign_standbys(by_member, [t for t in tasks if t.subtopology in self.stateful_subtopologies],
                                   self.standby_replicas, claims)
        hosts = tuple(HostTasks(endpoints[m], tuple(by_member[m]), tuple(standbys.get(m, ())))
                      for m in sorted(by_member) if m in endpoints)
        result: dict[str, ConsumerProtocolMemberAssignment] = {}
        for member_id, member_tasks in by_member.items():
            per_topic: dict[str, list[int]] = defaultdict(list)
            for task in member_tasks:
                for topic, partition in tasks[task]:
                    per_topic[topic].append(partition)
            result[member_id] = ConsumerProtocolMemberAssignment(
                self.version,
                sorted((topic, sorted(ps)) for topic, ps in per_topic.items()),
                TaskPayload(epoch, tuple(member_tasks), tuple(standbys.get(member_id, ())),
                            hosts=hosts).encode(),
            )
        log.info("assignment epoch %d: %s%s", epoch,
                 {m: [str(t) for t in ts] for m, ts in sorted(by_member.items())},
                 f"; standby {({m: [str(t) for t in ts] for m, ts in sorted(standbys.items())})}"
                 if self.standby_replicas else "")
        return result

    # Called on every member with its own assignment.
    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Record our tasks. Never raises: aiokafka calls this inside its join logic, so a problem is
        logged and the tasks are derived from the partitions instead."""
        try:
            payload = TaskPayload.decode(assignment.user_data or b"")
        except ValueError as exc:
            log.error("unreadable task assignment (%s); deriving tasks from the assigned partitions", exc)
            payload = TaskPayload(self.epoch)
        by_task: dict[TaskId, list[tuple[str, int]]] = {t: [] for t in payload.active}
        for tp in assignment.partitions():
            sub = self.topic_to_subtopology.get(tp.topic)
            if sub is None:
                log.error("assigned partition %s-%d is not read by this topology", tp.topic, tp.partition)
                continue
            task = TaskId(sub, tp.partition)
            if task not in by_task:
                log.error("assigned partition %s-%d belongs to task %s, which the assignment does not list",
                          tp.topic, tp.partition, task)
            by_task.setdefault(task, []).append((tp.topic, tp.partition))
        self.epoch = payload.epoch
        self.shutdown_requested = payload.shutdown
        self.active_tasks = set(by_task)
        self.standby_tasks = set(payload.standby)
        self.hosts = payload.hosts
        self.partitions_by_task = {t: sorted(ps) for t, ps in by_task.items()}
        self.assignments += 1


def make_assignor(topic_to_subtopology: Mapping[str, int],
                  previous_active_tasks: Iterable[TaskId] = (), *, standby_replicas: int = 0,
                  stateful_subtopologies: Collection[int] = (), application_server: str = "") -> TaskAssignor:
    """A fresh assignor for one KafkaStreams instance (topic: real topic name -> sub-topology id)."""
    return TaskAssignor(topic_to_subtopology, previous_active_tasks, standby_replicas=standby_replicas,
                        stateful_subtopologies=stateful_subtopologies, application_server=application_server)
