"""Issue 23 on the real broker: an `on_window_close` aggregation sends each window's final result once across
a restart, as Kafka Streams does (it keeps the close time of its last emit in the committed offsets'
metadata). One `streamlet run` instance gets half of the input, is stopped (a clean close, or kill -9 under
exactly_once_v2), started again on the same state directory, and gets the rest. The output must equal what
`TopologyTestDriver` writes for the whole input in one run, record for record: Kafka Streams 4.4.0 gave
40 results for the tumbling case, each window once, after a clean close and after a kill -9 alike.

Kafka Streams emits final results at most once per second of wall-clock time (an internal setting); at 0
they come out at the record that closes their window, in the driver and in the app alike, so the output
does not depend on how fast the input arrives.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from streamlet import Serdes, Topology
from streamlet.config import WINDOWED_AGGREGATION_EMIT_INTERVAL_MS
from streamlet.testing.test_driver import TopologyTestDriver
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import RECENT_BASE_TS as BASE_TS
from tests.helpers.kafka import create_topics, produce_at, read_until
from tests.integration import emit_final_apps as apps
from tests.integration.staged_failover import _topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

SECOND = 1000
Rows = list[tuple[str, str, int]]


def _tumbling_input(seconds: range) -> Rows:
    """One record a second, five keys taking turns: each 10 s window sees every key twice."""
    return [(f"k{t % 5}", f"v{t}", BASE_TS + t * SECOND) for t in seconds]


def _session_input(blocks: range) -> Rows:
    """Five users, each clicking three times a second apart in every 15 s block: one session per user and
    block, 5 s of inactivity closing it."""
    return [(f"u{u}", f"b{b}c{c}", BASE_TS + (15 * b + c) * SECOND + u * 100)
            for b in blocks for c in range(3) for u in range(5)]


async def _read_all_committed(bootstrap: str, topic: str) -> list[tuple[str, str | None]]:
    """Everything committed in `topic` (one partition) up to its last stable offset."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                isolation_level="read_committed", auto_offset_reset="earliest")
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        end = (await consumer.end_offsets([tp]))[tp]
        await consumer.seek_to_beginning(tp)
        got: list[tuple[str, str | None]] = []
        while await consumer.position(tp) < end:
            for records in (await consumer.getmany(tp, timeout_ms=500)).values():
                got += [(r.key.decode(), None if r.value is None else r.value.decode()) for r in records]
        return got
    finally:
        await consumer.stop()


async def _run_with_restart(bootstrap: str, workdir: Path, factory: Callable[[], Topology], target: str,
                            first: Rows, rest: Rows, stop: str, guarantee: str) -> tuple[list[Any], list[Any], int]:
    """(expected output, committed output, expected output after `first`)."""
    suffix = uuid.uuid4().hex[:8]
    env = {"EF_INPUT": f"ef-in-{suffix}", "EF_OUTPUT": f"ef-out-{suffix}"}
    await create_topics(bootstrap, dict.fromkeys(env.values(), 1))
    app_id = f"emit-final-{suffix}"
    common = {"application.id": app_id, "default.key.serde": "String", "default.value.serde": "String",
              WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0}
    with TopologyTestDriver(_topology(factory, env), common) as driver:
        output = driver.create_output_topic(env["EF_OUTPUT"], Serdes.String(), Serdes.String())
        pipe = driver.create_input_topic(env["EF_INPUT"], Serdes.String(), Serdes.String())
        for key, value, ts in first:
            pipe.pipe_input(key, value, ts)
        expected = [(kv.key, kv.value) for kv in output.read_key_values_to_list()]
        after_first = len(expected)
        for key, value, ts in rest:
            pipe.pipe_input(key, value, ts)
        expected += [(kv.key, kv.value) for kv in output.read_key_values_to_list()]

    settings = {**common, "bootstrap.servers": bootstrap, "processing.guarantee": guarantee,
                "statestore.cache.max.bytes": 0, "commit.interval.ms": 100, "state.dir": workdir / "state"}
    out = env["EF_OUTPUT"]
    app = AppProcess(target, settings, workdir / "app-1.log", env=env).start()
    try:
        await app.wait_for_log("to RUNNING", timeout=120)
        await produce_at(bootstrap, env["EF_INPUT"], [(k, v.encode(), ts) for k, v, ts in first])
        await read_until(bootstrap, out, lambda rs: len(rs) >= after_first, isolation_level="read_committed")
        await asyncio.sleep(1)  # the offsets of the last records (no output of their own) are committed too
        if stop == "kill":
            app.kill()
        else:
            assert app.stop() == 0
        app = AppProcess(target, settings, workdir / "app-2.log", env=env).start()
        await app.wait_for_log("to RUNNING", timeout=120)
        await produce_at(bootstrap, env["EF_INPUT"], [(k, v.encode(), ts) for k, v, ts in rest])
        await read_until(bootstrap, out, lambda rs: len(rs) >= len(expected), isolation_level="read_committed")
        await asyncio.sleep(3)  # anything extra (a final result sent twice) would show up now
        got = await _read_all_committed(bootstrap, out)
    finally:
        if app.proc is not None and app.proc.poll() is None:
            app.stop()
    return expected, got, after_first


@pytest.mark.parametrize(("stop", "guarantee"), [("clean", "exactly_once_v2"), ("clean", "at_least_once"),
                                                 ("kill", "exactly_once_v2")])
async def test_tumbling_final_results_once_across_a_restart(kafka_broker: Any, tmp_path: Path, stop: str,
                                                             guarantee: str) -> None:
    expected, got, after_first = await _run_with_restart(
        kafka_broker.bootstrap_servers, tmp_path, apps.tumbling_final_counts,
        "tests.integration.emit_final_apps:tumbling_final_counts", _tumbling_input(range(60)),
        _tumbling_input(range(60, 90)), stop, guarantee)
    assert (after_first, len(expected)) == (25, 40)  # windows [0 s, 50 s) before the stop, to [70 s, 80 s) after
    assert len(set(expected)) == 40
    assert got == expected


@pytest.mark.parametrize("stop", ["clean", "kill"])
async def test_session_final_results_once_across_a_restart(kafka_broker: Any, tmp_path: Path, stop: str) -> None:
    expected, got, after_first = await _run_with_restart(
        kafka_broker.bootstrap_servers, tmp_path, apps.session_final_counts,
        "tests.integration.emit_final_apps:session_final_counts", _session_input(range(4)),
        _session_input(range(4, 6)), stop, "exactly_once_v2")
    assert (after_first, len(expected)) == (15, 25)  # blocks 0-2 closed before the stop, 3 and 4 after
    assert got == expected
