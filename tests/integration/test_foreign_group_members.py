"""A group held by members of another protocol, on the real broker: streamlet waits for them instead of
failing, joins once they are gone, and gives up (naming task.timeout.ms) only after that much time.

The other protocol's member here is a plain aiokafka consumer with the round-robin assignor, which
the broker treats exactly as a lingering Kafka Streams member (protocol `stream`): no protocol in
common, so streamlet's JoinGroup is refused with error 23. The Kafka Streams case itself is in
tests/interop.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from streamlet import KafkaStreams
from streamlet.errors import GroupHeldByOtherProtocolError
from streamlet.runtime.kafka_streams import State
from tests.helpers.kafka import create_topics, produce, read_until
from tests.integration.wordcount_app import topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

WAIT_LOGGER = "streamlet.runtime.foreign_members"


@asynccontextmanager
async def other_protocol_member(bootstrap: str, group: str, topic: str) -> AsyncIterator[AIOKafkaConsumer]:
    """A member of `group` offering only the `roundrobin` protocol, in the group until the block ends."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                partition_assignment_strategy=(RoundRobinPartitionAssignor,))
    await consumer.start()
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=200)
        yield consumer
    finally:
        await consumer.stop()  # leaves the group


async def setup(kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                **settings: Any) -> tuple[str, str, str, dict[str, Any]]:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, out = f"foreign-in-{suffix}", f"foreign-out-{suffix}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    monkeypatch.setenv("WORDCOUNT_INPUT", inp)
    monkeypatch.setenv("WORDCOUNT_OUTPUT", out)
    config = {"bootstrap.servers": bootstrap, "application.id": f"foreign-{suffix}", "state.dir": str(tmp_path),
              "processing.guarantee": "exactly_once_v2", **settings}
    return bootstrap, inp, out, config


async def test_waits_for_the_other_protocols_members_then_joins_and_processes(
        kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    bootstrap, inp, out, config = await setup(kafka_broker, tmp_path, monkeypatch)
    streams = KafkaStreams(topology(), config)
    with caplog.at_level(logging.INFO, logger=WAIT_LOGGER):
        async with other_protocol_member(bootstrap, config["application.id"], inp):
            await streams.start()
            try:
                for _ in range(100):  # until the first refusal is logged
                    if any(r.name == WAIT_LOGGER for r in caplog.records):
                        break
                    await asyncio.sleep(0.1)
                await asyncio.sleep(3.0)  # a few more refused joins: the client must stay alive through them
                assert streams.state is State.REBALANCING, streams.error
            except BaseException:
                await streams.close()
                raise
        # The other member left: streamlet joins and processes.
        try:
            await produce(bootstrap, inp, [(None, b"moved to streamlet")])
            await read_until(bootstrap, out, lambda rs: len(rs) == 3, timeout=60, isolation_level="read_committed")
            assert streams.state is State.RUNNING
        finally:
            await streams.close()
    lines = [r.getMessage() for r in caplog.records if r.name == WAIT_LOGGER]
    assert "still holds members of another protocol" in lines[0] and "protocol 'roundrobin'" in lines[0], lines
    assert len(lines) == 2 and "joined group" in lines[1], lines  # once when it began, once when it ended


async def test_gives_up_after_task_timeout_with_an_error_naming_it(
        kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bootstrap, inp, _out, config = await setup(kafka_broker, tmp_path, monkeypatch, **{"task.timeout.ms": 4000})
    streams = KafkaStreams(topology(), config)
    async with other_protocol_member(bootstrap, config["application.id"], inp):
        loop = asyncio.get_running_loop()
        began = loop.time()
        await streams.start()
        try:
            await asyncio.wait_for(streams.wait(), 60)
        finally:
            await streams.close()
        waited = loop.time() - began
    assert streams.state is State.ERROR
    assert isinstance(streams.error, GroupHeldByOtherProtocolError), streams.error
    assert "task.timeout.ms (4000 ms)" in str(streams.error) and "protocol 'roundrobin'" in str(streams.error)
    assert waited >= 4.0
