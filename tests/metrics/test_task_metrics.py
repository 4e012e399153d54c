"""The values of Kafka Streams 4.x's task metrics that streamlet added late, on a real broker:
`record-lateness-avg/max` (DEBUG: stream time minus the timestamp of a record taken at or behind it, 0 for
one ahead of it) from out-of-order input, and `active-process-ratio` (INFO: a task's share of the member's
processing time) with one task busy and one idle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaProducer

from streamlet.runtime.kafka_streams import KafkaStreams
from tests.integration.kafka_helpers import read_until
from tests.metrics.small_app import small_app

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
    from tests.integration.kafka_helpers import produce

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
