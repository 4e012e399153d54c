"""The benchmark's windowed count and stream-table join, end to end on the real broker."""

from __future__ import annotations

import struct
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import RECENT_BASE_TS, create_topics, produce_at, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

MODULE = "examples.bench_topologies_windows_join"
BASE_TS = RECENT_BASE_TS  # recent: the takeover test's events span 5.6 hours (see RECENT_BASE_TS)
USERS = [f"u{i}" for i in range(12)]


async def join_topics(bootstrap: str, tag: str, partitions: int) -> tuple[str, tuple[str, str, str]]:
    """A fresh suffix and the join's events, users and output topics, created."""
    suffix = uuid.uuid4().hex[:8]
    topics = (f"{tag}-events-{suffix}", f"{tag}-users-{suffix}", f"{tag}-out-{suffix}")
    await create_topics(bootstrap, dict.fromkeys(topics, partitions))
    return suffix, topics


def settings(bootstrap: str, app_id: str, state_dir: Path) -> dict[str, Any]:
    """Caching off: these tests count every update (window stores are cached like Kafka Streams' now, and
    with the cache a windowed count sends only each window's latest count per commit)."""
    return {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
            "commit.interval.ms": 200, "statestore.cache.max.bytes": 0}


def events(n: int) -> list[tuple[str, bytes, int]]:
    """In event-time order (no late records): ids 0..n-1, one every 100 ms, users round-robin."""
    return [(USERS[i % len(USERS)],
             orjson.dumps({"id": i, "user": USERS[i % len(USERS)], "amount": i % 1000}), BASE_TS + i * 100)
            for i in range(n)]


async def test_windowed_count_end_to_end(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, out = f"win-events-{suffix}", f"win-counts-{suffix}"
    await create_topics(bootstrap, {inp: 3, out: 3})
    records = events(3000)  # 300 s of events: five 1-minute windows
    expected = Counter(f"{user}@{ts - ts % 60_000}" for user, _v, ts in records)
    await produce_at(bootstrap, inp, records)
    app = AppProcess(f"{MODULE}:window_count_topology", settings(bootstrap, f"win-{suffix}", tmp_path / "state"),
                     tmp_path / "app.log", env={"BENCH_INPUT": inp, "BENCH_OUTPUT": out}).start()

    def latest(rs: list[Any]) -> dict[str, int]:
        return {r.key.decode(): struct.unpack(">q", r.value)[0] for r in rs}

    try:
        got = await read_until(bootstrap, out, lambda rs: latest(rs) == dict(expected), timeout=120)
        assert latest(got) == dict(expected)
        assert len(got) == len(records)  # caching off: one update per record
    finally:
        assert app.stop() == 0, app.log_text()[-3000:]
    # The changelog is keyed as Kafka Streams keys window changelogs: key, 8-byte start, 4-byte seqnum.
    changelog = await read_until(bootstrap, f"win-{suffix}-window-counts-changelog",
                                 lambda rs: len(rs) >= len(records), timeout=30)
    last: dict[bytes, int] = {r.key: struct.unpack(">q", r.value)[0] for r in changelog}
    decoded = {f"{k[:-12].decode()}@{struct.unpack('>q', k[-12:-4])[0]}": n for k, n in last.items()
               if k[-4:] == bytes(4)}
    assert decoded == dict(expected)


async def test_windowed_counts_survive_a_second_instance_taking_tasks_over(kafka_broker: Any, tmp_path: Path) -> None:
    """A second instance joins mid-run: the tasks it takes over restore their window counts from the
    changelogs and continue them, so the final count of every window is exact. (The benchmark's
    2-worker window_count once came out wrong here, because its event times were years old and the
    broker expired them from the compact,delete window changelog before the takeover restored it.)"""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, out = f"take-events-{suffix}", f"take-counts-{suffix}"
    await create_topics(bootstrap, {inp: 8, out: 8})
    records = events(200_000)
    expected = Counter(f"{user}@{ts - ts % 60_000}" for user, _v, ts in records)
    await produce_at(bootstrap, inp, records)
    first = AppProcess(f"{MODULE}:window_count_topology",
                       settings(bootstrap, f"take-{suffix}", tmp_path / "state") | {"commit.interval.ms": 1000},
                       tmp_path / "app.log", env={"BENCH_INPUT": inp, "BENCH_OUTPUT": out}).start()
    second = first.clone(2)

    def latest(rs: list[Any]) -> dict[str, int]:
        return {r.key.decode(): struct.unpack(">q", r.value)[0] for r in rs}

    try:
        await read_until(bootstrap, out, lambda rs: len(rs) >= 5000, timeout=60)  # the first is under way
        second.start()
        await second.wait_for_log("restored")  # it took over tasks with state
        got = await read_until(bootstrap, out, lambda rs: latest(rs) == dict(expected), timeout=120)
        assert latest(got) == dict(expected)
    finally:
        assert first.stop() == 0, first.log_text()[-3000:]
        if second.proc is not None:
            assert second.stop() == 0, second.log_text()[-3000:]


async def test_stream_table_join_end_to_end(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, table, out = f"join-events-{suffix}", f"join-users-{suffix}", f"join-out-{suffix}"
    await create_topics(bootstrap, {inp: 3, table: 3, out: 3})
    known = USERS[:-2]  # events of the last two users find no row and are dropped by the inner join
    await produce_at(bootstrap, table, [(u, orjson.dumps({"user": u, "region": f"region-{i % 3}"}), BASE_TS - 3_600_000)
                                        for i, u in enumerate(known)])
    app = AppProcess(f"{MODULE}:join_topology", settings(bootstrap, f"join-{suffix}", tmp_path / "state"),
                     tmp_path / "app.log", env={"BENCH_INPUT": inp, "BENCH_TABLE": table, "BENCH_OUTPUT": out}).start()
    try:
        await app.wait_for_log("to RUNNING")
        records = events(1200)
        expected = {orjson.loads(v)["id"] for u, v, _ts in records if u in known}
        await produce_at(bootstrap, inp, records)

        def ids(rs: list[Any]) -> list[int]:
            return [orjson.loads(r.value)["id"] for r in rs]

        got = await read_until(bootstrap, out, lambda rs: set(ids(rs)) >= expected, timeout=120)
        assert sorted(ids(got)) == sorted(expected)  # every match exactly once, nothing else
        for r in got:
            value = orjson.loads(r.value)
            assert r.key.decode() == value["user"]
            assert value["region"] == f"region-{known.index(value['user']) % 3}"
    finally:
        assert app.stop() == 0, app.log_text()[-3000:]


async def test_join_waits_for_table_rows_already_on_the_broker(kafka_broker: Any, tmp_path: Path) -> None:
    """Table and stream are both on the broker before the app starts (the benchmark's case): the table
    rows are older, so a task must not join an event before it has fetched the table partition up to its
    end (Kafka Streams' idling rule, max.task.idle.ms = 0). Without it events are joined against a table
    still being loaded and dropped."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix, (inp, table, out) = await join_topics(bootstrap, "join2", partitions=2)
    users = [f"u{i}" for i in range(2000)]
    await produce_at(bootstrap, table, [(u, orjson.dumps({"user": u, "region": f"region-{i % 5}"}),
                                         BASE_TS - 3_600_000) for i, u in enumerate(users)])
    records = [(users[i % len(users)], orjson.dumps({"id": i, "user": users[i % len(users)], "amount": 1}),
                BASE_TS + i) for i in range(4000)]
    await produce_at(bootstrap, inp, records)
    # Small polls, so that a poll can return events before any table row of their task.
    config = {**settings(bootstrap, f"join2-{suffix}", tmp_path / "state"), "max.poll.records": 20}
    app = AppProcess(f"{MODULE}:join_topology", config,
                     tmp_path / "app.log", env={"BENCH_INPUT": inp, "BENCH_TABLE": table, "BENCH_OUTPUT": out}).start()
    try:
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= len(records), timeout=120)
        assert sorted(orjson.loads(r.value)["id"] for r in got) == list(range(len(records)))
    finally:
        assert app.stop() == 0, app.log_text()[-3000:]


async def test_a_partition_waiting_on_its_table_is_paused_not_buffered_without_bound(
        kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every event is newer than every table row, so events wait until the table partition is read to
    its end. Meanwhile the event partition is paused once its task holds `buffered.records.per.partition`
    records, and resumed once they are processed; no event is lost or repeated on the way."""
    from examples.bench_topologies_windows_join import join_topology
    from streamlet.runtime.kafka_streams import KafkaStreams

    bootstrap = kafka_broker.bootstrap_servers
    suffix, (inp, table, out) = await join_topics(bootstrap, "join3", partitions=1)
    users = [f"u{i}" for i in range(20_000)]
    await produce_at(bootstrap, table, [(u, orjson.dumps({"user": u, "region": f"region-{i % 5}"}),
                                         BASE_TS - 3_600_000 + i) for i, u in enumerate(users)])
    records = [(users[i * 7], orjson.dumps({"id": i, "user": users[i * 7], "amount": 1}), BASE_TS + i)
               for i in range(2000)]
    await produce_at(bootstrap, inp, records)
    for name, topic in (("BENCH_INPUT", inp), ("BENCH_TABLE", table), ("BENCH_OUTPUT", out)):
        monkeypatch.setenv(name, topic)
    streams = KafkaStreams(join_topology(), {**settings(bootstrap, f"join3-{suffix}", tmp_path / "state"),
                                             "max.poll.records": 500, "buffered.records.per.partition": 100})
    async with streams:
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= len(records), timeout=120)
        pauses = streams.metrics["partitions-paused-for-full-queue"]
    assert sorted(orjson.loads(r.value)["id"] for r in got) == list(range(len(records)))
    assert pauses >= 1
