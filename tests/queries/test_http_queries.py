"""Interactive queries over HTTP: two `streamlet run --http` instances on the real broker answer every
key (count and windowed count) from either instance with the owner's value, forwarding as needed."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamlet.http.client import get_json
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics
from tests.http.served_apps import free_ports
from tests.queries.helpers import BASE_TS, eventually_async, expected_counts, produce_counts
from tests.queries.query_app import WINDOW_MS

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def _query_apps(bootstrap: str, tmp_path: Path, prefix: str, n: int,
                      settings: dict[str, Any]) -> tuple[str, list[int], list[AppProcess]]:
    """A fresh 4-partition input topic and `n` (unstarted) `streamlet run --http` instances of query_app."""
    sfx = uuid.uuid4().hex[:8]
    topic = f"{prefix}-in-{sfx}"
    await create_topics(bootstrap, {topic: 4})
    ports = free_ports(n)
    settings = {"bootstrap.servers": bootstrap, "application.id": f"{prefix}-{sfx}", "commit.interval.ms": 100,
                "statestore.cache.max.bytes": 0, **settings}
    apps = [AppProcess("tests.queries.query_app:topology", {**settings, "state.dir": tmp_path / f"s{i}"},
                       tmp_path / f"app-{i}.log", env={"QUERY_INPUT": topic},
                       extra_args=["--http", f"127.0.0.1:{port}"]) for i, port in enumerate(ports)]
    return topic, ports, apps


async def test_every_key_from_either_instance_returns_the_owners_value(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic, ports, apps = await _query_apps(bootstrap, tmp_path, "http", 2, {})
    first, second = expected_counts(30), expected_counts(30, seed=2)
    try:
        for app in apps:
            app.start()

        async def both_ready() -> bool:
            for port in ports:
                status, _ = await get_json("127.0.0.1", port, "/health/ready")
                if status != 200:
                    return False
                status, clients = await get_json("127.0.0.1", port, "/metadata")
                if len(clients) != 2:
                    return False
            return True

        await eventually_async(both_ready)
        # Two rounds: the second changes every count, so a stale or cached answer would show.
        for second_round, counts in ((False, first), (True, second)):
            # Both rounds in one window: the store keeps only windows within its retention (size +
            # grace = one window) of stream time, so a later window would expire the first one.
            await produce_counts(bootstrap, topic, counts)
            totals = first + second if second_round else first

            async def every_key_everywhere(totals: Counter[str] = totals) -> bool:
                served_by: set[str] = set()
                for port in ports:
                    for key, n in totals.items():
                        status, body = await get_json("127.0.0.1", port, f"/stores/counts/keys/{key}")
                        assert status == 200 and body["value"] == n, (port, key, status, body, n)
                        served_by.add(body["served_by"])
                        window_query = f"/stores/windowed-counts/windows/{key}?from={BASE_TS}&to={BASE_TS + WINDOW_MS}"
                        status, body = await get_json("127.0.0.1", port, window_query)
                        assert status == 200, body
                        assert body["windows"] == [{"start": BASE_TS, "value": n}], (port, key, body)
                assert served_by == {f"127.0.0.1:{p}" for p in ports}  # both instances own keys
                return True

            await eventually_async(every_key_everywhere)

        for port in ports:
            status, body = await get_json("127.0.0.1", port, "/stores/counts/all")
            assert status == 200 and {i["key"]: i["value"] for i in body["items"]} == dict(first + second)
            assert [i["key"] for i in body["items"]] == sorted(first)
            status, body = await get_json("127.0.0.1", port, "/stores/counts/range?from=key-010&to=key-014")
            assert [i["key"] for i in body["items"]] == [f"key-{i:03d}" for i in range(10, 15)]
            status, body = await get_json("127.0.0.1", port, "/stores/counts/keys/key-000?timestamped=true")
            assert body["value"]["value"] == (first + second)["key-000"] and body["value"]["timestamp"] >= BASE_TS
            status, body = await get_json("127.0.0.1", port,
                                          f"/stores/windowed-counts/windows?from={BASE_TS}&to={BASE_TS}")
            assert status == 200 and len(body["items"]) == len(first)
            assert (await get_json("127.0.0.1", port, "/stores/nope/keys/a"))[0] == 404
            assert (await get_json("127.0.0.1", port, "/stores/counts/keys/never-seen"))[0] == 404
            assert (await get_json("127.0.0.1", port, "/stores/counts/windows/key-000"))[0] == 400
            assert (await get_json("127.0.0.1", port, "/health/live"))[0] == 200
    finally:
        for app in apps:
            if app.proc is not None and app.proc.poll() is None:
                app.stop()


async def test_during_a_rebalance_http_stale_queries_read_the_standby_and_plain_ones_say_migrating(
        kafka_broker: Any, tmp_path: Path) -> None:
    """Instances A and B (one standby each), B frozen (SIGSTOP), C joins: the group waits for B until its
    session times out, and A stays REBALANCING that long. Meanwhile, over HTTP, A answers a plain query
    503 "migrating" and a stale query for each of B's keys with the count from its standby copy."""
    bootstrap = kafka_broker.bootstrap_servers
    topic, ports, (a, b, c) = await _query_apps(bootstrap, tmp_path, "http-rb", 3, {
        "num.standby.replicas": 1, "session.timeout.ms": 15000, "heartbeat.interval.ms": 1000})
    counts = expected_counts(30, seed=4)
    try:
        a.start()
        b.start()

        async def both_ready() -> bool:
            for port in ports[:2]:
                if (await get_json("127.0.0.1", port, "/health/ready"))[0] != 200:
                    return False
                if len((await get_json("127.0.0.1", port, "/metadata"))[1]) != 2:
                    return False
            return True

        await eventually_async(both_ready)
        await produce_counts(bootstrap, topic, counts)
        owners: dict[str, str] = {}

        async def a_holds_every_count() -> bool:
            for key, n in counts.items():
                status, body = await get_json("127.0.0.1", ports[0], f"/stores/counts/keys/{key}?stale=true")
                assert status == 200 and body["value"] == n, (key, status, body)
                status, body = await get_json("127.0.0.1", ports[0], f"/stores/counts/keys/{key}")
                assert status == 200, body
                owners[key] = body["served_by"]
            return True

        await eventually_async(a_holds_every_count)  # A's standby copies have caught up with B
        b_keys = [k for k, owner in owners.items() if owner == f"127.0.0.1:{ports[1]}"]
        a_keys = [k for k, owner in owners.items() if owner == f"127.0.0.1:{ports[0]}"]
        assert b_keys and a_keys
        b.pause()
        c.start()

        async def a_rebalancing() -> bool:
            return (await get_json("127.0.0.1", ports[0], "/health/ready"))[0] == 503

        await eventually_async(a_rebalancing)
        plain_status, plain = await get_json("127.0.0.1", ports[0], f"/stores/counts/keys/{a_keys[0]}")
        stale = {k: await get_json("127.0.0.1", ports[0], f"/stores/counts/keys/{k}?stale=true") for k in b_keys}
        still_rebalancing = await a_rebalancing()
    finally:
        if b.proc is not None and b.proc.poll() is None:
            b.resume()
        for app in (a, b, c):
            if app.proc is not None and app.proc.poll() is None:
                app.stop()
    assert still_rebalancing  # every answer below came while the rebalance was in progress
    assert plain_status == 503 and "migrating" in plain["error"], plain
    for key in b_keys:
        status, body = stale[key]
        assert status == 200 and body["value"] == counts[key] and body["stale"], (key, body)
        assert body["served_by"] == f"127.0.0.1:{ports[0]}"  # A's standby, not the frozen owner
