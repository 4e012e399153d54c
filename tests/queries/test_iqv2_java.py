"""IQv2 (`KafkaStreams.query`) answers as Kafka Streams 4.4.0's for the same store contents, on the real broker.

Both applications (Iqv2Check in tests/java/streams4, and streamlet's twin in tests/queries/iqv2_cases.py) read
one input topic (some records with headers) and fill a key-value, a timestamped key-value, a timestamped
key-value with headers, a window, a versioned, a window with headers and a session with headers store; each waits until
its versioned store's position reaches the input's last offsets, then answers the same queries, streamlet both
through `KafkaStreams.query` and over HTTP (`POST /stores/{store}/query`). Values, order, failure reasons and
positions must be equal, query by query.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import (
    FailureReason,
    PositionBound,
    QueryableStoreTypes,
    RangeQuery,
    StateQueryRequest,
    StoreQueryParameters,
    VersionedKeyQuery,
)
from streamlet.errors import InvalidStateStoreError
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
                                       timestamp_ms=ts, headers=iqv2_cases.HEADERS.get(value)))
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


@dataclass
class JavaAnswers:
    """The input (in `topic`) and Kafka Streams 4.4.0's answers to the query lines over it."""

    bootstrap: str
    sfx: str
    topic: str
    base: int
    last: dict[int, int]
    lines: list[str]
    java: list[dict[str, Any]]


@pytest.fixture(scope="module")
async def java_answers(kafka_broker: Any, tmp_path_factory: pytest.TempPathFactory) -> JavaAnswers:
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
    state = tmp_path_factory.mktemp("iqv2-java")
    stdin = "\n".join([bootstrap, f"iqv2-java-{sfx}", topic, str(state), offsets, *lines]) + "\n"
    java_out = await anyio.to_thread.run_sync(lambda: run_check("Iqv2Check", stdin))
    java = [json.loads(line) for line in java_out.splitlines() if line.strip()]
    assert [j["label"] for j in java] == [line.split()[0] for line in lines]
    # the cases show what they are meant to: successes, each failure reason, positions behind the end
    reasons = {r.get("reason") for j in java for r in j.get("partitions", {}).values()}
    assert {"UNKNOWN_QUERY_TYPE", "NOT_UP_TO_BOUND", "NOT_PRESENT"} <= reasons
    return JavaAnswers(bootstrap, sfx, topic, base, last, lines, java)


def _same(how: str, java: list[dict[str, Any]], answers: list[dict[str, Any]]) -> None:
    differ = [(theirs, mine) for theirs, mine in zip(java, answers, strict=True) if mine != theirs]
    assert not differ, how + ":\n" + "\n".join(f"java: {theirs}\nours: {mine}" for theirs, mine in differ)


async def _post_all(port: int, lines: list[str], topic: str) -> list[dict[str, Any]]:
    answers = []
    for line in lines:
        label, store, data = iqv2_cases.body(line, topic)
        status, answer = await post_json("127.0.0.1", port, f"/stores/{store}/query", data)
        answers.append(iqv2_cases.from_http(label, status, answer))
    return answers


async def test_iqv2_answers_equal_kafka_streams(java_answers: JavaAnswers, tmp_path: Path) -> None:
    j = java_answers
    streams = KafkaStreams(iqv2_cases.topology(j.topic), {
        "application.id": f"iqv2-py-{j.sfx}", "bootstrap.servers": j.bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100, "auto.offset.reset": "earliest"})
    await streams.start()
    try:
        await _caught_up(streams, j.topic, j.last)
        ours = [_ask(streams, line, j.topic) for line in j.lines]
        port = free_ports(1)[0]
        server = await serve(streams_app(streams), "127.0.0.1", port)
        try:
            over_http = await _post_all(port, j.lines, j.topic)
        finally:
            server.close()
    finally:
        await streams.close()
    _same("streams.query", j.java, ours)
    _same("POST /stores/{store}/query", j.java, over_http)


async def test_two_instances_with_standbys_answer_over_http_as_kafka_streams_alone(
        java_answers: JavaAnswers, tmp_path: Path) -> None:
    """Two instances, each active for one partition and standby for the other: either one answers every
    partition over HTTP from the active copies, as Kafka Streams' one instance does; asked in-process with
    `require_active()`, its standby copy answers `NOT_ACTIVE`.

    The instances read a second copy of the input, written once both hold their tasks: a task that moved
    would restore its store from the changelog, which carries no positions (nor does Kafka Streams')."""
    j = java_answers
    topic = f"{j.topic}-again"
    await create_topics(j.bootstrap, {topic: 2})
    ports = free_ports(2)
    instances = [KafkaStreams(iqv2_cases.topology(topic), {
        "application.id": f"iqv2-two-{j.sfx}", "bootstrap.servers": j.bootstrap, "state.dir": str(tmp_path / str(i)),
        "commit.interval.ms": 100, "auto.offset.reset": "earliest", "num.standby.replicas": 1,
        "application.server": f"127.0.0.1:{port}"}) for i, port in enumerate(ports)]
    servers = []
    try:
        await asyncio.gather(*(s.start() for s in instances))
        servers = [await serve(streams_app(s), "127.0.0.1", port) for s, port in zip(instances, ports, strict=True)]
        with anyio.fail_after(120):
            while not all(_one_active_one_standby(s) for s in instances):
                await anyio.sleep(0.2)
        last = await _produce(j.bootstrap, topic, j.base)
        assert last == j.last
        end = {topic: {str(p): o for p, o in last.items()}}
        with anyio.fail_after(120):
            while True:
                status, answer = await post_json("127.0.0.1", ports[0], "/stores/ver/query", {
                    "query": {"type": "VersionedKeyQuery", "key": "-"}, "position_bound": end})
                if status == 200 and len(answer["partitions"]) == 2 \
                        and all(r["ok"] and r["role"] == "active" for r in answer["partitions"].values()):
                    break
                await anyio.sleep(0.2)
        for port in ports:
            answers = await _post_all(port, j.lines, topic)
            _same(f"POST to 127.0.0.1:{port}", j.java, json.loads(json.dumps(answers).replace(topic, j.topic)))
        for streams in instances:
            request = StateQueryRequest.in_store("kv").with_query(RangeQuery.with_no_bounds())
            roles = dict(streams.store(StoreQueryParameters.from_name_and_type(
                "kv", QueryableStoreTypes.key_value_store()).enable_stale_stores()).local_partitions())
            stale = streams.query(request).partition_results
            active_only = streams.query(request.require_active()).partition_results
            assert set(stale) == set(active_only) == {0, 1}
            assert all(r.is_success() for r in stale.values())
            for partition, role in roles.items():
                if role == "active":
                    assert active_only[partition].is_success()
                else:
                    assert active_only[partition].get_failure_reason() is FailureReason.NOT_ACTIVE
    finally:
        for server in servers:
            server.close()
        await asyncio.gather(*(s.close() for s in instances))


def _one_active_one_standby(streams: KafkaStreams) -> bool:
    if streams.state is not State.RUNNING:
        return False
    try:
        copies = streams.store(StoreQueryParameters.from_name_and_type(
            "kv", QueryableStoreTypes.key_value_store()).enable_stale_stores()).local_partitions()
    except InvalidStateStoreError:
        return False
    return sorted(role for _p, role in copies) == ["active", "standby"]


def _ask(streams: KafkaStreams, line: str, topic: str) -> dict[str, Any]:
    """streamlet's answer to a query line, printed as Iqv2Check prints Java's (a raised error as the name of
    the Java exception it stands for)."""
    label, request = iqv2_cases.request(line, topic)
    try:
        result = streams.query(request)
    except NotImplementedError:
        return {"label": label, "exception": "UnsupportedOperationException"}
    return iqv2_cases.printed(label, result)
