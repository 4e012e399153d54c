"""The task-aware sticky assignor: pure logic, properties, and two real group members on the real broker."""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.protocol import ConsumerProtocol
from aiokafka.protocol.metadata import MetadataResponse_v0
from hypothesis import given
from hypothesis import strategies as st

from streamlet.actors.task_id import TaskId
from streamlet.kafka.assignor import (
    ASSIGNOR_NAME,
    HostTasks,
    MemberClaim,
    TaskAssignor,
    TaskPayload,
    assign_standbys,
    assign_tasks,
    make_assignor,
    tasks_for_partition_counts,
)

T = TaskId


# -- TaskId ----------------------------------------------------------------------------------------------
def test_task_id_prints_and_parses_like_kafka_streams() -> None:
    assert str(T(1, 12)) == "1_12"
    assert TaskId.parse("1_12") == T(1, 12)
    assert T(0, 3) == (0, 3) and hash(T(0, 3)) == hash((0, 3))
    assert sorted([T(1, 0), T(0, 2), T(0, 10)]) == [T(0, 2), T(0, 10), T(1, 0)]
    for bad in ("", "1", "1_", "_1", "a_1", "1_2_3", "-1_2"):
        with pytest.raises(ValueError):
            TaskId.parse(bad)


# -- user_data ---------------------------------------------------------------------------------------------
def test_payload_round_trips_and_is_compact() -> None:
    payload = TaskPayload(7, (T(1, 2), T(0, 5)), (T(2, 0),))
    data = payload.encode()
    # header, two task lists, shutdown byte, empty endpoint, empty host map
    assert len(data) == 1 + 4 + 4 + 2 * 8 + 4 + 8 + 1 + 2 + 4
    assert data[0] == 2  # version byte first
    decoded = TaskPayload.decode(data)
    assert decoded.epoch == 7
    assert decoded.active == (T(0, 5), T(1, 2))  # encoded sorted: deterministic bytes
    assert decoded.standby == (T(2, 0),)


def test_payload_readers_ignore_fields_a_later_version_appends() -> None:
    data = bytearray(TaskPayload(3, (T(0, 1),)).encode())
    data[0] = 9
    decoded = TaskPayload.decode(bytes(data) + b"\x00\x01future-field")
    assert decoded.epoch == 3 and decoded.active == (T(0, 1),) and decoded.standby == ()


def test_payload_carries_the_endpoint_and_the_host_map() -> None:
    hosts = (HostTasks("a:1", (T(0, 0), T(0, 2)), (T(0, 1),)), HostTasks("b:2", (T(0, 1),), (T(0, 0), T(0, 2))))
    decoded = TaskPayload.decode(TaskPayload(4, (T(0, 0),), endpoint="héte:8080", hosts=hosts).encode())
    assert decoded.endpoint == "héte:8080" and decoded.hosts == hosts and not decoded.shutdown


def test_version_1_payloads_still_decode_and_version_1_readers_skip_the_tail() -> None:
    """A rolling upgrade: a version-1 member's metadata (no shutdown byte, no endpoint) is read as
    owning its tasks with no endpoint; a version-1 reader of version-2 bytes stops after the shutdown byte."""
    v1 = bytes([1]) + (5).to_bytes(4, "big") + (1).to_bytes(4, "big") + bytes(8) + bytes(4)
    decoded = TaskPayload.decode(v1)
    assert decoded.active == (T(0, 0),) and decoded.endpoint == "" and decoded.hosts == ()
    v2 = TaskPayload(5, (T(0, 0),), shutdown=True, endpoint="x:1").encode()
    assert v2[len(v1)] == 1  # the shutdown byte sits where version 1 puts it


def test_the_assignment_tells_every_member_which_endpoint_owns_which_tasks() -> None:
    assignors = {m: make_assignor({"in": 0}, standby_replicas=1, stateful_subtopologies=[0],
                                  application_server=f"{m}:80") for m in ("m1", "m2")}
    _rebalance(assignors, "m1", _cluster({"in": 4}), ["in"])
    assert assignors["m1"].hosts == assignors["m2"].hosts
    by_host = {h.endpoint: h for h in assignors["m1"].hosts}
    assert set(by_host) == {"m1:80", "m2:80"}
    for m, assignor in assignors.items():
        assert set(by_host[f"{m}:80"].active) == assignor.active_tasks
        assert set(by_host[f"{m}:80"].standby) == assignor.standby_tasks
    assert sorted(by_host["m1:80"].active + by_host["m2:80"].active) == [T(0, p) for p in range(4)]
    assert set(by_host["m1:80"].standby) == set(by_host["m2:80"].active)


@pytest.mark.parametrize("data", [b"", b"\x01\x00\x00", b"\x00" + bytes(12),
                                  TaskPayload(1, (T(0, 1),)).encode()[:-6],
                                  b"\x01" + bytes(4) + b"\xff\xff\xff\xff" + bytes(4)])
def test_malformed_payloads_are_rejected(data: bytes) -> None:
    with pytest.raises(ValueError):
        TaskPayload.decode(data)


# -- tasks from partition counts ---------------------------------------------------------------------------
def test_tasks_group_partition_p_of_every_source_topic() -> None:
    tasks = tasks_for_partition_counts({"a": 0, "b": 0, "c": 1, "gone": 2}, {"a": 3, "b": 2, "c": 1, "x": 9})
    assert tasks == {
        T(0, 0): [("a", 0), ("b", 0)],
        T(0, 1): [("a", 1), ("b", 1)],
        T(0, 2): [("a", 2)],  # b has only 2 partitions: the task count is the max over the sources
        T(1, 0): [("c", 0)],
    }


# -- assign_tasks: examples --------------------------------------------------------------------------------
def _strs(assignment: dict[str, list[TaskId]]) -> dict[str, list[str]]:
    return {m: [str(t) for t in ts] for m, ts in assignment.items()}


def test_fresh_group_spreads_each_subtopology() -> None:
    tasks = [T(s, p) for s in range(2) for p in range(4)]
    result = assign_tasks(tasks, ["b", "a"])
    assert _strs(result) == {"a": ["0_0", "0_2", "1_0", "1_2"], "b": ["0_1", "0_3", "1_1", "1_3"]}


def test_joining_member_takes_only_the_surplus() -> None:
    tasks = [T(0, p) for p in range(6)]
    before = {"a": MemberClaim(1, frozenset(tasks[:3])), "b": MemberClaim(1, frozenset(tasks[3:]))}
    after = assign_tasks(tasks, ["a", "b", "c"], before)
    assert set(after["a"]) < set(tasks[:3]) and set(after["b"]) < set(tasks[3:])
    assert len(after["c"]) == 2


def test_newest_epoch_wins_a_doubly_claimed_task_and_the_stale_holder_gets_the_surplus_back() -> None:
    tasks = [T(0, p) for p in range(4)]
    claims = {
        "a": MemberClaim(5, frozenset(tasks)),  # took everything while b was away
        "b": MemberClaim(3, frozenset({T(0, 1), T(0, 3)})),  # b comes back with its old state
    }
    result = assign_tasks(tasks, ["a", "b"], claims)
    assert result == {"a": [T(0, 0), T(0, 2)], "b": [T(0, 1), T(0, 3)]}
    # The owner by epoch gets the larger share even when it sorts last.
    three = [T(0, p) for p in range(3)]
    newer_last = assign_tasks(three, ["a", "z"], {"a": MemberClaim(1, frozenset(three)),
                                                  "z": MemberClaim(5, frozenset(three))})
    assert newer_last == {"a": [T(0, 2)], "z": [T(0, 0), T(0, 1)]}
    # Equal epochs: the lowest member id is the owner (deterministic).
    tie = assign_tasks([T(0, 0)], ["x", "y"], {"x": MemberClaim(2, frozenset({T(0, 0)})),
                                                "y": MemberClaim(2, frozenset({T(0, 0)}))})
    assert tie == {"x": [T(0, 0)], "y": []}


def test_claims_of_unknown_tasks_are_ignored() -> None:
    result = assign_tasks([T(0, 0), T(0, 1)], ["a", "b"], {"a": MemberClaim(1, frozenset({T(0, 1), T(7, 7)}))})
    assert result == {"a": [T(0, 1)], "b": [T(0, 0)]}


def test_members_only_get_subtopologies_they_subscribe_to() -> None:
    tasks = [T(0, 0), T(0, 1), T(1, 0), T(1, 1)]
    result = assign_tasks(tasks, ["a", "b", "c"], eligible={"a": {0}, "b": {0, 1}, "c": set()})
    assert result["c"] == []
    assert all(t.subtopology == 0 for t in result["a"])
    assert sorted(result["a"] + result["b"]) == tasks


def test_no_members_or_no_tasks() -> None:
    assert assign_tasks([T(0, 0)], []) == {}
    assert assign_tasks([], ["a", "b"]) == {"a": [], "b": []}


# -- assign_tasks: properties ------------------------------------------------------------------------------
@st.composite
def task_sets(draw: st.DrawFn) -> list[TaskId]:
    counts = draw(st.lists(st.integers(0, 9), min_size=1, max_size=4))
    return [T(s, p) for s, n in enumerate(counts) for p in range(n)]


member_ids = st.lists(st.text("abcdefgh", min_size=1, max_size=3), min_size=1, max_size=7, unique=True)


def _claims_from(owned: dict[str, list[TaskId]], epoch: int = 1) -> dict[str, MemberClaim]:
    return {m: MemberClaim(epoch, frozenset(ts)) for m, ts in owned.items()}


def _check_complete_and_balanced(tasks: list[TaskId], members: list[str], result: dict[str, list[TaskId]]) -> None:
    assert set(result) == set(members)
    handed_out = [t for ts in result.values() for t in ts]
    assert sorted(handed_out) == sorted(tasks)  # every task exactly once
    sizes = [len(ts) for ts in result.values()]
    assert max(sizes) - min(sizes) <= 1


@given(task_sets(), member_ids, st.data())
def test_property_balanced_and_complete_whatever_was_claimed(tasks: list[TaskId], members: list[str],
                                                             data: st.DataObject) -> None:
    everything = [*tasks, T(9, 0)]  # claims may name tasks that no longer exist
    claims = {m: MemberClaim(data.draw(st.integers(-1, 3)), frozenset(data.draw(st.lists(st.sampled_from(everything)))))
              for m in members if data.draw(st.booleans())}
    _check_complete_and_balanced(tasks, members, assign_tasks(tasks, members, claims))


@given(task_sets(), member_ids)
def test_property_fresh_group_spreads_every_subtopology(tasks: list[TaskId], members: list[str]) -> None:
    result = assign_tasks(tasks, members)
    for sub in {t.subtopology for t in tasks}:
        per_member = [sum(1 for t in ts if t.subtopology == sub) for ts in result.values()]
        assert max(per_member) - min(per_member) <= 1, (sub, _strs(result))


@given(task_sets(), member_ids, member_ids, st.randoms(use_true_random=False))
def test_property_membership_change_moves_the_fewest_tasks(tasks: list[TaskId], old_members: list[str],
                                                           new_members: list[str], rnd: random.Random) -> None:
    """From any previous ownership (even unbalanced), the kept tasks equal the most a balanced
    assignment can keep: each member keeps min(owned, base), plus one more for the `extra` members
    that own more than base."""
    owned: dict[str, list[TaskId]] = {m: [] for m in old_members}
    for t in tasks:
        owned[rnd.choice(old_members)].append(t)
    result = assign_tasks(tasks, new_members, _claims_from(owned))
    _check_complete_and_balanced(tasks, new_members, result)
    base, extra = divmod(len(tasks), len(new_members))
    prev = [len(owned.get(m, [])) for m in new_members]
    best_kept = sum(min(n, base) for n in prev) + min(extra, sum(1 for n in prev if n > base))
    kept = sum(len(set(result[m]) & set(owned.get(m, []))) for m in new_members)
    assert kept == best_kept


@given(task_sets(), member_ids, st.randoms(use_true_random=False))
def test_property_stable_when_nothing_changes(tasks: list[TaskId], members: list[str], rnd: random.Random) -> None:
    first = assign_tasks(tasks, members)
    second = assign_tasks(tasks, list(reversed(members)), _claims_from(first, epoch=1))
    assert second == first


@given(task_sets(), member_ids, st.randoms(use_true_random=False))
def test_property_deterministic_regardless_of_input_order(tasks: list[TaskId], members: list[str],
                                                          rnd: random.Random) -> None:
    owned = {m: [t for t in tasks if rnd.random() < 0.3] for m in members}
    claims = _claims_from(owned)
    shuffled_members = rnd.sample(members, len(members))
    shuffled_claims = dict(rnd.sample(sorted(claims.items()), len(claims)))
    assert assign_tasks(tasks, members, claims) == assign_tasks(rnd.sample(tasks, len(tasks)), shuffled_members,
                                                                shuffled_claims)


# -- the aiokafka assignor, driven as aiokafka drives it ---------------------------------------------------------
def _cluster(partition_counts: dict[str, int]) -> ClusterMetadata:
    """Real aiokafka cluster metadata, fed a real (v0) metadata response."""
    cluster = ClusterMetadata()
    cluster.update_metadata(MetadataResponse_v0(
        [(1, "127.0.0.1", 9092)],
        [(0, topic, [(0, p, 1, [1], [1]) for p in range(n)]) for topic, n in partition_counts.items()],
    ))
    return cluster


def _rebalance(assignors: dict[str, TaskAssignor], leader: str, cluster: ClusterMetadata,
               topics: list[str]) -> dict[str, Any]:
    """One JoinGroup/SyncGroup round trip, with the protocol's byte encoding in between."""
    wire = {m: a.metadata(topics).encode() for m, a in assignors.items()}
    members = {m: ConsumerProtocol.METADATA.decode(b) for m, b in wire.items()}
    assignments = assignors[leader].assign(cluster, members)
    decoded = {m: ConsumerProtocol.ASSIGNMENT.decode(a.encode()) for m, a in assignments.items()}
    for m, a in assignors.items():
        a.on_assignment(decoded[m])
    return decoded


def test_assignor_instance_round_trip_keeps_co_partitioned_topics_together() -> None:
    mapping = {"left": 0, "right": 0, "other": 1}
    cluster = _cluster({"left": 4, "right": 4, "other": 2})
    assignors = {"m1": make_assignor(mapping), "m2": make_assignor(mapping)}
    _rebalance(assignors, "m1", cluster, sorted(mapping))
    a1, a2 = assignors["m1"], assignors["m2"]
    assert a1.active_tasks | a2.active_tasks == {T(0, p) for p in range(4)} | {T(1, 0), T(1, 1)}
    assert len(a1.active_tasks) == len(a2.active_tasks) == 3
    for a in (a1, a2):
        for task, tps in a.partitions_by_task.items():
            topics = ["left", "right"] if task.subtopology == 0 else ["other"]
            assert tps == [(t, task.partition) for t in topics]
    # The state is per instance, and a second rebalance with the same members changes nothing.
    before = (set(a1.active_tasks), set(a2.active_tasks))
    _rebalance(assignors, "m2", cluster, sorted(mapping))
    assert (a1.active_tasks, a2.active_tasks) == before
    assert a1.epoch == a2.epoch == 2


def test_member_without_the_topics_of_a_subtopology_is_not_given_its_tasks() -> None:
    mapping = {"left": 0, "other": 1}
    cluster = _cluster({"left": 2, "other": 2})
    a_full, a_left = make_assignor(mapping), make_assignor(mapping)
    wire = {"full": a_full.metadata(["left", "other"]), "left-only": a_left.metadata(["left"])}
    result = a_full.assign(cluster, wire)
    assert {tp.topic for tp in result["left-only"].partitions()} <= {"left"}
    assert sorted(tp for a in result.values() for tp in a.partitions()) == sorted(
        (t, p) for t in ("left", "other") for p in range(2))


def test_restarted_instance_reclaims_tasks_it_has_local_state_for() -> None:
    mapping = {"in": 0}
    cluster = _cluster({"in": 4})
    warm = make_assignor(mapping, previous_active_tasks=[T(0, 2), T(0, 3)])
    cold = make_assignor(mapping)
    _rebalance({"a-cold": cold, "b-warm": warm}, "a-cold", cluster, ["in"])
    assert warm.active_tasks == {T(0, 2), T(0, 3)}
    assert cold.active_tasks == {T(0, 0), T(0, 1)}


def test_unreadable_assignment_falls_back_to_the_partitions() -> None:
    a = make_assignor({"in": 0, "in2": 0})
    assignment = ConsumerProtocol.ASSIGNMENT(0, [("in", [1, 3]), ("in2", [1])], b"\x01garbage")
    a.on_assignment(assignment)
    assert a.active_tasks == {T(0, 1), T(0, 3)}
    assert a.partitions_by_task[T(0, 1)] == [("in", 1), ("in2", 1)]


def test_name_is_the_group_protocol_name() -> None:
    assert make_assignor({}).name == ASSIGNOR_NAME == "streamlet"


# -- two real members on the real broker --------------------------------------------------------------------
async def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.1)


class _Member:
    """A consumer that keeps polling in the background (as a KafkaStreams instance does)."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], assignor: TaskAssignor) -> None:
        self.assignor = assignor
        self.topics = topics
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
            session_timeout_ms=6000, heartbeat_interval_ms=200,
            partition_assignment_strategy=(assignor,),
        )
        self._stop = anyio.Event()

    def owned_partitions(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        await self.consumer.start()
        try:
            self.consumer.subscribe(self.topics)
            task_status.started()
            while not self._stop.is_set():
                await self.consumer.getmany(timeout_ms=100)
        finally:
            await self.consumer.stop()  # leaves the group

    def stop(self) -> None:
        self._stop.set()


def _whole_tasks(partitions: set[tuple[str, int]], topics: list[str]) -> set[TaskId]:
    by_partition = Counter(p for _, p in partitions)
    assert all(n == len(topics) for n in by_partition.values()), f"split task: {sorted(partitions)}"
    return {T(0, p) for p in by_partition}


@pytest.mark.anyio
@pytest.mark.broker
async def test_two_real_members_get_whole_tasks_balanced_and_sticky(kafka_broker: Any) -> None:
    from tests.helpers.kafka import create_topics

    suffix = uuid.uuid4().hex[:8]
    topics = [f"assignor-left-{suffix}", f"assignor-right-{suffix}"]
    await create_topics(kafka_broker.bootstrap_servers, dict.fromkeys(topics, 4))
    mapping = dict.fromkeys(topics, 0)
    group = f"assignor-group-{suffix}"
    all_tasks = {T(0, p) for p in range(4)}

    def settled(*members: _Member) -> Callable[[], bool]:
        """Every member has its assignment of one common epoch, and the consumer applied it."""
        def check() -> bool:
            epochs = {m.assignor.epoch for m in members}
            return (len(epochs) == 1 and set().union(*(m.assignor.active_tasks for m in members)) == all_tasks
                    and all(_whole_tasks(m.owned_partitions(), topics) == m.assignor.active_tasks for m in members))
        return check

    async def in_group(tg: Any, member: _Member) -> _Member:
        await tg.start(member.run)
        return member

    b_assignor = make_assignor(mapping)
    async with anyio.create_task_group() as tg:
        a = await in_group(tg, _Member(kafka_broker.bootstrap_servers, group, topics, make_assignor(mapping)))
        b = await in_group(tg, _Member(kafka_broker.bootstrap_servers, group, topics, b_assignor))
        await _wait_for(settled(a, b), "two members to share the tasks")
        assert len(a.assignor.active_tasks) == len(b.assignor.active_tasks) == 2
        b_before = set(b.assignor.active_tasks)

        b.stop()  # b leaves: a takes over all four tasks, both topics' partitions together
        await _wait_for(lambda: a.assignor.active_tasks == all_tasks
                        and _whole_tasks(a.owned_partitions(), topics) == all_tasks, "a to own every task")

        # b comes back (same instance state, as after a restart with its stores on disk): it gets back
        # exactly the tasks it had, and a keeps the other two instead of shuffling.
        b2 = await in_group(tg, _Member(kafka_broker.bootstrap_servers, group, topics, b_assignor))
        await _wait_for(settled(a, b2), "b to rejoin")
        assert b2.assignor.active_tasks == b_before
        assert a.assignor.active_tasks == all_tasks - b_before
        a.stop()
        b2.stop()


# -- standby replicas ------------------------------------------------------------------------------------
def test_standbys_never_share_a_member_with_their_active_or_each_other() -> None:
    tasks = [T(0, p) for p in range(6)] + [T(1, p) for p in range(6)]
    members = ["a", "b", "c"]
    active = assign_tasks(tasks, members)
    stateful = [t for t in tasks if t.subtopology == 1]
    standby = assign_standbys(active, stateful, 2)
    for t in stateful:
        holders = [m for m in members if t in standby[m]]
        owner = next(m for m in members if t in active[m])
        assert len(holders) == 2 and owner not in holders
    assert not any(t.subtopology == 0 for ts in standby.values() for t in ts)  # stateless: no standby
    # One member: nowhere to put a copy. More replicas than other members: as many as there are.
    assert assign_standbys({"a": tasks}, stateful, 1) == {"a": []}
    assert all(len([m for m in members if t in assign_standbys(active, stateful, 5)[m]]) == 2 for t in stateful)


def test_standbys_are_sticky_and_a_failover_goes_where_the_standby_was() -> None:
    tasks = [T(1, p) for p in range(4)]
    active = {"a": [T(1, 0), T(1, 1)], "b": [T(1, 2), T(1, 3)], "c": []}
    claims = {"c": MemberClaim(3, frozenset(), frozenset({T(1, 0), T(1, 1), T(1, 2), T(1, 3)}))}
    standby = assign_standbys(active, tasks, 1, claims)
    assert standby["c"] == tasks  # c kept them all before: it keeps them (warm state)
    # a dies: its tasks go to c, which held their standbys, not to b.
    after = assign_tasks(tasks, ["b", "c"], {
        "b": MemberClaim(3, frozenset({T(1, 2), T(1, 3)})),
        "c": MemberClaim(3, frozenset(), frozenset({T(1, 0), T(1, 1)}))})
    assert after == {"b": [T(1, 2), T(1, 3)], "c": [T(1, 0), T(1, 1)]}
