"""Where source partitions without a committed offset start (KIP-1106's `AutoOffsetReset`), on a real broker:
`auto.offset.reset=by_duration:PT1H` skips records older than an hour, a topic's own policy
(`Consumed(offset_reset=...)`) wins over the application's, and `none` fails the instance with
`NoOffsetResetPolicyError` instead of picking a position."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaProducer

from streamlet import AutoOffsetReset, Consumed, KafkaStreams, Serdes, State, StreamsBuilder, Topology
from tests.helpers.kafka import create_topics, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

S = Serdes.String()
MINUTE_MS = 60_000


async def _produce_at(bootstrap: str, topic: str, values: list[tuple[str, int]]) -> None:
    """(value, timestamp ms) records, in order, to partition 0."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for value, ts in values:
            await producer.send_and_wait(topic, value.encode(), key=b"k", partition=0, timestamp_ms=ts)
    finally:
        await producer.stop()


def _copy(sources: dict[str, Consumed], out: str) -> Topology:
    builder = StreamsBuilder()
    for topic, consumed in sources.items():
        builder.stream(topic, consumed).to(out)
    return builder.build()


def _config(bootstrap: str, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"application.id": f"reset-{uuid.uuid4().hex[:8]}", "bootstrap.servers": bootstrap,
            "state.dir": str(tmp_path), "commit.interval.ms": 100, "default.key.serde": "String",
            "default.value.serde": "String", **extra}


def _values(records: list[Any]) -> list[str]:
    return [r.value.decode() for r in records]


async def test_by_duration_starts_at_the_first_record_within_the_duration(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"reset-dur-in-{sfx}", f"reset-dur-out-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1})
    now = int(time.time() * 1000)
    await _produce_at(bootstrap, inp, [(f"old{i}", now - 120 * MINUTE_MS + i) for i in range(3)]
                      + [(f"new{i}", now - 10 * MINUTE_MS + i) for i in range(3)])
    config = _config(bootstrap, tmp_path, **{"auto.offset.reset": "by_duration:PT1H"})
    async with KafkaStreams(_copy({inp: Consumed(S, S)}, out), config):
        records = await read_until(bootstrap, out, lambda rs: len(rs) >= 3, timeout=60)
        await anyio.sleep(2)  # an old record processed after all would show up now
        records = await read_until(bootstrap, out, lambda rs: len(rs) >= 3, timeout=10)
    assert _values(records) == ["new0", "new1", "new2"]


async def test_a_topics_own_policy_wins_over_the_applications(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    latest, earliest, out = f"reset-l-{sfx}", f"reset-e-{sfx}", f"reset-out-{sfx}"
    await create_topics(bootstrap, {latest: 1, earliest: 1, out: 1})
    now = int(time.time() * 1000)
    await _produce_at(bootstrap, latest, [("before-latest", now)])
    await _produce_at(bootstrap, earliest, [("before-earliest", now)])
    topology = _copy({latest: Consumed(S, S, offset_reset=AutoOffsetReset.latest()),
                      earliest: Consumed(S, S)}, out)  # the application's default: earliest
    async with KafkaStreams(topology, _config(bootstrap, tmp_path)) as streams:
        await read_until(bootstrap, out, lambda rs: len(rs) >= 1, timeout=60)
        with anyio.fail_after(30):
            while streams.state is not State.RUNNING:
                await anyio.sleep(0.1)
        await _produce_at(bootstrap, latest, [("after-latest", now + 1)])
        records = await read_until(bootstrap, out, lambda rs: len(rs) >= 2, timeout=60)
    assert sorted(_values(records)) == ["after-latest", "before-earliest"]


async def test_none_fails_the_instance_on_a_partition_without_a_commit(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"reset-none-in-{sfx}", f"reset-none-out-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1})
    topology = _copy({inp: Consumed(S, S, offset_reset="none")}, out)
    streams = KafkaStreams(topology, _config(bootstrap, tmp_path))
    await streams.start()
    try:
        with anyio.fail_after(60):
            while streams.state is not State.ERROR:
                await anyio.sleep(0.2)
    finally:
        await streams.close()
    assert streams.state is State.ERROR


def test_policies_parse_kafkas_words_and_refuse_others() -> None:
    assert AutoOffsetReset.parse("by_duration:P1DT2H").duration_ms == 26 * 60 * MINUTE_MS
    assert AutoOffsetReset.parse("by_duration:PT0.5S").duration_ms == 500
    assert AutoOffsetReset.parse("LATEST") == AutoOffsetReset.latest()
    for bad in ("by_duration:1h", "by_duration:PT", "by_duration:-PT1H", "sometimes"):
        with pytest.raises(Exception, match="offset|duration|ISO"):
            AutoOffsetReset.parse(bad)
    with pytest.raises(Exception, match="offset_reset"):
        Consumed(offset_reset="sometimes")
