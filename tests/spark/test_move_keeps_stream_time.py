"""Engine moves keep time (issue 23, item 3): an `on_window_close` count with grace moves between the
asyncio runtime and the Spark engine (both ways, exactly_once_v2) while its input is out of order, and
which windows are closed depends on the stream time carried across the move in Kafka Streams' commit
metadata. Records that arrive after the move within the grace of a window still open count in it; a record
later than the grace of a window already closed before the move is dropped, and no window's final result
comes twice or goes missing: the output equals one uninterrupted `TopologyTestDriver` run of the whole input.
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
from tests.integration.emit_final_apps import graced_final_counts
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
    return topology_on(graced_final_counts, source, out)


def _out_of_order(topic: str, seconds: list[int], base_ms: int) -> list[Rec]:
    """One record per entry, five keys taking turns; every sixth record is 4 s late (within the grace)."""
    records = []
    for i, t in enumerate(seconds):
        at = t - 4 if i % 6 == 5 else t
        records.append(Rec(topic, 0, f"k{i % 5}".encode(), f"v{i}".encode(), base_ms + at * SECOND))
    return records


@pytest.mark.parametrize("first", ["asyncio", "spark"])
def test_out_of_order_windows_close_on_the_stream_time_carried_across_the_move(
        spark: Any, kafka_broker: LocalKafkaBroker, tmp_path: Path, first: str) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    move = new_move(bootstrap, tmp_path, "time-move")
    source, out, app, base_ms = move.source, move.out, move.app, move.base_ms
    topology = _topology(source, out)
    phase1 = _out_of_order(source, list(range(60)), base_ms)
    # After the move: two records within the grace of [50, 60) (open: stream time 58 < 60 + 5), one too late
    # for [40, 50) (closed before the move at stream time 55), then the input goes on, out of order.
    phase2 = [Rec(source, 0, b"k1", b"late-ok-1", base_ms + 56 * SECOND),
              Rec(source, 0, b"k2", b"late-ok-2", base_ms + 58 * SECOND),
              Rec(source, 0, b"k3", b"too-late", base_ms + 47 * SECOND),
              *_out_of_order(source, list(range(60, 90)), base_ms)]
    expected = expected_finals(_topology(source, out), source, out, phase1 + phase2)
    assert len(expected) == len(set(expected))
    stream_time = max(r.timestamp for r in phase1)
    closed_before = sum(1 for key, _ in expected if int(key.rsplit("@", 1)[1].split("-")[0]) + 15_000 <= stream_time)

    asyncio.run(produce_records(bootstrap, phase1))
    move.run_on(first, spark, topology, closed_before)
    meta = asyncio.run(committed_metadata(bootstrap, app, source))
    assert meta.partition_time == stream_time
    assert "graced-counts" in meta.processor_metadata  # the store's last emit, as Kafka Streams keeps it

    asyncio.run(produce_records(bootstrap, phase2))
    move.run_on("spark" if first == "asyncio" else "asyncio", spark, topology, len(expected))
    time.sleep(2)  # a final result sent twice would show up now
    assert asyncio.run(committed_output(bootstrap, out)) == expected
