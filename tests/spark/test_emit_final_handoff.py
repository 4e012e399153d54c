"""An `on_window_close` count moves between the asyncio runtime and the Spark engine (both ways, under
exactly_once_v2) with its partition time and the close time of its last emit, which both engines commit
as Kafka Streams does (`TopicPartitionMetadata`): no final result is sent twice, none is missing, and
the committed metadata is what Kafka Streams would read. Expected: one uninterrupted `TopologyTestDriver`
run of the whole input (40 final results). Before issue 23 the asyncio runtime committed no metadata
(after Spark, the final results of the first half came out again) and Spark committed its own JSON.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from streamlet.testing.local_broker import LocalKafkaBroker
from streamlet.topology import Topology
from tests.helpers.kafka import Rec, produce_records
from tests.integration.emit_final_apps import tumbling_final_counts
from tests.spark.engine_moves import (
    SECOND,
    committed_metadata,
    committed_output,
    expected_finals,
    new_move,
    topology_on,
)

pytestmark = pytest.mark.broker

def _topology(source: str, out: str) -> Topology:
    return topology_on(tumbling_final_counts, source, out)


def _records(topic: str, seconds: range, base_ms: int) -> list[Rec]:
    """One record a second, five keys taking turns (each 10 s window sees every key twice)."""
    return [Rec(topic, 0, f"k{t % 5}".encode(), f"v{t}".encode(), base_ms + t * SECOND) for t in seconds]


@pytest.mark.parametrize("first", ["asyncio", "spark"])
def test_emit_final_state_moves_between_engines(spark: Any, kafka_broker: LocalKafkaBroker, tmp_path: Path,
                                                first: str) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    move = new_move(bootstrap, tmp_path, "ef-move")
    source, out, app, base_ms = move.source, move.out, move.app, move.base_ms
    topology = _topology(source, out)
    phase1, phase2 = _records(source, range(60), base_ms), _records(source, range(60, 90), base_ms)
    expected = expected_finals(_topology(source, out), source, out, phase1 + phase2)
    assert len(expected) == len(set(expected)) == 40

    asyncio.run(produce_records(bootstrap, phase1))
    move.run_on(first, spark, topology, 25)
    meta = asyncio.run(committed_metadata(bootstrap, app, source))
    assert meta.partition_time == base_ms + 59 * SECOND
    assert meta.processor_metadata["tumbling-counts"] == base_ms + 50 * SECOND  # the close time of the last emit

    asyncio.run(produce_records(bootstrap, phase2))
    move.run_on("spark" if first == "asyncio" else "asyncio", spark, topology, 40)
    time.sleep(2)  # a final result sent twice would show up now
    assert asyncio.run(committed_output(bootstrap, out)) == expected
    meta = asyncio.run(committed_metadata(bootstrap, app, source))
    assert meta.partition_time == base_ms + 89 * SECOND
    assert meta.processor_metadata["tumbling-counts"] == base_ms + 80 * SECOND
