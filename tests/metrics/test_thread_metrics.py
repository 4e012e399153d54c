"""The values of Kafka Streams 4.x's newer thread-level metrics on a real broker: `thread-state` / `state`
(KIP-1091: the StreamThread state's ordinal and name, RUNNING once started, PENDING_SHUTDOWN then DEAD on
close), `process-records-avg/max` (records processed per loop round) and `blocked-time-ns-total` (KIP-761:
time spent awaiting Kafka, which an idle member spends nearly all its time doing)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.thread_state import ThreadState
from tests.helpers.kafka import produce, read_until
from tests.metrics.small_app import small_app

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

_THREAD = "stream-thread-metrics"


def _thread_metric(streams: KafkaStreams, name: str) -> Any:
    found = [m for m in streams.streams_metrics.metrics() if m.name.group == _THREAD and m.name.name == name]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


async def test_thread_state_process_records_and_blocked_time(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    app = await small_app(bootstrap, tmp_path, "thread")
    streams, source, sink = app.streams, app.source, app.sink
    await streams.start()
    try:
        with anyio.fail_after(60):
            while _thread_metric(streams, "thread-state").value != ThreadState.RUNNING.value:
                await anyio.sleep(0.1)
        assert _thread_metric(streams, "state").text == "RUNNING"
        state_tags = dict(_thread_metric(streams, "thread-state").name.tags)
        assert set(state_tags) == {"process-id", "thread-id"}
        history = list(streams._supervisor.thread_state.history)  # type: ignore[union-attr]
        assert history[:2] == [ThreadState.CREATED, ThreadState.STARTING]
        assert history[-2:] == [ThreadState.PARTITIONS_ASSIGNED, ThreadState.RUNNING]

        # Idle: the loop waits in its polls, so the blocked time grows about as fast as the clock.
        blocked_before, at_before = _thread_metric(streams, "blocked-time-ns-total").value, time.perf_counter_ns()
        await anyio.sleep(2)
        blocked_after, at_after = _thread_metric(streams, "blocked-time-ns-total").value, time.perf_counter_ns()
        assert 0.5 * (at_after - at_before) <= blocked_after - blocked_before <= 1.1 * (at_after - at_before)

        count = 40
        await produce(bootstrap, source, [(f"k{i}".encode(), b"v") for i in range(count)])
        await read_until(bootstrap, sink, lambda rs: len(rs) >= count, timeout=60)
        with anyio.fail_after(30):  # the round after the one the task processed in counts it
            while _thread_metric(streams, "process-records-max").value == 0:
                await anyio.sleep(0.1)
        assert _thread_metric(streams, "process-total").value == count
        most = _thread_metric(streams, "process-records-max").value
        average = _thread_metric(streams, "process-records-avg").value
        assert 1 <= most <= count
        assert 0 < average <= most
        # The rounds of the window processed `count` records in all: the average is that over the rounds.
        sampler = streams.streams_metrics.sampler
        assert average == pytest.approx(sampler.delta("processed") / sampler.delta("iterations"))
        assert sampler.delta("processed") == count
    finally:
        await streams.close()
    assert _thread_metric(streams, "thread-state").value == ThreadState.DEAD.value
    assert _thread_metric(streams, "state").text == "DEAD"
    history = list(streams._supervisor.thread_state.history)  # type: ignore[union-attr]
    assert history[-3:] == [ThreadState.RUNNING, ThreadState.PENDING_SHUTDOWN, ThreadState.DEAD]
