"""An in-memory stream-stream join on the real broker restores its window stores from their changelogs.

One side's store comes from `StreamJoined(this_store_supplier=Stores.in_memory_window_store(...))`, the
other's and the outer join's shared store from the application's
`dsl.store.suppliers.class=...InMemoryDslStoreSuppliers`: nothing is on disk. The first instance takes
the left records (and some right ones) and closes; a second instance on the same state directory has
only the changelogs to rebuild the stores from, and the right records it then takes must meet the left
records of the first run: the output, record for record, is what one uninterrupted TopologyTestDriver
run gives.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet import Consumed, JoinWindows, KafkaStreams, Produced, Serdes, Stores, StreamJoined, StreamsBuilder
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology
from tests.helpers.driver import driver_output_in_two_phases
from tests.helpers.kafka import create_topics, decoded, produce_in_order, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

IN_MEMORY = "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers"
PARTITIONS = 2
DIFF_MS, GRACE_MS = 60_000, 600_000
BASE = int(time.time() * 1000) - 3_600_000  # recent: the broker keeps records of recent timestamps
KEYS = [f"k{i}" for i in range(4)]
S = Serdes.String()
Records = list[tuple[str, str, int]]
LEFT = [(key, f"l{s}", BASE + s * 1000) for s in (0, 20, 40) for key in KEYS]
RIGHT_FIRST = [(key, f"r{s}", BASE + s * 1000) for s in (10,) for key in KEYS]
RIGHT_SECOND = [(key, f"r{s}", BASE + s * 1000) for s in (30, 50) for key in KEYS]


def _topology(left: str, right: str, out: str) -> Topology:
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_and_grace(DIFF_MS, GRACE_MS)
    mine = Stores.in_memory_window_store("left-side", windows.size() + GRACE_MS, windows.size(),
                                         retain_duplicates=True)
    builder.stream(left, Consumed(S, S)).outer_join(
        builder.stream(right, Consumed(S, S)), lambda a, b: f"{a}+{b}", windows,
        StreamJoined(S, S, S, store_name="pairs", this_store_supplier=mine)).to(out, Produced(S, S))
    return builder.build()


def _expected() -> tuple[Records, Records]:
    """One TopologyTestDriver run without a restart: what the first batch gives, and everything."""
    config = {"application.id": "in-memory-join-expected", "dsl.store.suppliers.class": IN_MEMORY}
    with TopologyTestDriver(_topology("left", "right", "out"), config) as driver:
        left, right = driver.create_input_topic("left", S, S), driver.create_input_topic("right", S, S)
        return driver_output_in_two_phases(driver.create_output_topic("out", S, S),
                                           [(left, LEFT), (right, RIGHT_FIRST)], [(right, RIGHT_SECOND)])



def _settings(bootstrap: str, app_id: str, state_dir: Path) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
            "commit.interval.ms": 200, "dsl.store.suppliers.class": IN_MEMORY}



async def test_in_memory_join_stores_restore_from_their_changelogs(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    app_id, left, right, out = f"memjoin-{suffix}", f"memjoin-l-{suffix}", f"memjoin-r-{suffix}", f"memjoin-o-{suffix}"
    await create_topics(bootstrap, {left: PARTITIONS, right: PARTITIONS, out: PARTITIONS})
    topology = _topology(left, right, out)
    first, everything = _expected()
    state_dir = tmp_path / "state"

    async with KafkaStreams(topology, _settings(bootstrap, app_id, state_dir)) as streams:
        assert {name: streams.topology.store_builders[name].build().persistent
                for name in streams.topology.store_builders} == {
            "left-side": False, "pairs-outer-other-join-store": False, "left-side-outer-shared-join-store": False}
        await produce_in_order(bootstrap, left, LEFT)
        await produce_in_order(bootstrap, right, RIGHT_FIRST)
        got_first = await read_until(bootstrap, out, lambda rs: len(rs) >= len(first), timeout=90)
        await read_until(bootstrap, f"{app_id}-left-side-changelog", lambda rs: len(rs) >= len(LEFT), timeout=90)
    assert decoded(got_first) == sorted(first)
    assert not any(state_dir.rglob("*.ldb")) and not any(state_dir.rglob("*.log"))  # nothing kept on disk

    async with KafkaStreams(topology, _settings(bootstrap, app_id, state_dir)):  # only the changelogs remain
        await produce_in_order(bootstrap, right, RIGHT_SECOND)
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= len(everything), timeout=90)
    results = decoded(got)
    assert results == sorted(everything)  # each record once, joined as without the restart
    assert any(v.startswith("l0+r30") for _k, v, _t in results)  # a left record of the first run was restored
