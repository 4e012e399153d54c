"""A store with headers rebuilt from its changelog on the real broker answers the header-returning queries as
before: the headers and timestamps travel through the changelog's record headers and timestamps. So do the window
and the session store with headers (iqv2_cases' "hw" and "hss")."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import (
    ReadOnlyRecord,
    StateQueryRequest,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
)
from streamlet.runtime.kafka_streams import KafkaStreams, State
from tests.helpers.kafka import create_topics, producer
from tests.queries import iqv2_cases

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def _all_records(streams: KafkaStreams, expected_keys: int) -> list[ReadOnlyRecord]:
    """Every partition's `TimestampedRangeWithHeadersQuery` over "hs", once the store holds `expected_keys`."""
    request = StateQueryRequest.in_store("hs").with_query(TimestampedRangeWithHeadersQuery.with_no_bounds())
    with anyio.fail_after(120):
        while True:
            if streams.state is State.RUNNING:
                results = streams.query(request).partition_results
                if len(results) == 2 and all(r.is_success() for r in results.values()):
                    found = [record for r in results.values() for record in r.get_result()]
                    if len(found) == expected_keys:
                        return sorted(found)
            await anyio.sleep(0.2)


async def _windowed_records(streams: KafkaStreams, base: int) -> list[Any]:
    """Every window of "hw" and every session of "hss" (keys a-e), as `ReadOnlyRecord`s, once each store holds the
    9 that the input's records other than DELETE and ver-only write."""
    with anyio.fail_after(120):
        while True:
            found = _windowed_now(streams, base)
            if len([r for store, r in found if store == "hw"]) == len([r for store, r in found if store == "hss"]) == 9:
                return found
            await anyio.sleep(0.2)


def _windowed_now(streams: KafkaStreams, base: int) -> list[Any]:
    windows = streams.query(StateQueryRequest.in_store("hw").with_query(
        TimestampedWindowRangeWithHeadersQuery.with_window_start_range(base - 60_000, base + 60_000)))
    found = [("hw", record) for r in windows.partition_results.values() if r.is_success()
             for record in r.get_result()]
    for key in "abcde":
        sessions = streams.query(StateQueryRequest.in_store("hss").with_query(
            TimestampedWindowRangeWithHeadersQuery.with_key(key)))
        found += [("hss", record) for r in sessions.partition_results.values() if r.is_success()
                  for record in r.get_result()]
    return sorted(found, key=repr)


async def test_restored_store_keeps_headers_and_timestamps(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    topic = f"hs-restore-{sfx}"
    await create_topics(bootstrap, {topic: 2, f"{topic}-empty": 2})
    base = 1_700_000_000_000
    async with producer(bootstrap) as p:
        for partition, key, value, ts in iqv2_cases.records(base):
            await (await p.send(topic, key=key.encode(), value=value.encode(), partition=partition, timestamp_ms=ts,
                                headers=iqv2_cases.HEADERS.get(value)))
    config = {"application.id": f"hs-restore-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
              "commit.interval.ms": 100, "auto.offset.reset": "earliest"}
    first = KafkaStreams(iqv2_cases.topology(topic), config)
    await first.start()
    try:
        before = await _all_records(first, 3)  # a, b on partition 0 (c deleted); d on 1 (e deleted)
        windowed_before = await _windowed_records(first, base)
    finally:
        await first.close()
    assert before == [ReadOnlyRecord("a", "a3", base + 25_000, (("src", b"p0"), ("trace", b"t-3"), ("none", None))),
                      ReadOnlyRecord("b", "b2", base + 26_000, (("trace", b"t-b2"),)),
                      ReadOnlyRecord("d", "d2", base + 11_000, (("src", b"p1"), ("src", b"again")))]
    first.clean_up()  # no local state, and an empty input: the stores can only come back from their changelogs
    assert not any((tmp_path / config["application.id"]).glob("*/hs/*"))
    second = KafkaStreams(iqv2_cases.topology(f"{topic}-empty"), config)
    await second.start()
    try:
        after = await _all_records(second, 3)
        windowed_after = await _windowed_records(second, base)
        single = second.query(StateQueryRequest.in_store("hs").with_query(
            TimestampedKeyWithHeadersQuery.with_key("d")).with_partitions({1}))
    finally:
        await second.close()
    assert after == before
    # one of a's sessions, with its record's headers and its end as the timestamp
    assert ("hss", ReadOnlyRecord(iqv2_cases.Windowed("a", iqv2_cases.SessionWindow(base + 20_000, base + 25_000)),
                                  "a3", base + 25_000, (("src", b"p0"), ("trace", b"t-3"), ("none", None)))) \
        in windowed_before
    assert windowed_after == windowed_before
    assert single.only_partition_result().get_result() == before[2]
