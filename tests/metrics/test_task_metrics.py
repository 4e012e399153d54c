"""The values of Kafka Streams 4.x's task metrics that streamlet added late, on a real broker:
`record-lateness-avg/max` (DEBUG: stream time minus the timestamp of a record taken at or behind it, 0 for
one ahead of it) from out-of-order input, `active-process-ratio` (INFO: a task's share of the member's
processing time) with one task busy and one idle, `cache-size-bytes-total` (DEBUG),
`enforced-processing-rate/total` (DEBUG: records processed once `max.task.idle.ms` ran out for an empty input
partition) from a join whose table is empty, against Kafka Streams 4.4.0's count, and
`restore-remaining-records-total` (INFO, KIP-869) read while a restarted client restores its store."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaProducer

from streamlet.runtime.kafka_streams import KafkaStreams
from tests.helpers.kafka import create_topics, produce, read_until
from tests.metrics.small_app import restarted, small_app
from tests.streams4_java import enforced_check_topology, run_check

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

_TIMESTAMPS = [1000, 5000, 2000, 6000, 5500, 6000]
"""Lateness 0, 0, 3000, 0, 500, 0: the maximum 3000, the average 3500 / 6."""


def _task_metrics(streams: KafkaStreams, name: str) -> dict[str, float]:
    return {m.name.tag("task-id") or "": m.value for m in streams.streams_metrics.metrics()
            if m.name.group == "stream-task-metrics" and m.name.name == name}


async def test_record_lateness_and_active_process_ratio(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    app = await small_app(bootstrap, tmp_path, "late", partitions=2, **{"metrics.recording.level": "DEBUG"})
    streams, source, sink = app.streams, app.source, app.sink
    await streams.start()
    try:
        with anyio.fail_after(60):
            while streams.state.name != "RUNNING":
                await anyio.sleep(0.1)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            for ts in _TIMESTAMPS:  # all to partition 0: task 0_0 is busy, task 0_1 idle
                await producer.send_and_wait(source, b"v", key=b"k", partition=0, timestamp_ms=ts)
        finally:
            await producer.stop()
        await read_until(bootstrap, sink, lambda rs: len(rs) >= len(_TIMESTAMPS), timeout=60)
        assert _task_metrics(streams, "record-lateness-max") == {"0_0": 3000.0, "0_1": 0.0}
        lateness = _task_metrics(streams, "record-lateness-avg")
        assert lateness["0_0"] == pytest.approx(3500 / len(_TIMESTAMPS))
        assert lateness["0_1"] == 0.0
        assert _task_metrics(streams, "active-process-ratio") == {"0_0": 1.0, "0_1": 0.0}
    finally:
        await streams.close()


async def test_cache_size_bytes_grows_with_cached_keys(kafka_broker: Any, tmp_path: Path) -> None:
    """cache-size-bytes-total (DEBUG): the bytes in the task's record cache, which every new key adds its key
    bytes and the per-entry overhead to (no commit empties it: the commit interval outlasts the test)."""
    from streamlet.stores.api import RecordContext
    from streamlet.stores.cache import entry_size

    bootstrap = kafka_broker.bootstrap_servers
    app = await small_app(bootstrap, tmp_path, "cache", counting=True,
                          **{"commit.interval.ms": 600_000, "metrics.recording.level": "DEBUG"})
    streams, source = app.streams, app.source
    least_per_key = entry_size(6, 0, RecordContext(0, (), None, 0, 0))  # a 6-byte key, before value and topic

    async def processed(n: int) -> float:
        with anyio.fail_after(60):
            while _task_metrics(streams, "process-total").get("0_0", 0) < n:
                await anyio.sleep(0.1)
        return _task_metrics(streams, "cache-size-bytes-total")["0_0"]

    await streams.start()
    try:
        assert _task_metrics(streams, "cache-size-bytes-total") in ({}, {"0_0": 0.0})
        await produce(bootstrap, source, [(f"key-{i:02}".encode(), b"x") for i in range(10)])
        first = await processed(10)
        assert first >= 10 * least_per_key
        await produce(bootstrap, source, [(f"key-{i:02}".encode(), b"x") for i in range(10)])  # the same keys
        assert await processed(20) == first
        await produce(bootstrap, source, [(f"key-{i:02}".encode(), b"x") for i in range(10, 30)])
        assert await processed(40) >= first + 20 * least_per_key
    finally:
        await streams.close()


async def _running(streams: KafkaStreams) -> None:
    with anyio.fail_after(60):
        while streams.state.name != "RUNNING":
            await anyio.sleep(0.05)


@pytest.mark.parametrize("idle_ms", [0, 100])
async def test_enforced_processing_counts_the_records_processed_without_the_empty_table(
        kafka_broker: Any, tmp_path: Path, idle_ms: int) -> None:
    """A stream-table join (one task reading both topics' partition 0) whose table topic stays empty: every
    stream record is processed only once the table partition, fetched to its end, had no data for
    `max.task.idle.ms` (at once with 0); Kafka Streams 4.4.0 (EnforcedProcessingCheck in tests/java/streams4)
    records enforced processing before each of them, and streamlet counts as many."""
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    orders, users = f"enforced-orders-{sfx}", f"enforced-users-{sfx}"
    java_out, our_out = f"enforced-oj-{sfx}", f"enforced-op-{sfx}"
    await create_topics(bootstrap, {orders: 1, users: 1, java_out: 1, our_out: 1})
    count = 7
    await produce(bootstrap, orders, [(f"user-{i}".encode(), f"order-{i}".encode()) for i in range(count)])
    stdin = f"{bootstrap}\nenforced-java-{sfx}\n{orders}\n{users}\n{java_out}\n{count}\n{idle_ms}\n"
    java_lines = await anyio.to_thread.run_sync(lambda: run_check("EnforcedProcessingCheck", stdin))
    java = {task: float(value) for task, value in (line.split() for line in java_lines.splitlines() if line)}

    streams = KafkaStreams(enforced_check_topology(orders, users, our_out), {
        "application.id": f"enforced-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100, "max.task.idle.ms": idle_ms, "metrics.recording.level": "DEBUG"})
    await streams.start()
    try:
        await read_until(bootstrap, our_out, lambda rs: len(rs) >= count, timeout=60)
        assert _task_metrics(streams, "enforced-processing-total") == java == {"0_0": float(count)}
        assert _task_metrics(streams, "enforced-processing-rate")["0_0"] > 0
    finally:
        await streams.close()


async def test_enforced_processing_is_not_counted_for_a_task_reading_one_partition(
        kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    settings: dict[str, Any] = {"max.task.idle.ms": 100, "metrics.recording.level": "DEBUG"}
    app = await small_app(bootstrap, tmp_path, "not-enforced", **settings)
    await app.streams.start()
    try:
        await _running(app.streams)
        await produce(bootstrap, app.source, [(b"k", b"v")] * 5)
        await read_until(bootstrap, app.sink, lambda rs: len(rs) >= 5, timeout=60)
        assert _task_metrics(app.streams, "enforced-processing-total") == {"0_0": 0.0}
    finally:
        await app.streams.close()


_KEYS = 300
"""Distinct keys counted once each, without a record cache: the changelog of "counts" gets one record per key."""


async def test_restore_remaining_records_falls_to_zero_while_a_restarted_client_restores(
        kafka_broker: Any, tmp_path: Path) -> None:
    """A count's changelog of known length, restored by a second client with an empty state directory. Its
    producer wrote one record per batch and the restore consumer fetches one batch at a time, so restoration
    takes many fetches: restore-remaining-records-total is 0 until the changelog's end is known (Kafka Streams
    records it when the restoration starts), then at most the changelog's length, is read between 0 and it
    while the task restores, never grows, and is 0 once the task runs."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    bootstrap = kafka_broker.bootstrap_servers
    settings: dict[str, Any] = {"statestore.cache.max.bytes": 0, "producer.batch.size": 1}
    first = await small_app(bootstrap, tmp_path / "first", "remaining", counting=True, **settings)
    await first.streams.start()
    try:
        await produce(bootstrap, first.source, [(f"key-{i:04}".encode(), b"x") for i in range(_KEYS)])
        await read_until(bootstrap, first.sink, lambda rs: len(rs) >= _KEYS, timeout=60)
    finally:
        await first.streams.close()
    changelog = TopicPartition(f"{first.settings['application.id']}-counts-changelog", 0)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        length = (await consumer.end_offsets([changelog]))[changelog]
    finally:
        await consumer.stop()
    assert length == _KEYS

    second = restarted(first, **{"state.dir": str(tmp_path / "second"),
                                 "restore.consumer.max.partition.fetch.bytes": 1})
    seen: list[float] = []
    await second.streams.start()
    try:
        with anyio.fail_after(120):
            while second.streams.state.name != "RUNNING":
                value = _task_metrics(second.streams, "restore-remaining-records-total").get("0_0")
                if value is not None and (not seen or value != seen[-1]):
                    seen.append(value)
                await anyio.sleep(0.005)
        assert _task_metrics(second.streams, "restore-remaining-records-total") == {"0_0": 0.0}
    finally:
        await second.streams.close()
    counted = seen[next((i for i, v in enumerate(seen) if v), len(seen)):]  # 0 until the changelog's end is known
    assert counted == sorted(counted, reverse=True), seen  # then it never grows
    assert all(0 <= v <= length for v in seen), seen
    assert any(0 < v < length for v in seen), f"never read while restoring: {seen}"
