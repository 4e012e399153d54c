"""Committed offsets as Kafka Streams commits them: a caught-up application's consumer lag reads 0.

Kafka Streams commits, for a partition whose records it has all processed, the main consumer's position,
which has moved past the transaction markers that follow the last record (`StreamTask.
committableOffsetsAndMetadata`). Committing "last processed offset + 1" instead leaves the group's committed
offsets below the log end on every transactional topic (the repartition topics under exactly-once, an input
written by a transactional producer) by the markers after it: lag dashboards, alerts and lag-based
autoscalers then never see the application caught up.

Each case runs a counting application (through a repartition topic) on the real broker, feeds it input in
transactions, waits for its output to be complete, and reads the group's lag with Kafka's admin API
(OffsetFetch, as `kafka-consumer-groups --describe` does): 0 on every input and repartition partition by the
next commits.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streamlet import KafkaStreams, State
from streamlet.kafka.client_settings import stop_client
from tests.helpers.kafka import create_topics, read_until, transactional_producer
from tests.integration.topologies import STREAMS, counting_topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

PARTITIONS = 2
VALUES = [f"v{i}" for i in range(13)]
LAG_WAIT_S = 30.0
"""How long the group may take to commit its way to the log end once the output is complete: a few commit
intervals (200 ms here) and the fetches that take the consumer past the last markers."""


async def _produce_in_transactions(bootstrap: str, topic: str, batches: list[list[tuple[bytes, bytes]]]) -> None:
    """Each batch in a transaction of its own, as an upstream exactly-once application writes: its input
    partitions end with transaction markers."""
    producer = await transactional_producer(bootstrap, "lag-input")
    try:
        for batch in batches:
            async with producer.transaction():
                for key, value in batch:
                    await producer.send(topic, value, key=key)
    finally:
        await producer.stop()


async def _lag(bootstrap: str, group: str, partitions: list[TopicPartition]) -> dict[str, tuple[int | None, int, int]]:
    """Per partition ("topic-partition"): the group's committed offset (None: none), the log end offset, and how
    many records (data, not markers) a read_uncommitted read finds between the two."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        committed = {tp: meta.offset for tp, meta in (await admin.list_consumer_group_offsets(group)).items()}
    finally:
        await admin.close()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    await consumer.start()
    try:
        ends = await consumer.end_offsets(partitions)
        found: dict[str, tuple[int | None, int, int]] = {}
        for tp in partitions:
            offset = committed.get(tp)
            found[f"{tp.topic}-{tp.partition}"] = (offset, ends[tp], await _records_between(consumer, tp, offset,
                                                                                            ends[tp]))
        return found
    finally:
        await stop_client(consumer)


async def _records_between(consumer: Any, tp: TopicPartition, start: int | None, end: int) -> int:
    """The data records in [start, end) of `tp` (0 when start is None or at the end)."""
    if start is None or start >= end:
        return 0
    consumer.assign([tp])
    consumer.seek(tp, start)
    count = 0
    with anyio.fail_after(30):
        while await consumer.position(tp) < end:
            for records in (await consumer.getmany(tp, timeout_ms=500)).values():
                count += sum(1 for r in records if r.offset < end)
    return count


def _latest_counts(records: list[Any]) -> dict[str, int]:
    return {r.key.decode(): int.from_bytes(r.value, "big", signed=True) for r in records}


async def _feed(bootstrap: str, inp: str, out: str, batches: list[list[tuple[bytes, bytes]]],
                done: Callable[[dict[str, int]], bool]) -> None:
    """Produce `batches` to `inp`, then wait until the latest counts read from `out` satisfy `done`."""
    await _produce_in_transactions(bootstrap, inp, batches)
    await read_until(bootstrap, out, lambda rs: done(_latest_counts(rs)), isolation_level="read_committed")


async def _running(streams: KafkaStreams) -> None:
    """Wait until `streams` runs tasks the group assigned it (a streams group waits out its delays first)."""
    with anyio.fail_after(90):
        while streams.state is not State.RUNNING or not (streams._supervisor and streams._supervisor.view.assigned):
            await anyio.sleep(0.1)


async def _assert_no_lag(bootstrap: str, app_id: str, inp: str) -> None:
    """The group's committed offsets reach the log end of every input and repartition partition within
    `LAG_WAIT_S`, with no data record left unprocessed."""
    topics = (inp, f"{app_id}-counts-repartition")
    partitions = [TopicPartition(topic, p) for topic in topics for p in range(PARTITIONS)]
    deadline = time.monotonic() + LAG_WAIT_S
    while True:
        lag = await _lag(bootstrap, app_id, partitions)
        if all(committed == end for committed, end, _ in lag.values()) or time.monotonic() > deadline:
            break
        await anyio.sleep(0.5)
    report = {tp: f"committed {committed}, end {end}, lag {None if committed is None else end - committed} "
                  f"({data} data records in between)" for tp, (committed, end, data) in lag.items()}
    assert all(data == 0 for _, _, data in lag.values()), report  # everything was processed
    assert all(committed == end for committed, end, _ in lag.values()), report


def _input() -> tuple[list[list[tuple[bytes, bytes]]], Counter[str]]:
    """Four transactions of 150 records each, and the count per value they make."""
    batches = [[(f"k{b}-{i}".encode(), VALUES[(b * 7 + i) % len(VALUES)].encode()) for i in range(150)]
               for b in range(4)]
    return batches, Counter(value.decode() for batch in batches for _, value in batch)


async def _topics(bootstrap: str) -> tuple[str, str, str]:
    """Fresh input and output topics, and an application id, for one test."""
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"lag-in-{sfx}", f"lag-out-{sfx}", f"lag-{sfx}"
    await create_topics(bootstrap, {inp: PARTITIONS, out: PARTITIONS})
    return inp, out, app_id


@pytest.mark.parametrize(("guarantee", "protocol"), [
    pytest.param("exactly_once_v2", "classic", id="eos-classic-group"),
    pytest.param("exactly_once_v2", "streams", id="eos-streams-group"),
    pytest.param("at_least_once", "classic", id="alos-classic-group"),
])
async def test_a_caught_up_application_has_no_lag(kafka_broker: Any, tmp_path: Path, request: pytest.FixtureRequest,
                                                  guarantee: str, protocol: str) -> None:
    if protocol == "streams":
        request.getfixturevalue("streams_groups")  # skips on a broker without streams groups
    bootstrap = kafka_broker.bootstrap_servers
    inp, out, app_id = await _topics(bootstrap)
    config = {"application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": str(tmp_path / "state"),
              "processing.guarantee": guarantee, "commit.interval.ms": 200, **(STREAMS if protocol == "streams"
                                                                                else {})}
    batches, expected = _input()
    streams = KafkaStreams(counting_topology(inp, out, "counts"), config)
    try:
        await streams.start()
        await _running(streams)
        await _feed(bootstrap, inp, out, batches[:2], lambda counts: sum(counts.values()) >= 300)
        await _feed(bootstrap, inp, out, batches[2:], lambda counts: counts == dict(expected))
        await _assert_no_lag(bootstrap, app_id, inp)
        assert streams.state is State.RUNNING, streams.error
    finally:
        await streams.close()


async def test_no_lag_after_tasks_moved_between_instances(kafka_broker: Any, tmp_path: Path) -> None:
    # Exactly-once, classic group: a second instance joins (the revocation commits, tasks move), then
    # leaves again (its clean close commits once more); no commit goes back below the markers.
    bootstrap = kafka_broker.bootstrap_servers
    inp, out, app_id = await _topics(bootstrap)
    config = {"application.id": app_id, "bootstrap.servers": bootstrap, "processing.guarantee": "exactly_once_v2",
              "commit.interval.ms": 200}
    batches, expected = _input()
    first = KafkaStreams(counting_topology(inp, out, "counts"), {**config, "state.dir": str(tmp_path / "a")})
    second = KafkaStreams(counting_topology(inp, out, "counts"), {**config, "state.dir": str(tmp_path / "b")})
    try:
        await first.start()
        await _running(first)
        await _feed(bootstrap, inp, out, batches[:2], lambda counts: sum(counts.values()) >= 300)
        await _assert_no_lag(bootstrap, app_id, inp)
        await second.start()
        await _running(second)
        await _feed(bootstrap, inp, out, batches[2:], lambda counts: counts == dict(expected))
        await _assert_no_lag(bootstrap, app_id, inp)
        await second.close()
        await _running(first)
        await _assert_no_lag(bootstrap, app_id, inp)
        assert first.state is State.RUNNING, first.error
    finally:
        await second.close()
        await first.close()
