"""A stream joined with a versioned table on the real broker, across a restart that restores the table
from its changelog (issue 26).

The table's updates arrive out of order (older versions after newer ones); the stream's records ask for
the table as of their own times, some before every version, some between versions, some older than an
out-of-order version that arrived later. An instance reads the table and joins a first batch of stream
records, then stops; a second instance, on an empty state directory, must restore the versioned store
from its changelog (every version, not only the latest) and join a second batch. Together the two
batches must give what one uninterrupted TopologyTestDriver run of the same records gives, and the
restored versions answer HTTP queries as of a time. Run with the persistent (LevelDB) and the in-memory
versioned store.
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from streamlet import Consumed, KafkaStreams, Materialized, Produced, Serdes, Stores, StreamsBuilder, Topology
from streamlet.http import streams_app
from streamlet.testing import TopologyTestDriver
from tests.helpers.kafka import create_topics, read_until
from tests.http.served_apps import call_asgi

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

PARTITIONS = 2
HISTORY_MS = 120_000
# Recent event times: the broker expires records of an old timestamp from a non-compacted topic.
BASE = int(time.time() * 1000) - 3_600_000
BASE -= BASE % 60_000
KEYS = [f"k{i}" for i in range(6)]


def _topology(tbl: str, inp: str, out: str, in_memory: bool) -> Topology:
    factory = Stores.in_memory_versioned_key_value_store if in_memory else Stores.persistent_versioned_key_value_store
    builder = StreamsBuilder()
    table = builder.table(tbl, Consumed(Serdes.String(), Serdes.String()),
                          Materialized.as_(factory("versions", HISTORY_MS, 10_000)))
    stream = builder.stream(inp, Consumed(Serdes.String(), Serdes.String()))
    stream.left_join(table, lambda v, t: f"{v}|{t}").to(out, Produced(Serdes.String(), Serdes.String()))
    return builder.build()


def _table_updates() -> list[tuple[str, bytes | None, int]]:
    """Per key: versions at +70 s, +40 s, +10 s written in that order, then a late +25 s version and a
    deletion at +55 s; the odd keys also get a version older than all of them, last."""
    updates: list[tuple[str, bytes | None, int]] = []
    for i, key in enumerate(KEYS):
        for offset in (70_000, 40_000, 10_000, 25_000):
            updates.append((key, f"{key}@{offset // 1000}".encode(), BASE + offset + i))
    for i, key in enumerate(KEYS):
        updates.append((key, None, BASE + 55_000 + i))
        if i % 2:
            updates.append((key, f"{key}@first".encode(), BASE + 2_000 + i))
    return updates


async def _produce(bootstrap: str, topic: str, records: list[tuple[str, bytes | None, int]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    await producer.start()
    try:
        for key, value, ts in records:  # one at a time: the table's order is the point
            await (await producer.send(topic, key=key.encode(), value=value, timestamp_ms=ts))
    finally:
        await producer.stop()


def _stream_batch(times: list[int]) -> list[tuple[str, bytes | None, int]]:
    return [(key, f"s{t // 1000}".encode(), BASE + t) for t in times for key in KEYS]


FIRST = _stream_batch([80_000, 12_000, 1_000, 30_000])
SECOND = _stream_batch([45_000, 5_000, 60_000, 26_000, 90_000, 11_000])


def _expected(in_memory: bool) -> list[tuple[str, str, int]]:
    """One TopologyTestDriver run of the same records in the same order, without a restart."""
    topology = _topology("tbl", "in", "out", in_memory)
    with TopologyTestDriver(topology, {"application.id": "versioned-expected"}) as driver:
        tbl = driver.create_input_topic("tbl", Serdes.String(), Serdes.Bytes())
        inp = driver.create_input_topic("in", Serdes.String(), Serdes.Bytes())
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        for key, value, ts in _table_updates():
            tbl.pipe_input(key, value, ts)
        for key, value, ts in FIRST + SECOND:
            inp.pipe_input(key, value, ts)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def _settings(bootstrap: str, app_id: str, state_dir: Path) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
            "commit.interval.ms": 200, "default.key.serde": "String", "default.value.serde": "String"}


async def _check_http_queries(app: Any) -> None:
    """The restored versions answer over HTTP: `/stores/versions/keys/<key>?as_of=T`."""
    async def ask(path: str) -> tuple[int, Any]:
        status, body = await call_asgi(app, path)
        return status, orjson.loads(body)

    status, latest = await ask("/stores/versions/keys/k1")
    assert status == 200 and (latest["value"], latest["timestamp"], latest["valid_to"]) == (
        "k1@70", BASE + 70_001, None)
    status, older = await ask(f"/stores/versions/keys/k1?as_of={BASE + 30_000}")
    assert status == 200 and (older["value"], older["timestamp"], older["valid_to"]) == (
        "k1@25", BASE + 25_001, BASE + 40_001)
    assert (await ask(f"/stores/versions/keys/k1?as_of={BASE + 56_000}"))[0] == 404  # deleted at +55 s
    assert (await ask(f"/stores/versions/keys/k1?as_of={BASE + 2_500}"))[1]["value"] == "k1@first"
    assert (await ask(f"/stores/versions/keys/k0?as_of={BASE + 2_500}"))[0] == 404  # before its first version
    assert (await ask("/stores/versions/all"))[0] == 400  # no scans over versioned stores


@pytest.mark.parametrize("in_memory", [False, True], ids=["leveldb", "in-memory"])
async def test_versioned_join_results_survive_a_restore_from_the_changelog(
        kafka_broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, in_memory: bool) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id, tbl, inp, out = (f"vjoin-{suffix}", f"vjoin-tbl-{suffix}", f"vjoin-in-{suffix}",
                             f"vjoin-out-{suffix}")
    changelog = f"{app_id}-versions-changelog"
    await create_topics(bootstrap, {tbl: PARTITIONS, inp: PARTITIONS, out: PARTITIONS})
    topology = _topology(tbl, inp, out, in_memory)
    updates = _table_updates()
    expected = _expected(in_memory)

    async with KafkaStreams(topology, _settings(bootstrap, app_id, tmp_path / "first")):
        await _produce(bootstrap, tbl, updates)
        logged = await read_until(bootstrap, changelog, lambda rs: len(rs) >= len(updates), timeout=90)
        await _produce(bootstrap, inp, FIRST)
        await read_until(bootstrap, out, lambda rs: len(rs) >= len(FIRST), timeout=90)
    # the changelog holds every version as written: plain value bytes at the version's own timestamp
    assert sorted((r.key, r.value or b"<deleted>", r.timestamp) for r in logged) == sorted(
        (k.encode(), v or b"<deleted>", ts) for k, v, ts in updates)

    caplog.set_level(logging.INFO, logger="streamlet")
    async with KafkaStreams(topology, _settings(bootstrap, app_id, tmp_path / "second")) as streams:  # nothing local
        await _produce(bootstrap, inp, SECOND)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= len(FIRST) + len(SECOND), timeout=90)
        await _check_http_queries(streams_app(streams))
    assert "into versions" in caplog.text, caplog.text[-3000:]  # the second instance restored the store

    results = sorted((r.key.decode(), r.value.decode(), r.timestamp) for r in got)
    assert results == sorted(expected)
    as_of_before_late_version = [r for r in results if r[1].startswith("s26|")]
    assert as_of_before_late_version and all(v.endswith("@25") for _k, v, _t in as_of_before_late_version)
