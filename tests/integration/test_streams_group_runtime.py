"""`group.protocol=streams` (KIP-1071) on the real Kafka 4.4 broker: the broker assigns the tasks.

Two streamlet instances run WordCount in one streams group; under exactly_once_v2 with kill -9 among
them every word's count updates are exactly 1..n, and under at_least_once (no faults) the offsets are
committed under the member epoch (OffsetCommit v9). Each run also checks that the group the broker
holds is a streams group, not a classic consumer group.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient

from streamlet import KafkaStreams, State
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from tests.helpers.kafka import create_topics, produce, set_group_config
from tests.integration.chaos import ChaosResult, freeze_one, kill_randomly, run_chaos
from tests.integration.topologies import STREAMS, counting_topology, failing_topology


def test_the_classic_protocol_stays_the_default() -> None:
    assert not StreamsConfig({"application.id": "a"}).streams_group
    assert StreamsConfig({"application.id": "a", "group.protocol": "STREAMS"}).streams_group
    with pytest.raises(ConfigError, match="group.protocol must be classic or streams"):
        StreamsConfig({"application.id": "a", "group.protocol": "consumer"})


async def _group_types(bootstrap: str) -> dict[str, str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return {group: kind for group, kind in await admin.list_consumer_groups()}
    finally:
        await admin.close()


def _app_id(result: ChaosResult) -> str:
    for line in result.logs[0].splitlines():
        if "application.id = " in line:
            return line.split("=", 1)[1].strip()
    raise AssertionError("no application.id in the log")


async def _committed_and_ends(bootstrap: str, group: str) -> tuple[dict[Any, int], dict[Any, int]]:
    """The group's committed offsets of the input topic, and that topic's end offsets."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        committed = {tp: meta.offset for tp, meta in (await admin.list_consumer_group_offsets(group)).items()
                     if tp.topic.startswith("chaos-in-")}
    finally:
        await admin.close()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        ends = await consumer.end_offsets(list(committed))
    finally:
        await consumer.stop()
    return committed, ends


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_exactly_once_wordcount_in_a_streams_group_survives_kill_9(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    result = await run_chaos(bootstrap, tmp_path, words=60_000, disrupt=kill_randomly(5),
                             guarantee="exactly_once_v2", produce_seconds=20, seed=11, extra_settings=STREAMS)
    assert result.disruptions == 5
    assert result.check.exact, result.check.summary()
    assert result.check.updates == 60_000
    assert (await _group_types(bootstrap))[_app_id(result)] == "streams"
    for log in result.logs:  # both instances ran tasks the broker handed them
        assert "running active tasks" in log


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_at_least_once_commits_under_the_member_epoch(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    result = await run_chaos(bootstrap, tmp_path, words=20_000, disrupt=_no_fault, guarantee="at_least_once",
                             produce_seconds=10, seed=12, extra_settings=STREAMS)
    assert result.check.exact, result.check.summary()
    app_id = _app_id(result)
    assert (await _group_types(bootstrap))[app_id] == "streams"
    for log in result.logs:
        assert "offsets not committed" not in log, log[-3000:]
    # The instances committed every input partition to its end (they stopped cleanly).
    committed, ends = await _committed_and_ends(bootstrap, app_id)
    assert len(committed) == 4 and all(ends.values())
    assert committed == ends


async def _no_fault(apps: Any, rng: Any, seconds: float, log: Any) -> int:
    import anyio

    await anyio.sleep(seconds)
    return 0


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_shutdown_application_stops_every_member_of_the_streams_group(kafka_broker: Any,
                                                                            tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"sg-shutdown-in-{sfx}", f"sg-shutdown-out-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    config = {"application.id": f"sg-shutdown-{sfx}", "bootstrap.servers": bootstrap, **STREAMS,
              "uncaught.exception.handler": "shutdown_application"}
    instances = [KafkaStreams(failing_topology(inp, out, []), {**config, "state.dir": str(tmp_path / str(i))})
                 for i in range(2)]
    try:
        for s in instances:
            await s.start()
        with anyio.fail_after(90):  # both members run tasks (the broker waits out its assignment delays)
            while not all(s.state is State.RUNNING and s._supervisor is not None
                          and s._supervisor.view.assigned for s in instances):
                await anyio.sleep(0.1)
        # The instance that gets the poison record fails and asks the group to shut down (a heartbeat's
        # flag); the broker tells the other member in its heartbeat's answer, and it stops too.
        await produce(bootstrap, inp, [(b"k0", b"boom")])
        with anyio.fail_after(90):
            while not all(s.state is State.ERROR for s in instances):
                await anyio.sleep(0.1)
        errors = sorted(type(s.error).__name__ for s in instances)
        assert errors == ["ApplicationShutdownError", "RuntimeError"], [repr(s.error) for s in instances]
    finally:
        for s in instances:
            await s.close()


_STANDBY_OPENED = re.compile(r"standby task \d+_\d+ opened")


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_standby_tasks_the_broker_assigns_are_kept_warm(kafka_broker: Any, tmp_path: Path) -> None:
    app_id = f"sg-standby-{uuid.uuid4().hex[:8]}"
    set_group_config(kafka_broker, app_id, "streams.num.standby.replicas", "1")
    result = await run_chaos(kafka_broker.bootstrap_servers, tmp_path, words=40_000, disrupt=kill_randomly(3),
                             guarantee="exactly_once_v2", produce_seconds=20, seed=13,
                             extra_settings={**STREAMS, "application.id": app_id})
    assert result.check.exact, result.check.summary()
    for log in result.logs:  # each instance kept standby copies of the other's stateful tasks
        assert _STANDBY_OPENED.search(log), log[-3000:]


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_a_frozen_member_is_fenced_and_its_tasks_lost(kafka_broker: Any, tmp_path: Path) -> None:
    # A streams group's session timeout is the broker's (45 s at least): 55 s frozen moves every task
    # of the frozen member to the other one. When it wakes, the broker has dropped it: its tasks are
    # lost (closed dirty, nothing committed) or its commit is refused, never committed under a new epoch.
    result = await run_chaos(kafka_broker.bootstrap_servers, tmp_path, words=60_000, disrupt=freeze_one(4, 55),
                             guarantee="exactly_once_v2", produce_seconds=70, seed=14, extra_settings=STREAMS)
    assert result.check.exact, result.check.summary()
    zombie_log = result.logs[0]
    lost = "its tasks are lost and it rejoins" in zombie_log and "group membership lost" in zombie_log
    refused = "dirty and rejoining the group" in zombie_log and (
        "MemberFencedError" in zombie_log or "ProducerFenced" in zombie_log)
    assert lost or refused, zombie_log[-4000:]


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_an_instance_with_another_topology_is_refused_naming_the_difference(kafka_broker: Any,
                                                                                   tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"sg-topo-in-{sfx}", f"sg-topo-out-{sfx}", f"sg-topo-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    config = {"application.id": app_id, "bootstrap.servers": bootstrap, **STREAMS}
    first = KafkaStreams(counting_topology(inp, out, "counts"), {**config, "state.dir": str(tmp_path / "a")})
    renamed = KafkaStreams(counting_topology(inp, out, "renamed"), {**config, "state.dir": str(tmp_path / "b")})
    try:
        await first.start()
        with anyio.fail_after(60):
            while first.state is not State.RUNNING:
                await anyio.sleep(0.1)
        await renamed.start()
        with anyio.fail_after(30):  # refused at its first heartbeat: it fails at once, not after a timeout
            while renamed.state is not State.ERROR:
                await anyio.sleep(0.1)
        message = str(renamed.error)
        assert "differs from the one the group runs" in message, message
        assert f"{app_id}-renamed-repartition" in message and f"{app_id}-counts-repartition" in message, message
        assert first.state is State.RUNNING
    finally:
        await renamed.close()
        await first.close()
