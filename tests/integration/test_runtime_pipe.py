"""The actor runtime on the real broker with Processor-API topologies (no DSL involved)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet.runtime.kafka_streams import KafkaStreams, State
from tests.helpers.kafka import create_topics, produce, read_until
from tests.integration.topologies import upper_topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def test_pipe_processes_every_record_keeps_partitioning_and_closes_cleanly(
    kafka_broker: Any, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"pipe-in-{sfx}", f"pipe-out-{sfx}"
    await create_topics(bootstrap, {inp: 3, out: 3})
    states: list[tuple[State, State]] = []
    streams = KafkaStreams(upper_topology(inp, out), {
        "application.id": f"pipe-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100,
    })
    streams.set_state_listener(lambda new, old: states.append((new, old)))
    records = [(f"k{i}".encode(), f"value-{i}".encode()) for i in range(500)]
    async with streams:
        await produce(bootstrap, inp, records)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= 500, timeout=60)
        with anyio.fail_after(20):
            while streams.metrics.get("commits", 0) == 0:
                await anyio.sleep(0.1)
        assert streams.state is State.RUNNING
    assert streams.state is State.NOT_RUNNING
    assert sorted(r.value for r in got) == sorted(v.upper() for _, v in records)
    assert all(r.headers == (("seen-by", b"upper"),) or list(r.headers) == [("seen-by", b"upper")] for r in got)
    # Same key → same partition as Java's default partitioner would choose.
    from streamlet.partitioner import default_partition

    assert all(r.partition == default_partition(r.key, 3) for r in got)
    assert (State.REBALANCING, State.CREATED) in states
    assert (State.RUNNING, State.REBALANCING) in states
    assert states[-1] == (State.NOT_RUNNING, State.PENDING_SHUTDOWN)


async def _run_with_poison(bootstrap: str, tmp_path: Path, handler: str | None) -> tuple[KafkaStreams, list[Any], str]:
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"poison-in-{sfx}", f"poison-out-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1})
    config: dict[str, Any] = {"application.id": f"poison-{sfx}", "bootstrap.servers": bootstrap,
                              "state.dir": str(tmp_path), "commit.interval.ms": 100}
    if handler:
        config["default.deserialization.exception.handler"] = handler
    streams = KafkaStreams(upper_topology(inp, out), config)
    await streams.start()
    await produce(bootstrap, inp, [(b"a", b"good-1"), (b"b", b"\xff\xfe not utf-8"), (b"c", b"good-2")])
    return streams, [], inp


async def test_undeserializable_record_stops_the_app_naming_its_coordinates(
    kafka_broker: Any, tmp_path: Path
) -> None:
    streams, _, inp = await _run_with_poison(kafka_broker.bootstrap_servers, tmp_path, None)
    try:
        with anyio.fail_after(30):
            while streams.state is not State.ERROR:
                await anyio.sleep(0.05)
        assert f"topic {inp!r} partition 0 offset 1" in str(streams.error)
    finally:
        await streams.close()


async def test_log_and_continue_skips_the_record_and_keeps_the_rest(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    streams, _, inp = await _run_with_poison(bootstrap, tmp_path, "log_and_continue")
    try:
        out = inp.replace("poison-in", "poison-out")
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= 2, timeout=30)
        assert [r.value for r in got] == [b"GOOD-1", b"GOOD-2"]
        assert streams.metrics["records-skipped"] == 1
        assert streams.state is State.RUNNING
    finally:
        await streams.close()


async def test_a_sink_topic_missing_at_start_is_waited_for_not_fatal(
    kafka_broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka Streams checks only its source topics at start-up. A sink that does not exist yet is
    created on first use by a cluster that allows it (the local broker does), as a producer's
    metadata request would; the output then goes there."""
    import logging

    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"pipe-in-{sfx}", f"pipe-late-out-{sfx}"
    await create_topics(bootstrap, {inp: 2})
    streams = KafkaStreams(upper_topology(inp, out), {
        "application.id": f"pipe-late-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100,
    })
    records = [(f"k{i}".encode(), f"value-{i}".encode()) for i in range(50)]
    with caplog.at_level(logging.INFO, logger="streamlet.runtime"):
        async with streams:
            assert streams.state in (State.REBALANCING, State.RUNNING)
            await produce(bootstrap, inp, records)
            got = await read_until(bootstrap, out, lambda rs: len(rs) >= 50, timeout=60)
            assert streams.state is State.RUNNING
    assert sorted(r.value for r in got) == sorted(v.upper() for _, v in records)
    assert f"sink topic(s) ['{out}'] do not exist yet" in caplog.text
    assert f"sink topic(s) ['{out}'] exist now" in caplog.text
