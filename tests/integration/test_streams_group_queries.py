"""Streams groups (KIP-1071) on the real Kafka 4.4 broker: interactive queries and task offsets.

In a streams group no leader member hands out a host map: the broker sends every member the group's
endpoints (`application.server`) with their partitions. Two streamlet instances with HTTP query
servers run a count in one group: asking either one for any key answers the owner's value, and
`query_metadata_for_key` names the owner. With a standby replica, the broker's description of the
group shows the task offsets each member reported for its standby tasks (and no running active
task), equal to the changelogs' positions measured independently.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType

from streamlet import KafkaStreams, Serdes, State
from streamlet.actors.task_id import TaskId
from streamlet.http import serve
from streamlet.http.client import get_json
from streamlet.http.streams_app import StreamsApp
from streamlet.kafka.streams_group_protocol import StreamsGroupDescribe
from streamlet.queries.key_value_view import ReadOnlyKeyValueView
from streamlet.queries.metadata import HostInfo
from tests.helpers.kafka import create_topics, produce, set_group_config
from tests.http.served_apps import free_ports
from tests.integration.topologies import STREAMS, counting_topology

WORDS = [f"w{i:02d}" for i in range(24)]


def _input() -> list[tuple[bytes | None, bytes | None]]:
    """Each word i appears i+1 times, keys spread over the input partitions."""
    return [(f"k{i}-{n}".encode(), word.encode()) for i, word in enumerate(WORDS) for n in range(i + 1)]


EXPECTED = Counter(value.decode() for _key, value in _input() if value is not None)


async def _start_pair(bootstrap: str, tmp_path: Path, app_id: str, inp: str, out: str,
                      ) -> tuple[list[KafkaStreams], list[Any], list[int]]:
    ports = free_ports(2)
    instances = [KafkaStreams(counting_topology(inp, out, "counts"), {
        "application.id": app_id, "bootstrap.servers": bootstrap, **STREAMS, "commit.interval.ms": 200,
        "state.dir": str(tmp_path / str(i)), "application.server": f"127.0.0.1:{port}"})
        for i, port in enumerate(ports)]
    servers = []
    for s, port in zip(instances, ports, strict=True):
        servers.append(await serve(StreamsApp(s), "127.0.0.1", port))
        await s.start()
    return instances, servers, ports


async def _close(instances: list[KafkaStreams], servers: list[Any]) -> None:
    for server in servers:
        server.close()
    for s in instances:
        await s.close()


def _owners(s: KafkaStreams, store: str = "counts") -> dict[int, HostInfo]:
    """Partition of `store` -> its active host, as this instance's metadata says (the store's tasks read
    the repartition topic; a host's other partitions are of the stateless sub-topology's tasks)."""
    return {partition: meta.host_info for meta in s.metadata_for_all_streams_clients()
            if store in meta.state_store_names
            for topic, partition in meta.topic_partitions if topic.endswith("-repartition")}


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_either_instance_answers_any_key_from_its_owner(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"sg-iq-in-{sfx}", f"sg-iq-out-{sfx}", f"sg-iq-{sfx}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    instances, servers, ports = await _start_pair(bootstrap, tmp_path, app_id, inp, out)
    hosts = {HostInfo("127.0.0.1", port) for port in ports}
    try:
        await produce(bootstrap, inp, _input())
        # Both instances learn the same host map from the broker: each of the 4 partitions of the
        # store has one active host, and both hosts hold some.
        with anyio.fail_after(120):
            while True:
                maps = [_owners(s) for s in instances]
                if all(s.state is State.RUNNING for s in instances) and maps[0] == maps[1] \
                        and len(maps[0]) == 4 and set(maps[0].values()) == hosts:
                    break
                await anyio.sleep(0.2)
        owners = maps[0]
        # Every key from either instance: the value is the count, served by the key's owner.
        with anyio.fail_after(120):
            for word, count in sorted(EXPECTED.items()):
                for port in ports:
                    while True:
                        status, body = await get_json("127.0.0.1", port, f"/stores/counts/keys/{word}")
                        if status == 200 and body["value"] == count:
                            break
                        await anyio.sleep(0.2)
                    meta = instances[ports.index(port)].query_metadata_for_key("counts", word, Serdes.String())
                    assert meta.active_host == owners[meta.partition], (word, meta)
                    assert body["served_by"] == str(meta.active_host), (word, body, meta)
        # The metadata names the host whose own copy holds the key (asked locally, no forwarding).
        for word, count in sorted(EXPECTED.items()):
            meta = instances[0].query_metadata_for_key("counts", word, Serdes.String())
            status, body = await get_json(meta.active_host.host, meta.active_host.port,
                                          f"/stores/counts/keys/{word}?local=true")
            assert (status, body["value"]) == (200, count), (word, status, body)
    finally:
        await _close(instances, servers)


async def _describe_offsets(bootstrap: str, group: str) -> dict[str, tuple[dict[TaskId, int], dict[TaskId, int],
                                                                           set[TaskId], set[TaskId]]]:
    """The broker's view of each member: its reported task offsets and end offsets, and the active and
    standby tasks it owns."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        node = int(await client.coordinator_lookup(CoordinationType.GROUP, group))
        response = await client.send(node, StreamsGroupDescribe(group), group=ConnectionGroup.COORDINATION)
    finally:
        await client.close()

    def tasks(entries: Any) -> set[TaskId]:
        return {TaskId(int(sub), p) for sub, parts, _ in entries or () for p in parts}

    def offsets(entries: Any) -> dict[TaskId, int]:
        return {TaskId(int(sub), p): offset for sub, p, offset, _ in entries or ()}

    (group_entry,) = response.groups
    found = {}
    for member in group_entry[7] or ():
        member_id, *_, task_offsets, task_end_offsets, assignment, _target, _classic, _tags = member
        active, standby, _warmup, _ = assignment
        found[member_id] = (offsets(task_offsets), offsets(task_end_offsets), tasks(active), tasks(standby))
    return found


async def _changelog_ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    finally:
        await consumer.stop()
    return {tp.partition: offset for tp, offset in ends.items()}


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_members_report_their_standby_task_offsets_to_the_broker(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"sg-off-in-{sfx}", f"sg-off-out-{sfx}", f"sg-off-{sfx}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    set_group_config(kafka_broker, app_id, "streams.num.standby.replicas", "1")
    set_group_config(kafka_broker, app_id, "streams.task.offset.interval.ms", "15000")  # the broker's least
    instances, servers, _ports = await _start_pair(bootstrap, tmp_path, app_id, inp, out)
    changelog = f"{app_id}-counts-changelog"
    try:
        await produce(bootstrap, inp, _input())
        # Every standby task's reported offset reaches its changelog's last record, and its end offset the
        # changelog's end (nothing else writes it now); running active tasks are not reported.
        deadline = time.monotonic() + 150
        while True:
            ends = await _changelog_ends(bootstrap, changelog, 4)
            members = await _describe_offsets(bootstrap, app_id)
            standbys = {task for *_, standby in members.values() for task in standby}
            expected = {task: (ends[task.partition] - 1, ends[task.partition]) for task in standbys}
            reported = {task: (offsets.get(task), end_offsets.get(task))
                        for offsets, end_offsets, _active, standby in members.values() for task in standby}
            actives_reported = {task for offsets, _, active, _ in members.values() for task in active & set(offsets)}
            if len(members) == 2 and len(standbys) == 4 and sum(ends.values()) > 0 and reported == expected \
                    and not actives_reported:
                break
            assert time.monotonic() < deadline, (members, ends)
            await anyio.sleep(1)
    finally:
        await _close(instances, servers)


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_the_broker_gives_stateful_tasks_to_the_member_reporting_their_state(kafka_broker: Any,
                                                                                  tmp_path: Path) -> None:
    # One instance runs the count alone and closes (its stores stay on disk, checkpointed). Then it and a
    # new instance join the empty group together. No task has a previous owner, so the broker's assignor
    # places them: a stateful task preferably on a member that reported a copy of its state (the task
    # offsets sent when joining). The first instance gets both count tasks, the new one the stateless
    # ones; placed by load alone, each would get one of each.
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"sg-sticky-in-{sfx}", f"sg-sticky-out-{sfx}", f"sg-sticky-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    set_group_config(kafka_broker, app_id, "streams.initial.rebalance.delay.ms", "8000")  # both join in time
    ports = free_ports(2)

    def instance(i: int) -> KafkaStreams:
        return KafkaStreams(counting_topology(inp, out, "counts"), {
            "application.id": app_id, "bootstrap.servers": bootstrap, **STREAMS, "commit.interval.ms": 200,
            "state.dir": str(tmp_path / str(i)), "application.server": f"127.0.0.1:{ports[i]}"})

    first = instance(0)
    await first.start()
    try:
        await produce(bootstrap, inp, _input())
        with anyio.fail_after(120):  # every count reached the store
            while True:
                # RUNNING comes with the broker's first answer, which the group's 8 s initial delay leaves
                # without tasks (as in Kafka Streams 4.4): the store is queryable once the task is here.
                if first.state is State.RUNNING and first._supervisor is not None and first._supervisor.view.assigned:
                    counts = first.store("counts")
                    assert isinstance(counts, ReadOnlyKeyValueView)
                    seen = {word: getattr(counts.get(word), "value", None) for word in EXPECTED}  # timestamped
                    if seen == EXPECTED:
                        break
                await anyio.sleep(0.2)
    finally:
        await first.close()
    again, second = instance(0), instance(1)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(again.start)
            tg.start_soon(second.start)
        with anyio.fail_after(120):
            while True:
                members = await _describe_offsets(bootstrap, app_id)
                owned = [active for _, _, active, _ in members.values()]
                if len(members) == 2 and sum(len(a) for a in owned) == 4:
                    break
                await anyio.sleep(0.5)
        by_port = await _active_by_port(bootstrap, app_id)
        assert by_port[ports[0]] == {TaskId(1, 0), TaskId(1, 1)}, by_port
        assert by_port[ports[1]] == {TaskId(0, 0), TaskId(0, 1)}, by_port
    finally:
        await again.close()
        await second.close()


async def _active_by_port(bootstrap: str, group: str) -> dict[int, set[TaskId]]:
    """Each member's active tasks as the broker describes them, by the port of its user endpoint."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        node = int(await client.coordinator_lookup(CoordinationType.GROUP, group))
        response = await client.send(node, StreamsGroupDescribe(group), group=ConnectionGroup.COORDINATION)
    finally:
        await client.close()
    (group_entry,) = response.groups
    found = {}
    for member in group_entry[7] or ():
        endpoint, assignment = member[8], member[12]
        found[endpoint[1]] = {TaskId(int(sub), p) for sub, parts, _ in assignment[0] for p in parts}
    return found


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_metadata_names_the_kafka_streams_instance_for_its_keys(kafka_broker: Any, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # A Kafka Streams 4.4.0 WordCount and a streamlet one in one streams group, each with its
    # application.server: streamlet's metadata names the Java instance for the keys of the tasks the broker
    # gave it, and streamlet itself for the others, which it answers over HTTP from its own store.
    interop = pytest.importorskip("tests.interop.kafka_streams_app", reason="the Kafka Streams interop module")
    if not interop.java_available():
        pytest.skip("needs java and mvn")
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"sg-mixed-in-{sfx}", f"sg-mixed-out-{sfx}", f"sg-mixed-{sfx}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    java_port, py_port = free_ports(2)
    java = interop.KafkaStreamsApp("wordcount", {"input": inp, "output": out}, {
        "bootstrap.servers": bootstrap, "application.id": app_id, "group.protocol": "streams",
        "commit.interval.ms": 100, "state.dir": tmp_path / "java-state",
        "application.server": f"127.0.0.1:{java_port}"}, tmp_path / "java.log")
    monkeypatch.setenv("WORDCOUNT_INPUT", inp)
    monkeypatch.setenv("WORDCOUNT_OUTPUT", out)
    from tests.integration.wordcount_app import topology

    ours = KafkaStreams(topology(), {
        "application.id": app_id, "bootstrap.servers": bootstrap, **STREAMS, "commit.interval.ms": 100,
        "default.key.serde": "String", "default.value.serde": "String", "state.dir": str(tmp_path / "py-state"),
        "application.server": f"127.0.0.1:{py_port}"})
    server = await serve(StreamsApp(ours), "127.0.0.1", py_port)
    java.start()
    try:
        await ours.start()
        await produce(bootstrap, inp, [(None, " ".join([word] * (i + 1)).encode()) for i, word in enumerate(WORDS)])
        java_host, py_host = HostInfo("127.0.0.1", java_port), HostInfo("127.0.0.1", py_port)
        counts_sub = 1  # the count's sub-topology (after the repartition)
        with anyio.fail_after(180):  # both hold count tasks, as the broker describes them and as we see them
            while True:
                by_port = await _active_by_port(bootstrap, app_id)
                java_tasks = {t.partition for t in by_port.get(java_port, set()) if t.subtopology == counts_sub}
                py_tasks = {t.partition for t in by_port.get(py_port, set()) if t.subtopology == counts_sub}
                owners = _owners(ours, "counts-store")
                if java_tasks and py_tasks and java_tasks | py_tasks == {0, 1, 2, 3} and owners == {
                        **{p: java_host for p in java_tasks}, **{p: py_host for p in py_tasks}}:
                    break
                await anyio.sleep(0.5)
        with anyio.fail_after(120):
            for i, word in enumerate(WORDS):
                meta = ours.query_metadata_for_key("counts-store", word, Serdes.String())
                assert meta.active_host == (java_host if meta.partition in java_tasks else py_host), (word, meta)
                if meta.active_host == py_host:  # ours: answered from our own store
                    while True:
                        status, body = await get_json("127.0.0.1", py_port, f"/stores/counts-store/keys/{word}")
                        if status == 200 and body["value"] == i + 1:
                            break
                        await anyio.sleep(0.2)
        assert {meta.active_host for meta in (ours.query_metadata_for_key("counts-store", w, Serdes.String())
                                              for w in WORDS)} == {java_host, py_host}
    finally:
        server.close()
        await ours.close()
        await java.close(leave_group=True)

