"""The wire format of streams groups (KIP-1071, `group.protocol=streams`), which aiokafka does not speak.

In a streams group the broker, not a leader member, assigns the tasks: every member sends the
application's topology once, when it joins, and then heartbeats; each heartbeat's answer carries the
member's epoch and, when it changed, the tasks the member is to run (active, standby, warm-up). A
member reports in its heartbeats the tasks it owns, and the broker hands a task to a new owner only
once the previous owner no longer reports it. Offsets are committed under the member epoch.

This module holds only the bytes: the `StreamsGroupHeartbeat` request and response (API key 88,
version 0, a flexible version: compact strings and arrays, tagged fields; the layouts follow Kafka
4.4's `StreamsGroupHeartbeatRequest.json` / `Response.json`), `StreamsGroupDescribe` (API key 89,
version 0: the topology the group was initialized with, which the broker compares a joining member's
with) and the topology description a member sends,
derived from streamlet's topology and topic plan the way Kafka Streams derives its own: a
sub-topology's id is its number as a string; user topics are its source topics, internal repartition
topics it reads are its repartition source topics (with a partition count only when the topology
fixes one), the repartition topics it writes its repartition sink topics, and its stores' changelogs
its state changelog topics (partition count always 0: the broker derives it); co-partition groups are
indexes into the sub-topology's source and repartition source lists. What the member does with the
answers is `streamlet.runtime.streams_membership`'s job.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int8,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

from streamlet.actors.task_id import TaskId
from streamlet.kafka.topic_manager import TopicPlan, resolve_topic
from streamlet.topology import Topology

API_KEY = 88
DESCRIBE_API_KEY = 89

JOIN_EPOCH = 0
"""The member epoch a member (re)joins with."""
LEAVE_EPOCH = -1
"""The member epoch a (dynamic) member leaves with."""
STATIC_LEAVE_EPOCH = -2
"""The member epoch a static member (one with an instance id) leaves with when it means to come back: the
broker keeps its tasks for it until its session times out (Kafka's LEAVE_GROUP_STATIC_MEMBER_EPOCH)."""

# Status codes the broker reports in a heartbeat's answer (StreamsGroupHeartbeatResponse.json).
STATUS_STALE_TOPOLOGY = 0
STATUS_MISSING_SOURCE_TOPICS = 1
STATUS_INCORRECTLY_PARTITIONED_TOPICS = 2
STATUS_MISSING_INTERNAL_TOPICS = 3
STATUS_SHUTDOWN_APPLICATION = 4
STATUS_ASSIGNMENT_DELAYED = 5  # Kafka 4.4: the broker waits (initial rebalance delay, assignment interval)


class _UInt16:
    """An unsigned 16-bit integer (a port number)."""

    _FORMAT = struct.Struct(">H")

    @classmethod
    def encode(cls, value: int) -> bytes:
        return cls._FORMAT.pack(value)

    @classmethod
    def decode(cls, data: BytesIO) -> int:
        return int(cls._FORMAT.unpack(data.read(2))[0])

    @classmethod
    def repr(cls, value: Any) -> str:
        return repr(value)


class _NullableStruct:
    """A nullable struct field of a flexible version: one signed byte (-1 null, 1 present), then the struct."""

    def __init__(self, *fields: tuple[str, Any]) -> None:
        self.schema = Schema(*fields)

    def encode(self, value: Sequence[Any] | None) -> bytes:
        if value is None:
            return Int8.encode(-1)
        return Int8.encode(1) + self.schema.encode(value)

    def decode(self, data: BytesIO) -> tuple[Any, ...] | None:
        return None if Int8.decode(data) < 0 else self.schema.decode(data)

    def repr(self, value: Any) -> str:
        return "null" if value is None else self.schema.repr(value)


_STRING = CompactString("utf-8")
_KEY_VALUE = CompactArray(("key", _STRING), ("value", _STRING), ("tags", TaggedFields))
_TOPIC_INFO = CompactArray(("name", _STRING), ("partitions", Int32), ("replication_factor", Int16),
                           ("topic_configs", _KEY_VALUE), ("tags", TaggedFields))
_REQUEST_TASK_IDS = CompactArray(("subtopology_id", _STRING), ("partitions", CompactArray(Int32)),
                                 ("tags", TaggedFields))
_ASSIGNMENT = Schema(*(  # a member's assignment in a describe: active, standby and warm-up tasks
    (kind, CompactArray(("subtopology_id", _STRING), ("partitions", CompactArray(Int32)), ("tags", TaggedFields)))
    for kind in ("active_tasks", "standby_tasks", "warmup_tasks")), ("tags", TaggedFields))
_TASK_OFFSETS = CompactArray(("subtopology_id", _STRING), ("partition", Int32), ("offset", Int64),
                             ("tags", TaggedFields))


class StreamsGroupHeartbeatResponse_v0(Response):
    API_KEY = API_KEY
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("error_message", _STRING),
        ("member_id", _STRING),
        ("member_epoch", Int32),
        ("heartbeat_interval_ms", Int32),
        ("acceptable_recovery_lag", Int32),
        ("task_offset_interval_ms", Int32),
        ("status", CompactArray(("status_code", Int8), ("status_detail", _STRING), ("tags", TaggedFields))),
        ("active_tasks", _REQUEST_TASK_IDS),
        ("standby_tasks", _REQUEST_TASK_IDS),
        ("warmup_tasks", _REQUEST_TASK_IDS),
        ("endpoint_information_epoch", Int32),
        ("partitions_by_user_endpoint", CompactArray(
            ("user_endpoint", Schema(("host", _STRING), ("port", _UInt16), ("tags", TaggedFields))),
            ("active_partitions", CompactArray(("topic", _STRING), ("partitions", CompactArray(Int32)),
                                               ("tags", TaggedFields))),
            ("standby_partitions", CompactArray(("topic", _STRING), ("partitions", CompactArray(Int32)),
                                                ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("tags", TaggedFields),
    )


class StreamsGroupHeartbeatRequest_v0(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = API_KEY
    API_VERSION = 0
    RESPONSE_TYPE = StreamsGroupHeartbeatResponse_v0
    SCHEMA = Schema(
        ("group_id", _STRING),
        ("member_id", _STRING),
        ("member_epoch", Int32),
        ("endpoint_information_epoch", Int32),
        ("instance_id", _STRING),
        ("rack_id", _STRING),
        ("rebalance_timeout_ms", Int32),
        ("topology", _NullableStruct(
            ("epoch", Int32),
            ("subtopologies", CompactArray(
                ("subtopology_id", _STRING),
                ("source_topics", CompactArray(_STRING)),
                ("source_topic_regex", CompactArray(_STRING)),
                ("state_changelog_topics", _TOPIC_INFO),
                ("repartition_sink_topics", CompactArray(_STRING)),
                ("repartition_source_topics", _TOPIC_INFO),
                ("copartition_groups", CompactArray(
                    ("source_topics", CompactArray(Int16)),
                    ("source_topic_regex", CompactArray(Int16)),
                    ("repartition_source_topics", CompactArray(Int16)),
                    ("tags", TaggedFields))),
                ("tags", TaggedFields))),
            ("tags", TaggedFields))),
        ("active_tasks", _REQUEST_TASK_IDS),
        ("standby_tasks", _REQUEST_TASK_IDS),
        ("warmup_tasks", _REQUEST_TASK_IDS),
        ("process_id", _STRING),
        ("user_endpoint", _NullableStruct(("host", _STRING), ("port", _UInt16), ("tags", TaggedFields))),
        ("client_tags", _KEY_VALUE),
        ("task_offsets", _TASK_OFFSETS),
        ("task_end_offsets", _TASK_OFFSETS),
        ("shutdown_application", Boolean),
        ("tags", TaggedFields),
    )


class StreamsGroupDescribeResponse_v0(Response):
    API_KEY = DESCRIBE_API_KEY
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("groups", CompactArray(
            ("error_code", Int16),
            ("error_message", _STRING),
            ("group_id", _STRING),
            ("group_state", _STRING),
            ("group_epoch", Int32),
            ("assignment_epoch", Int32),
            ("topology", _NullableStruct(
                ("epoch", Int32),
                ("subtopologies", CompactArray(
                    ("subtopology_id", _STRING),
                    ("source_topics", CompactArray(_STRING)),
                    ("repartition_sink_topics", CompactArray(_STRING)),
                    ("state_changelog_topics", _TOPIC_INFO),
                    ("repartition_source_topics", _TOPIC_INFO),
                    ("tags", TaggedFields))),
                ("tags", TaggedFields))),
            ("members", CompactArray(
                ("member_id", _STRING),
                ("member_epoch", Int32),
                ("instance_id", _STRING),
                ("rack_id", _STRING),
                ("client_id", _STRING),
                ("client_host", _STRING),
                ("topology_epoch", Int32),
                ("process_id", _STRING),
                ("user_endpoint", _NullableStruct(("host", _STRING), ("port", _UInt16), ("tags", TaggedFields))),
                ("client_tags", _KEY_VALUE),
                ("task_offsets", _TASK_OFFSETS),
                ("task_end_offsets", _TASK_OFFSETS),
                ("assignment", _ASSIGNMENT),
                ("target_assignment", _ASSIGNMENT),
                ("is_classic", Boolean),
                ("tags", TaggedFields))),
            ("authorized_operations", Int32),
            ("tags", TaggedFields))),
        ("tags", TaggedFields),
    )


class StreamsGroupDescribeRequest_v0(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = DESCRIBE_API_KEY
    API_VERSION = 0
    RESPONSE_TYPE = StreamsGroupDescribeResponse_v0
    SCHEMA = Schema(
        ("group_ids", CompactArray(_STRING)),
        ("include_authorized_operations", Boolean),
        ("tags", TaggedFields),
    )


class StreamsGroupDescribe(Request[StreamsGroupDescribeRequest_v0]):
    """Describe one streams group: its state, epochs, topology and members."""

    API_KEY = DESCRIBE_API_KEY

    def __init__(self, group_id: str) -> None:
        self._group_id = group_id

    def build(self, request_struct_class: type[StreamsGroupDescribeRequest_v0]) -> StreamsGroupDescribeRequest_v0:
        return request_struct_class([self._group_id], False, {})


# -- the topology description ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopicInfo:
    """An internal topic as a member describes it: name, partition count (0: the broker derives it),
    replication factor (-1 or 0: the broker's default) and topic configs."""

    name: str
    partitions: int = 0
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)

    def _wire(self) -> tuple[Any, ...]:
        return (self.name, self.partitions, self.replication_factor,
                [(k, v, {}) for k, v in sorted(self.configs.items())], {})


@dataclass(frozen=True)
class SubtopologyDescription:
    """One sub-topology as the broker sees it: the topics whose partitions make up its tasks, the
    internal topics it writes and keeps its stores in, and which of its inputs are co-partitioned
    (indexes into `source_topics` and `repartition_source_topics`)."""

    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()

    def _wire(self) -> tuple[Any, ...]:
        return (self.subtopology_id, list(self.source_topics), [],
                [t._wire() for t in self.state_changelog_topics], list(self.repartition_sink_topics),
                [t._wire() for t in self.repartition_source_topics],
                [(list(sources), [], list(repartitions), {}) for sources, repartitions in self.copartition_groups],
                {})


def describe_topology(topology: Topology, plan: TopicPlan, replication_factor: int = -1
                      ) -> tuple[SubtopologyDescription, ...]:
    """The sub-topologies of `topology` as a joining member sends them (see the module docstring).

    Internal topics get their configs from the topic plan (Kafka Streams' defaults for repartition
    topics and changelogs, and what the topology adds)."""
    app_id = plan.application_id
    repartition = {name for name, spec in topology.internal_topics.items() if spec.kind == "repartition"}
    read_by: dict[str, int] = {}
    descriptions = []
    for sub in topology.sub_topologies():
        for topic in sub.source_topics:
            read_by[resolve_topic(topology, app_id, topic)] = sub.id
    copartitioned = [[resolve_topic(topology, app_id, t) for t in group]
                     for group in topology.copartition_topic_groups()]
    for sub in topology.sub_topologies():
        # A foreign-key join's subscription and response topics are co-partitioned with the other
        # sources of the sub-topology that reads them (Kafka Streams' copartitionSources).
        for topic in sub.source_topics:
            spec = topology.internal_topics.get(topic)
            if spec is not None and spec.copartition:
                copartitioned.append([resolve_topic(topology, app_id, t) for t in sub.source_topics])
    for sub in sorted(topology.sub_topologies(), key=lambda s: str(s.id)):  # Kafka Streams sorts the ids as text
        sources = tuple(sorted(resolve_topic(topology, app_id, t) for t in sub.source_topics if t not in repartition))
        repartition_sources = tuple(sorted(
            (_topic_info(plan, resolve_topic(topology, app_id, t), topology.internal_topics[t].num_partitions or 0,
                         replication_factor)
             for t in sub.source_topics if t in repartition), key=lambda info: info.name))
        sinks = tuple(sorted(resolve_topic(topology, app_id, t) for t in sub.sink_topics if t in repartition))
        changelogs = tuple(sorted(
            (_topic_info(plan, plan.changelog_topics[store], 0, replication_factor)
             for store in sub.stores if store in plan.changelog_topics), key=lambda info: info.name))
        source_index = {name: i for i, name in enumerate(sources)}
        repartition_index = {info.name: i for i, info in enumerate(repartition_sources)}
        groups = []
        for group in copartitioned:
            if group and all(read_by.get(t) == sub.id for t in group):
                ordered = _java_hash_set_order(group)  # the broker compares the indexes in Kafka Streams' order
                groups.append((tuple(source_index[t] for t in ordered if t in source_index),
                               tuple(repartition_index[t] for t in ordered if t in repartition_index)))
        descriptions.append(SubtopologyDescription(str(sub.id), sources, repartition_sources, sinks, changelogs,
                                                   tuple(groups)))
    return tuple(descriptions)


def _java_string_hash(text: str) -> int:
    """Java's `String.hashCode()` (UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def _java_hash_set_order(names: Iterable[str]) -> list[str]:
    """The order a small `java.util.HashSet` of these strings iterates in (16 buckets: up to 12 names).
    Kafka Streams lists a co-partition group's topics in that order, and the broker compares the lists
    as sent, so a member whose order differed would be refused as having another topology."""
    def bucket(name: str) -> int:
        h = _java_string_hash(name)
        return (h ^ (h >> 16)) & 15
    unique = list(dict.fromkeys(names))
    return sorted(unique, key=bucket) if len(unique) <= 12 else sorted(unique)


def _topic_info(plan: TopicPlan, name: str, partitions: int, replication_factor: int) -> TopicInfo:
    planned = plan.internal_topics.get(name)
    return TopicInfo(name, partitions, replication_factor, dict(planned.config) if planned is not None else {})


# -- the request and its answer ---------------------------------------------------------------------------------
def _task_ids(tasks: Iterable[TaskId] | None) -> list[tuple[str, list[int], dict[int, bytes]]] | None:
    if tasks is None:
        return None
    by_sub: dict[int, list[int]] = {}
    for task in sorted(tasks):
        by_sub.setdefault(task.subtopology, []).append(task.partition)
    return [(str(sub), parts, {}) for sub, parts in sorted(by_sub.items())]


def _task_offsets(offsets: Mapping[TaskId, int] | None) -> list[tuple[str, int, int, dict[int, bytes]]] | None:
    if offsets is None:
        return None
    return [(str(task.subtopology), task.partition, offset, {}) for task, offset in sorted(offsets.items())]


class StreamsGroupHeartbeat(Request[StreamsGroupHeartbeatRequest_v0]):
    """One heartbeat of a streams group member (see the module docstring).

    `topology` is sent only with `member_epoch` 0 (joining); the owned task lists are None when
    unchanged since the last heartbeat (all three None or none of them). `task_offsets` and
    `task_end_offsets` (per task, the sum of its changelogs' offsets: how far this member's copy of the
    task's stores is, and where the changelogs end) are None when unchanged since last sent.
    `endpoint_information_epoch` is the last one the broker answered with: it sends the group's
    endpoints (`partitions_by_user_endpoint`) only to a member whose epoch is behind. `instance_id` makes
    the member static (KIP-1071's `group.instance.id`); it is sent when joining, None otherwise."""

    API_KEY = API_KEY

    def __init__(self, group_id: str, member_id: str, member_epoch: int, *,
                 topology: Sequence[SubtopologyDescription] | None = None, topology_epoch: int = 0,
                 rebalance_timeout_ms: int = -1, process_id: str | None = None,
                 active: Iterable[TaskId] | None = None, standby: Iterable[TaskId] | None = None,
                 warmup: Iterable[TaskId] | None = None, endpoint: tuple[str, int] | None = None,
                 endpoint_information_epoch: int = 0, task_offsets: Mapping[TaskId, int] | None = None,
                 task_end_offsets: Mapping[TaskId, int] | None = None, shutdown_application: bool = False,
                 instance_id: str | None = None) -> None:
        self._fields: tuple[Any, ...] = (
            group_id, member_id, member_epoch, endpoint_information_epoch, instance_id, None, rebalance_timeout_ms,
            None if topology is None else (topology_epoch, [s._wire() for s in topology], {}),
            _task_ids(active), _task_ids(standby), _task_ids(warmup), process_id,
            None if endpoint is None else (endpoint[0], endpoint[1], {}),
            [] if member_epoch == JOIN_EPOCH else None, _task_offsets(task_offsets), _task_offsets(task_end_offsets),
            shutdown_application, {})

    def build(self, request_struct_class: type[StreamsGroupHeartbeatRequest_v0]) -> StreamsGroupHeartbeatRequest_v0:
        return request_struct_class(*self._fields)


@dataclass(frozen=True)
class HeartbeatAnswer:
    """A heartbeat's answer, decoded: the error (0 for none), the member's id and epoch, the next
    heartbeat's interval, the group's status codes, and the tasks to run (None: unchanged)."""

    error_code: int
    error_message: str | None
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    status: tuple[tuple[int, str], ...] = ()
    active: frozenset[TaskId] | None = None
    standby: frozenset[TaskId] | None = None
    warmup: frozenset[TaskId] | None = None
    endpoints: tuple[tuple[str, int, tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]], ...] | None = None
    """Per member endpoint (`application.server`): host, port, its active and standby (warm-up included)
    partitions; None when unchanged since the endpoint information epoch the member sent."""
    endpoint_information_epoch: int = 0
    task_offset_interval_ms: int = -1
    """How often the broker wants the task offsets (-1: not said)."""
    acceptable_recovery_lag: int = -1
    """The lag under which the broker counts a warm-up task as caught up (-1: not said)."""

    @property
    def assignment_changed(self) -> bool:
        return self.active is not None


def _tasks_of(entries: list[Any] | None) -> frozenset[TaskId] | None:
    if entries is None:
        return None
    return frozenset(TaskId(int(sub), p) for sub, parts, _ in entries for p in parts)


def _partitions_of(entries: list[Any]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((topic, p) for topic, parts, _ in entries for p in parts))


def decode_answer(response: Any) -> HeartbeatAnswer:
    """The decoded form of a `StreamsGroupHeartbeatResponse_v0`."""
    endpoints = None
    if response.partitions_by_user_endpoint is not None:
        endpoints = tuple((endpoint[0], endpoint[1], _partitions_of(active), _partitions_of(standby))
                          for endpoint, active, standby, _ in response.partitions_by_user_endpoint)
    return HeartbeatAnswer(
        error_code=response.error_code, error_message=response.error_message, member_id=response.member_id,
        member_epoch=response.member_epoch, heartbeat_interval_ms=response.heartbeat_interval_ms,
        status=tuple((code, detail) for code, detail, _ in (response.status or ())),
        active=_tasks_of(response.active_tasks), standby=_tasks_of(response.standby_tasks),
        warmup=_tasks_of(response.warmup_tasks), endpoints=endpoints,
        endpoint_information_epoch=response.endpoint_information_epoch,
        task_offset_interval_ms=response.task_offset_interval_ms,
        acceptable_recovery_lag=response.acceptable_recovery_lag)


# -- the group's topology, as a describe shows it -----------------------------------------------------------------
def described_topology(response: Any) -> tuple[SubtopologyDescription, ...] | None:
    """The topology a `StreamsGroupDescribe` response shows for its (one) group; None if the group has none
    (not a streams group, or not initialized). Co-partition groups are not part of a describe."""
    for error_code, _msg, _gid, _state, _epoch, _aepoch, topology, *_ in response.groups:
        if error_code or topology is None:
            return None
        _topology_epoch, subtopologies, _tags = topology
        return tuple(SubtopologyDescription(
            sub_id, tuple(sources), tuple(_info(t) for t in repartition_sources), tuple(sinks),
            tuple(_info(t) for t in changelogs))
            for sub_id, sources, sinks, changelogs, repartition_sources, _ in subtopologies or ())
    return None


def _info(wire: Any) -> TopicInfo:
    name, partitions, replication_factor, configs, _ = wire
    return TopicInfo(name, partitions, replication_factor, {k: v for k, v, _ in configs})


def first_difference(ours: Sequence[SubtopologyDescription], theirs: Sequence[SubtopologyDescription]) -> str | None:
    """Where this member's topology first differs from the group's (as the broker compares them, but
    order-blind and without co-partition groups, which a describe does not show); None if it does not."""
    mine = {s.subtopology_id: s for s in ours}
    group = {s.subtopology_id: s for s in theirs}
    if set(mine) != set(group):
        return f"sub-topologies {sorted(mine)} here, {sorted(group)} in the group"
    for sub_id in sorted(mine, key=lambda i: (len(i), i)):
        a, b = mine[sub_id], group[sub_id]
        for what in ("source_topics", "repartition_sink_topics"):
            if set(getattr(a, what)) != set(getattr(b, what)):
                return (f"sub-topology {sub_id}: {what.replace('_', ' ')} {sorted(getattr(a, what))} here, "
                        f"{sorted(getattr(b, what))} in the group")
        for what in ("repartition_source_topics", "state_changelog_topics"):
            here = {t.name: t for t in getattr(a, what)}
            there = {t.name: t for t in getattr(b, what)}
            if set(here) != set(there):
                return (f"sub-topology {sub_id}: {what.replace('_', ' ')} {sorted(here)} here, "
                        f"{sorted(there)} in the group")
            for name in sorted(here):
                mine_info, group_info = here[name], there[name]
                if not mine_info.partitions:  # a describe shows the partition count the broker resolved
                    group_info = TopicInfo(group_info.name, 0, group_info.replication_factor, group_info.configs)
                if mine_info != group_info:
                    return f"sub-topology {sub_id}: topic {name} is {mine_info} here, {group_info} in the group"
    return None
