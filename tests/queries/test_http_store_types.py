"""Every store type answers over HTTP: two `streamlet run --http` instances of one application with a
key-value, a window and a session store (one standby copy each), on the real broker. Each store's key
queries answer from either instance (forwarded to the owner), its scans gather every instance's part with
each partition read once (`stale=true` included: the standby copies must not double an entry), and
`partition=P` reads one partition. A failing route answers a JSON error instead of dropping the connection.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streamlet import KafkaStreams
from streamlet.http import StreamsApp, serve
from streamlet.http.client import get, get_json
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics
from tests.http.served_apps import free_ports
from tests.queries.helpers import BASE_TS, eventually_async, expected_counts, produce_counts
from tests.queries.query_app import WINDOW_MS, topology

pytestmark = [pytest.mark.anyio]

PARTITIONS = 4


@dataclass
class Served:
    """The two running instances' HTTP ports and what was produced: `first` in window 0, `second` in window 1
    (so every key has two sessions, a minute apart)."""

    ports: list[int]
    first: Counter[str]
    second: Counter[str]


@pytest.fixture(scope="module")
async def served(kafka_broker: Any, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    bootstrap = kafka_broker.bootstrap_servers
    tmp_path = tmp_path_factory.mktemp("store-types")
    sfx = uuid.uuid4().hex[:8]
    topic = f"http-types-in-{sfx}"
    await create_topics(bootstrap, {topic: PARTITIONS})
    ports = free_ports(2)
    settings = {"bootstrap.servers": bootstrap, "application.id": f"http-types-{sfx}", "commit.interval.ms": 100,
                "statestore.cache.max.bytes": 0, "num.standby.replicas": 1}
    apps = [AppProcess("tests.queries.query_app:all_store_types", {**settings, "state.dir": tmp_path / f"s{i}"},
                       tmp_path / f"app-{i}.log", env={"QUERY_INPUT": topic},
                       extra_args=["--http", f"127.0.0.1:{port}"]) for i, port in enumerate(ports)]
    first, second = expected_counts(20), expected_counts(20, seed=3)
    try:
        for app in apps:
            app.start()

        async def both_ready_with_standbys() -> bool:
            for port in ports:
                if (await get_json("127.0.0.1", port, "/health/ready"))[0] != 200:
                    return False
                clients = (await get_json("127.0.0.1", port, "/metadata"))[1]
                if len(clients) != 2 or not all(c["standby_state_store_names"] for c in clients):
                    return False
            return True

        await eventually_async(both_ready_with_standbys)
        await produce_counts(bootstrap, topic, first, window=0)
        await produce_counts(bootstrap, topic, second, window=1)

        async def counted() -> bool:
            """The key-value store has every record, in its active copy and in its standby copy on both
            instances (`stale=true` reads the local copy, which a standby may still be catching up), and the
            window store's too."""
            for port in ports:
                for key, n in (first + second).items():
                    for query in ("", "?stale=true"):
                        status, body = await get_json("127.0.0.1", port, f"/stores/counts/keys/{key}{query}")
                        assert status == 200 and body["value"] == n, (port, key, query, status, body)
                start = BASE_TS + WINDOW_MS  # the window store's standby copy too (window 1, still retained)
                for key, n in second.items():
                    path = f"/stores/windowed-counts/windows/{key}?from={start}&stale=true"
                    status, body = await get_json("127.0.0.1", port, path)
                    assert status == 200 and body["windows"] == [{"start": start, "value": n}], (port, status, body)
            return True

        await eventually_async(counted)
        yield Served(ports, first, second)
    finally:
        for app in apps:
            if app.proc is not None and app.proc.poll() is None:
                app.stop()


async def _items(port: int, path: str) -> list[dict[str, Any]]:
    status, body = await get_json("127.0.0.1", port, path)
    assert status == 200, (path, status, body)
    items: list[dict[str, Any]] = body["items"]
    return items


async def _check_scan_options(port: int, path: str, expected: list[tuple[Any, Any]]) -> None:
    """`path` (a scan with a query string) answers `expected` [(key, value)] with every partition read
    once, plainly, from stale copies and partition by partition."""
    def pairs(items: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
        return [(str(i["key"]), i["value"]) for i in items]

    want = sorted((str(k), v) for k, v in expected)
    assert sorted(pairs(await _items(port, path))) == want
    # Both instances hold every partition with stale=true (one copy active, one standby): still once each.
    assert sorted(pairs(await _items(port, f"{path}&stale=true"))) == want
    by_partition: list[tuple[Any, Any]] = []
    for partition in range(PARTITIONS):
        items = await _items(port, f"{path}&partition={partition}")
        assert {i["partition"] for i in items} <= {partition}
        by_partition += pairs(items)
    assert sorted(by_partition) == want  # the partitions split the store: nothing twice, nothing missing
    status, body = await get_json("127.0.0.1", port, f"{path}&partition={PARTITIONS}")
    assert status == 503 and f"partition {PARTITIONS}" in body["error"], body


@pytest.mark.broker
async def test_a_key_value_store_answers_keys_and_scans_with_stale_and_partition_options(served: Served) -> None:
    totals = served.first + served.second
    for port in served.ports:
        for key, n in totals.items():
            status, body = await get_json("127.0.0.1", port, f"/stores/counts/keys/{key}")
            assert status == 200 and body["value"] == n, body
            partition = body["partition"]
            status, body = await get_json("127.0.0.1", port, f"/stores/counts/keys/{key}?partition={partition}")
            assert status == 200 and body["value"] == n and body["partition"] == partition, body
            status, body = await get_json("127.0.0.1", port, f"/stores/counts/keys/{key}?stale=true")
            assert status == 200 and body["value"] == n, body
        await _check_scan_options(port, "/stores/counts/all?", list(totals.items()))
        await _check_scan_options(port, "/stores/counts/range?from=key-005&to=key-009",
                                  [(k, n) for k, n in totals.items() if "key-005" <= k <= "key-009"])


@pytest.mark.broker
async def test_a_window_store_answers_windows_and_scans_with_stale_and_partition_options(served: Served) -> None:
    start = BASE_TS + WINDOW_MS  # window 1: window 0 is past the store's retention (one window) by now
    for port in served.ports:
        for key, n in served.second.items():
            status, body = await get_json("127.0.0.1", port, f"/stores/windowed-counts/windows/{key}?from={start}")
            assert status == 200 and body["windows"] == [{"start": start, "value": n}], body
            status, body = await get_json("127.0.0.1", port,
                                          f"/stores/windowed-counts/windows/{key}?from={start}&stale=true")
            assert status == 200 and body["windows"] == [{"start": start, "value": n}], body
        expected = [({"key": k, "start": start, "end": start + WINDOW_MS}, n) for k, n in served.second.items()]
        await _check_scan_options(port, f"/stores/windowed-counts/windows?from={start}&to={start}", expected)
        status, body = await get_json("127.0.0.1", port, "/stores/windowed-counts/keys/key-000")
        assert status == 400 and "/windows" in body["error"], body


@pytest.mark.broker
async def test_a_session_store_answers_keys_and_scans_with_stale_and_partition_options(served: Served) -> None:
    first, second = served.first, served.second

    def sessions(key: str) -> list[dict[str, int]]:
        return [{"start": BASE_TS, "end": BASE_TS + first[key] - 1, "value": first[key]},
                {"start": BASE_TS + WINDOW_MS, "end": BASE_TS + WINDOW_MS + second[key] - 1, "value": second[key]}]

    async def every_session_everywhere() -> bool:
        for port in served.ports:
            for key in first:
                for options in ("", "?stale=true"):
                    status, body = await get_json("127.0.0.1", port, f"/stores/sessions/keys/{key}{options}")
                    assert status == 200 and body["sessions"] == sessions(key), (port, key, status, body)
        return True

    await eventually_async(every_session_everywhere)
    for port in served.ports:
        # from/to: the sessions that end at or after `from` and start at or before `to` (find_sessions).
        late = f"from={BASE_TS + WINDOW_MS}&to={BASE_TS + 2 * WINDOW_MS}"
        status, body = await get_json("127.0.0.1", port, f"/stores/sessions/keys/key-001?{late}")
        assert status == 200 and body["sessions"] == sessions("key-001")[1:], body
        status, body = await get_json("127.0.0.1", port, "/stores/sessions/keys/never-seen")
        assert status == 200 and body["sessions"] == [], body
        expected = [({"key": k, "start": s["start"], "end": s["end"]}, s["value"]) for k in first for s in sessions(k)]
        await _check_scan_options(port, "/stores/sessions/all?", expected)
        await _check_scan_options(port, "/stores/sessions/range?from=key-005&to=key-009",
                                  [(k, v) for k, v in expected if "key-005" <= k["key"] <= "key-009"])
        items = await _items(port, "/stores/sessions/all")
        assert [(i["key"]["key"], i["key"]["start"]) for i in items] == \
            sorted((i["key"]["key"], i["key"]["start"]) for i in items)
        status, body = await get_json("127.0.0.1", port, "/stores/sessions/windows/key-000")
        assert status == 400 and "/keys" in body["error"], body
        status, body = await get_json("127.0.0.1", port, "/stores/sessions/keys/key-000?timestamped=true")
        assert status == 400 and "timestamp" in body["error"], body


async def test_a_failing_route_answers_a_json_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async def failing(_parts: list[str], _query: dict[str, str]) -> tuple[int, bytes, str]:
        raise RuntimeError("the route broke")

    streams = KafkaStreams(topology(), {"bootstrap.servers": "127.0.0.1:9", "application.id": "failing-route",
                                        "state.dir": str(tmp_path)})
    server = await serve(StreamsApp(streams, extra_routes={"boom": failing}), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        status, body = await get_json("127.0.0.1", port, "/boom")
        assert status == 500 and body == {"error": "RuntimeError: the route broke"}
        status, body = await get_json("127.0.0.1", port, "/health/live")  # still serving
        assert status == 200 and body == {"state": "CREATED"}
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"NONSENSE\r\n\r\n")  # no method, target and version: a malformed request
        answer = await reader.read()
        writer.close()
        assert answer.startswith(b"HTTP/1.1 400 ") and b'{"error": "malformed request' in answer, answer
    finally:
        server.close()

    async def broken_app(_scope: Any, _receive: Any, _send: Any) -> None:
        raise KeyError("no answer at all")

    server = await serve(broken_app, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        status, content_type, raw = await get("127.0.0.1", port, "/anything")
        assert (status, content_type) == (500, "application/json") and b"no answer at all" in raw
    finally:
        server.close()
