"""IQv2 (`KafkaStreams.query`) answers as Kafka Streams 4.4.0's for the same store contents, on the real broker.

Both applications (Iqv2Check in tests/java/streams4, and streamlet's twin in tests/queries/iqv2_cases.py) read
one input topic and fill a key-value, a timestamped key-value, a window and a versioned store; each waits until
its versioned store's position reaches the input's last offsets, then answers the same queries, streamlet both
through `KafkaStreams.query` and over HTTP (`POST /stores/{store}/query`). Values, order, failure reasons and
positions must be equal, query by query.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import PositionBound, StateQueryRequest, VersionedKeyQuery
from streamlet.http import serve, streams_app
from streamlet.http.client import post_json
from streamlet.runtime.kafka_streams import KafkaStreams, State
from tests.helpers.kafka import create_topics, producer
from tests.http.served_apps import free_ports
from tests.queries import iqv2_cases
from tests.streams4_java import run_check

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def _produce(bootstrap: str, topic: str, base: int) -> dict[int, int]:
    """The input, each record acknowledged in order; the last offset of each partition."""
    last: dict[int, int] = {}
    async with producer(bootstrap) as p:
        for partition, key, value, ts in iqv2_cases.records(base):
            sent = await (await p.send(topic, key=key.encode(), value=value.encode(), partition=partition,
                                       timestamp_ms=ts))
            last[partition] = sent.offset
    return last


async def _caught_up(streams: KafkaStreams, topic: str, last: dict[int, int]) -> None:
    """Until every partition of the versioned store (written by every record) has seen the last offsets."""
    end = iqv2_cases.Position.empty_position()
    for partition, offset in last.items():
        end.with_component(topic, partition, offset)
    request = StateQueryRequest.in_store("ver").with_query(VersionedKeyQuery.with_key("-")) \
        .with_position_bound(PositionBound.at(end))
    with anyio.fail_after(120):
        while True:
            if streams.state is State.RUNNING:
                results = streams.query(request).partition_results
                if len(results) == len(last) and all(r.is_success() for r in results.values()):
                    return
            await anyio.sleep(0.1)


async def test_iqv2_answers_equal_kafka_streams(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    topic = f"iqv2-input-{sfx}"
    await create_topics(bootstrap, {topic: 2})
    # Recent times inside one window-store segment (see iqv2_cases.SEGMENT_MS), so the broker keeps the records.
    now = int(time.time() * 1000)
    base = (now // iqv2_cases.SEGMENT_MS) * iqv2_cases.SEGMENT_MS - iqv2_cases.SEGMENT_MS + 3_600_000
    last = await _produce(bootstrap, topic, base)
    lines = iqv2_cases.query_lines(base, last)

    offsets = " ".join(f"{p}:{o}" for p, o in sorted(last.items()))
    stdin = "\n".join([bootstrap, f"iqv2-java-{sfx}", topic, str(tmp_path / "java"), offsets, *lines]) + "\n"
    java_out = await anyio.to_thread.run_sync(lambda: run_check("Iqv2Check", stdin))
    java = [json.loads(line) for line in java_out.splitlines() if line.strip()]

    streams = KafkaStreams(iqv2_cases.topology(topic), {
        "application.id": f"iqv2-py-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path / "py"),
        "commit.interval.ms": 100, "auto.offset.reset": "earliest"})
    await streams.start()
    try:
        await _caught_up(streams, topic, last)
        ours = [_ask(streams, line, topic) for line in lines]
        port = free_ports(1)[0]
        server = await serve(streams_app(streams), "127.0.0.1", port)
        try:
            over_http = []
            for line in lines:
                label, store, data = iqv2_cases.body(line, topic)
                status, answer = await post_json("127.0.0.1", port, f"/stores/{store}/query", data)
                over_http.append(iqv2_cases.from_http(label, status, answer))
        finally:
            server.close()
    finally:
        await streams.close()

    assert [j["label"] for j in java] == [o["label"] for o in ours]
    # the cases show what they are meant to: successes, each failure reason, positions behind the end
    reasons = {r.get("reason") for j in java for r in j.get("partitions", {}).values()}
    assert {"UNKNOWN_QUERY_TYPE", "NOT_UP_TO_BOUND", "NOT_PRESENT"} <= reasons
    for how, answers in (("streams.query", ours), ("POST /stores/{store}/query", over_http)):
        differ = [(theirs, mine) for theirs, mine in zip(java, answers, strict=True) if mine != theirs]
        assert not differ, how + ":\n" + "\n".join(f"java: {theirs}\nours: {mine}" for theirs, mine in differ)


def _ask(streams: KafkaStreams, line: str, topic: str) -> dict[str, Any]:
    """streamlet's answer to a query line, printed as Iqv2Check prints Java's (a raised error as the name of
    the Java exception it stands for)."""
    label, request = iqv2_cases.request(line, topic)
    try:
        result = streams.query(request)
    except NotImplementedError:
        return {"label": label, "exception": "UnsupportedOperationException"}
    return iqv2_cases.printed(label, result)
