"""The streams group wire layer (KIP-1071) against the real Kafka 4.4 broker, and the topology it describes.

Members here are bare heartbeats (no runtime): they join with the topology, are handed tasks by the
broker, report what they own, hand tasks over to a second member and leave.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import anyio
import pytest
from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType

from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder
from streamlet.actors.task_id import TaskId
from streamlet.kafka.streams_group_protocol import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    HeartbeatAnswer,
    StreamsGroupHeartbeat,
    SubtopologyDescription,
    decode_answer,
    describe_topology,
)
from streamlet.kafka.topic_manager import plan_internal_topics, prepare_topics
from streamlet.topology import Topology
from tests.helpers.kafka import create_topics


def _wordcount(source: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    (builder.stream(source, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .flat_map_values(lambda line: line.split())
     .group_by(lambda _k, word: word, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .count(Materialized("counts"))
     .to_stream().to(sink, Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    return builder.build()


def _join(left: str, right: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    table = builder.table(right, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
    (builder.stream(left, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .select_key(lambda _k, v: v)
     .join(table, lambda a, b: f"{a}+{b}")
     .to(sink, Produced(key_serde=Serdes.String(), value_serde=Serdes.String())))
    return builder.build()


def test_wordcount_description_names_the_internal_topics_by_role() -> None:
    topology = _wordcount("lines", "counts-out")
    plan = plan_internal_topics(topology, "app", {"lines": 4, "counts-out": 4})
    first, second = describe_topology(topology, plan, replication_factor=3)
    assert first == SubtopologyDescription("0", source_topics=("lines",),
                                           repartition_sink_topics=("app-counts-repartition",))
    assert second.subtopology_id == "1"
    assert second.source_topics == ()
    [repartition] = second.repartition_source_topics
    assert (repartition.name, repartition.partitions) == ("app-counts-repartition", 0)
    assert repartition.replication_factor == 3
    assert repartition.configs["cleanup.policy"] == "delete"
    [changelog] = second.state_changelog_topics
    assert (changelog.name, changelog.partitions) == ("app-counts-changelog", 0)  # the broker derives the count
    assert changelog.configs["cleanup.policy"] == "compact"


def test_join_description_carries_its_copartition_group_as_indexes() -> None:
    topology = _join("orders", "users", "joined")
    plan = plan_internal_topics(topology, "app", {"orders": 3, "users": 3, "joined": 3})
    subs = describe_topology(topology, plan)
    joining = next(s for s in subs if s.repartition_source_topics)
    assert joining.source_topics == ("users",)
    assert [t.name for t in joining.repartition_source_topics] == [n for n in plan.internal_topics
                                                                   if n.endswith("-repartition")]
    # users (source index 0) and the repartitioned orders (repartition index 0) are co-partitioned
    assert joining.copartition_groups == (((0,), (0,)),)
    assert all(not s.copartition_groups for s in subs if s is not joining)


_COORDINATOR_LOADING = {14, 15, 16}


class _Member:
    """A bare streams group member: heartbeats only."""

    def __init__(self, client: AIOKafkaClient, node: int, group: str, topology: Any) -> None:
        self.client, self.node, self.group, self.topology = client, node, group, topology
        self.member_id = str(uuid.uuid4())
        self.epoch = JOIN_EPOCH
        self.target: frozenset[TaskId] = frozenset()
        self.owned: frozenset[TaskId] = frozenset()

    async def heartbeat(self, report: bool = False, epoch: int | None = None) -> HeartbeatAnswer:
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == JOIN_EPOCH
        owned = self.owned if report or joining else None
        request = StreamsGroupHeartbeat(
            self.group, self.member_id, epoch, topology=self.topology if joining else None,
            rebalance_timeout_ms=30000 if joining else -1, process_id=self.member_id if joining else None,
            active=owned, standby=None if owned is None else (), warmup=None if owned is None else ())
        answer = decode_answer(await self.client.send(self.node, request, group=ConnectionGroup.COORDINATION))
        with anyio.fail_after(60):
            while answer.error_code in _COORDINATOR_LOADING:  # a fresh broker's group coordinator starts up
                await anyio.sleep(0.5)
                self.node = await _coordinator(self.client, self.group)
                answer = decode_answer(await self.client.send(self.node, request, group=ConnectionGroup.COORDINATION))
        assert answer.error_code == 0, answer
        self.epoch = answer.member_epoch
        if answer.active is not None:
            self.target = answer.active
        return answer

    async def reconcile(self) -> None:
        """Give up what the broker took away, take what it handed over, and say so."""
        self.owned = self.target
        await self.heartbeat(report=True)


async def _coordinator(client: AIOKafkaClient, group: str) -> int:
    deadline = time.monotonic() + 60
    while True:
        try:
            return int(await client.coordinator_lookup(CoordinationType.GROUP, group))
        except Exception:
            if time.monotonic() > deadline:
                raise
            await anyio.sleep(0.5)


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_members_join_share_the_tasks_and_leave(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    source, sink, app = f"sg-in-{suffix}", f"sg-out-{suffix}", f"sg-app-{suffix}"
    await create_topics(bootstrap, {source: 4, sink: 4})
    topology = _wordcount(source, sink)
    plan = await prepare_topics(topology, app, bootstrap)
    description = describe_topology(topology, plan)
    every_task = {TaskId(s, p) for s in (0, 1) for p in range(4)}
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        node = await _coordinator(client, app)
        first = _Member(client, node, app, description)
        await first.heartbeat()
        assert first.epoch > 0
        with anyio.fail_after(60):
            while set(first.target) != every_task:  # the broker waits out its initial rebalance delay
                await anyio.sleep(0.5)
                await first.heartbeat()
        await first.reconcile()

        second = _Member(client, node, app, description)
        await second.heartbeat()
        with anyio.fail_after(60):
            # The broker takes half of the tasks from the first member; it hands them to the second only
            # once the first has stopped reporting them.
            while not second.owned or first.owned != first.target:
                await anyio.sleep(0.5)
                await first.heartbeat()
                if first.owned != first.target:
                    await first.reconcile()
                await second.heartbeat()
                if second.owned != second.target:
                    await second.reconcile()
        assert first.owned and second.owned
        assert not first.owned & second.owned
        assert first.owned | second.owned <= every_task

        left = await first.heartbeat(epoch=LEAVE_EPOCH)
        assert left.member_epoch == LEAVE_EPOCH
        with anyio.fail_after(60):
            while second.owned != every_task:  # the first member's tasks go to the one that stayed
                await anyio.sleep(0.5)
                await second.heartbeat()
                if second.owned != second.target:
                    await second.reconcile()
        assert (await second.heartbeat(epoch=LEAVE_EPOCH)).member_epoch == LEAVE_EPOCH
    finally:
        await client.close()


def test_a_foreign_key_join_describes_its_copartitioned_internal_topics() -> None:
    from streamlet import TableJoined

    builder = StreamsBuilder()
    orders = builder.table("orders", Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
    products = builder.table("products", Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
    (orders.join(products, lambda order: order.split(":")[0], lambda o, p: f"{o}/{p}",
                 TableJoined(name="order-product"))
     .to_stream().to("joined", Produced(key_serde=Serdes.String(), value_serde=Serdes.String())))
    topology = builder.build()
    plan = plan_internal_topics(topology, "app", {"orders": 2, "products": 2, "joined": 2})
    readers = [s for s in describe_topology(topology, plan) if s.repartition_source_topics]
    assert len(readers) == 2  # the subscription and the response topic, each read with a table
    for sub in readers:
        # as Kafka Streams' copartitionSources: the table's topic and the internal topic read with it
        assert sub.copartition_groups == (((0,), (0,)),), sub


def test_copartition_indexes_follow_java_hash_set_order() -> None:
    from streamlet.kafka.streams_group_protocol import _java_hash_set_order, _java_string_hash

    assert _java_string_hash("hello") == 99162322  # "hello".hashCode() in Java
    assert _java_string_hash("") == 0
    # 16 buckets, (h ^ h >>> 16) & 15: "b" (98 -> bucket 2) iterates before "a0" (3055 -> bucket 15)
    assert _java_hash_set_order(["a0", "b"]) == ["b", "a0"]


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_the_answer_carries_the_endpoints_of_the_members(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    source, sink, app = f"sg-in-{suffix}", f"sg-out-{suffix}", f"sg-app-{suffix}"
    await create_topics(bootstrap, {source: 2, sink: 2})
    topology = _wordcount(source, sink)
    description = describe_topology(topology, await prepare_topics(topology, app, bootstrap))
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        node = await _coordinator(client, app)
        member_id = str(uuid.uuid4())
        join = StreamsGroupHeartbeat(app, member_id, JOIN_EPOCH, topology=description, rebalance_timeout_ms=30000,
                                     process_id=member_id, active=(), standby=(), warmup=(),
                                     endpoint=("localhost", 8080))
        answer = decode_answer(await client.send(node, join, group=ConnectionGroup.COORDINATION))
        while answer.error_code in _COORDINATOR_LOADING:
            await anyio.sleep(0.5)
            node = await _coordinator(client, app)
            answer = decode_answer(await client.send(node, join, group=ConnectionGroup.COORDINATION))
        assert answer.error_code == 0, answer
        epoch, endpoints = answer.member_epoch, answer.endpoints
        with anyio.fail_after(60):
            while not endpoints or not endpoints[0][2]:
                await anyio.sleep(0.5)
                answer = decode_answer(await client.send(
                    node, StreamsGroupHeartbeat(app, member_id, epoch), group=ConnectionGroup.COORDINATION))
                assert answer.error_code == 0, answer
                epoch, endpoints = answer.member_epoch, answer.endpoints or endpoints
        [(host, port, active, _standby)] = endpoints
        assert (host, port) == ("localhost", 8080)
        assert set(active) == {(source, 0), (source, 1)} | {(f"{app}-counts-repartition", p) for p in (0, 1)}
        await client.send(node, StreamsGroupHeartbeat(app, member_id, LEAVE_EPOCH), group=ConnectionGroup.COORDINATION)
    finally:
        await client.close()
