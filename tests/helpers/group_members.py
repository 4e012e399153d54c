"""A group's members as the broker describes them (Kafka's DescribeGroups / StreamsGroupDescribe): member
id, group instance id, client id and the partitions (classic) or tasks (streams) each is assigned."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.errors import KafkaError

from streamlet.kafka.streams_group_protocol import StreamsGroupDescribe


@dataclass(frozen=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    assigned: frozenset[str]
    """Classic: `topic-partition` of every assigned partition; streams: `subtopology_partition` of every
    active task."""


@dataclass(frozen=True)
class Group:
    state: str
    members: tuple[Member, ...]

    def by_instance(self) -> dict[str | None, Member]:
        return {m.instance_id: m for m in self.members}


async def describe_classic(bootstrap: str, group: str) -> Group:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (response,) = await admin.describe_consumer_groups([group])
    finally:
        await admin.close()
    entry = response.to_object()["groups"][0]
    members = []
    for m in entry.get("members") or ():
        raw = m.get("member_assignment") or b""
        assigned: frozenset[str] = frozenset()
        if raw:
            decoded = ConsumerProtocolMemberAssignment.decode(raw)
            assigned = frozenset(f"{topic}-{p}" for topic, parts in decoded.assignment for p in parts)
        members.append(Member(str(m["member_id"]), m.get("group_instance_id"), str(m["client_id"]), assigned))
    return Group(str(entry.get("state") or ""), tuple(members))


async def describe_streams(bootstrap: str, group: str) -> Group:
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        node = int(await client.coordinator_lookup(CoordinationType.GROUP, group))
        response = await client.send(node, StreamsGroupDescribe(group), group=ConnectionGroup.COORDINATION)
    finally:
        await client.close()
    (entry,) = response.groups
    members = []
    for member in entry[7] or ():
        member_id, _epoch, instance_id, _rack, client_id, *_rest = member
        assignment: Any = member[-4]  # (active, standby, warm-up, tags)
        active = frozenset(f"{sub}_{p}" for sub, parts, _ in assignment[0] or () for p in parts)
        members.append(Member(str(member_id), instance_id, str(client_id), active))
    return Group(str(entry[3] or ""), tuple(members))


async def describe(bootstrap: str, group: str, streams: bool) -> Group:
    return await (describe_streams if streams else describe_classic)(bootstrap, group)


async def settled(bootstrap: str, group: str, streams: bool, members: int, timeout: float = 180) -> Group:
    """The group once the broker describes it stable with `members` members, each assigned something."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            described = await describe(bootstrap, group, streams)
        except KafkaError:  # a fresh broker: the group's coordinator is still being set up
            await asyncio.sleep(0.5)
            continue
        if (described.state.lower() == "stable" and len(described.members) == members
                and all(m.assigned for m in described.members)):
            return described
        if time.monotonic() > deadline:
            raise AssertionError(f"the group did not settle: {described}")
        await asyncio.sleep(0.5)
