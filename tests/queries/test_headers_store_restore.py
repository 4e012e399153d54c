"""A store with headers rebuilt from its changelog on the real broker answers the header-returning queries as
before: the headers and timestamps travel through the changelog's record headers and timestamps."""

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
        single = second.query(StateQueryRequest.in_store("hs").with_query(
            TimestampedKeyWithHeadersQuery.with_key("d")).with_partitions({1}))
    finally:
        await second.close()
    assert after == before
    assert single.only_partition_result().get_result() == before[2]
