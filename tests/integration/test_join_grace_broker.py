"""A stream-table join with a grace period (KIP-923) on the real broker, across a clean restart that
leaves stream records waiting in the join's buffer.

The table gets its first versions; a first batch of stream records arrives out of order, some older
than the grace period allows (joined at once), the rest buffered, and those the stream time has passed
by the grace period joined. Then the table gets late versions, older than the buffered records but
within their grace period, and the instance closes cleanly with records still in the buffer. A second
instance on the same state directory (the LevelDB buffer reopened; an in-memory buffer restored from its
changelog) takes a second batch that moves stream time on: the buffered records must come out joined
with the late versions, each once, exactly as one uninterrupted TopologyTestDriver run gives.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet import Consumed, Joined, KafkaStreams, Materialized, Produced, Serdes, Stores, StreamsBuilder, Topology
from streamlet.testing import TopologyTestDriver
from tests.helpers.driver import driver_output_in_two_phases
from tests.helpers.kafka import create_topics, decoded, produce_in_order, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

PARTITIONS = 2
GRACE_MS = 20_000
BASE = int(time.time() * 1000) - 3_600_000  # recent: the broker keeps records of recent timestamps
BASE -= BASE % 60_000
KEYS = [f"k{i}" for i in range(4)]
S = Serdes.String()
Records = list[tuple[str, str, int]]


def _topology(tbl: str, inp: str, out: str, in_memory: bool) -> Topology:
    factory = Stores.in_memory_versioned_key_value_store if in_memory else Stores.persistent_versioned_key_value_store
    builder = StreamsBuilder()
    table = builder.table(tbl, Consumed(S, S), Materialized.as_(factory("versions", 120_000)))
    stream = builder.stream(inp, Consumed(S, S))
    stream.left_join(table, lambda v, t: f"{v}|{t}", Joined(S, S, S, name="orders", grace_period=GRACE_MS)).to(
        out, Produced(S, S))
    return builder.build()


def _rounds(label: str, seconds: list[int]) -> Records:
    """Each time for every key in turn (so both partitions' stream times move alike)."""
    return [(key, f"{label}{s}", BASE + s * 1000) for s in seconds for key in KEYS]


TABLE_FIRST = _rounds("v", [0, 30])
STREAM_FIRST = _rounds("s", [50, 10, 35, 60, 45, 38])  # 10 and 38 are late; 35 leaves at 60; 50, 60, 45 wait
TABLE_LATE = _rounds("v", [42, 55])  # after the first batch, older than the records still waiting
STREAM_SECOND = _rounds("s", [70, 100])  # 45 and 50 leave at 70, 60 and 70 at 100; 100 stays


def _expected() -> tuple[Records, Records]:
    """One TopologyTestDriver run without a restart: what the first batch gives, and everything."""
    with TopologyTestDriver(_topology("tbl", "in", "out", False), {"application.id": "grace-expected"}) as driver:
        tbl, inp = driver.create_input_topic("tbl", S, S), driver.create_input_topic("in", S, S)
        return driver_output_in_two_phases(driver.create_output_topic("out", S, S),
                                           [(tbl, TABLE_FIRST), (inp, STREAM_FIRST)],
                                           [(tbl, TABLE_LATE), (inp, STREAM_SECOND)])



def _settings(bootstrap: str, app_id: str, state_dir: Path) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
            "commit.interval.ms": 200, "default.key.serde": "String", "default.value.serde": "String"}



@pytest.mark.parametrize("in_memory", [False, True], ids=["leveldb", "in-memory"])
async def test_buffered_records_survive_a_clean_restart_and_see_late_table_updates(
        kafka_broker: Any, tmp_path: Path, in_memory: bool) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id, tbl, inp, out = f"grace-{suffix}", f"grace-tbl-{suffix}", f"grace-in-{suffix}", f"grace-out-{suffix}"
    versions_log, buffer_log = f"{app_id}-versions-changelog", f"{app_id}-orders-Buffer-changelog"
    await create_topics(bootstrap, {tbl: PARTITIONS, inp: PARTITIONS, out: PARTITIONS})
    topology = _topology(tbl, inp, out, in_memory)
    first, everything = _expected()
    buffered_first = 4 * len(KEYS)  # 50, 35, 60, 45 were put; 35 left again (a tombstone)
    state_dir = tmp_path / "state"

    async with KafkaStreams(topology, _settings(bootstrap, app_id, state_dir)):
        await produce_in_order(bootstrap, tbl, TABLE_FIRST)
        await read_until(bootstrap, versions_log, lambda rs: len(rs) >= len(TABLE_FIRST), timeout=90)
        await produce_in_order(bootstrap, inp, STREAM_FIRST)
        got_first = await read_until(bootstrap, out, lambda rs: len(rs) >= len(first), timeout=90)
        await read_until(bootstrap, buffer_log, lambda rs: len(rs) >= buffered_first + len(KEYS), timeout=90)
        await produce_in_order(bootstrap, tbl, TABLE_LATE)
        await read_until(bootstrap, versions_log, lambda rs: len(rs) >= len(TABLE_FIRST) + len(TABLE_LATE),
                         timeout=90)
    assert decoded(got_first) == sorted(first)
    assert all(not v.startswith(("s50|", "s60|", "s45|")) for _k, v, _t in first)  # still buffered at the close

    async with KafkaStreams(topology, _settings(bootstrap, app_id, state_dir)):  # the same state directory
        await produce_in_order(bootstrap, inp, STREAM_SECOND)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= len(everything), timeout=90)
    results = decoded(got)
    assert results == sorted(everything)  # each record once, joined as without the restart
    assert {v for _k, v, _t in results if v.startswith(("s45|", "s50|"))} == {"s45|v42", "s50|v42"}
    assert {v for _k, v, _t in results if v.startswith("s60|")} == {"s60|v55"}  # the late versions were seen
