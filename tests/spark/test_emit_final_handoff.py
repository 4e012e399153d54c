"""An `on_window_close` count moves between the asyncio runtime and the Spark engine (both ways, under
exactly_once_v2) with its partition time and the close time of its last emit, which both engines commit
as Kafka Streams does (`TopicPartitionMetadata`): no final result is sent twice, none is missing, and
the committed metadata is what Kafka Streams would read. Expected: one uninterrupted `TopologyTestDriver`
run of the whole input (40 final results). Before issue 23 the asyncio runtime committed no metadata
(after Spark, the final results of the first half came out again) and Spark committed its own JSON.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer

from streamlet.config import WINDOWED_AGGREGATION_EMIT_INTERVAL_MS
from streamlet.kafka.commit_metadata import TopicPartitionMetadata
from streamlet.kafka.fenced_offsets import fetch_stable_commits
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.serdes import Serdes
from streamlet.testing.local_broker import LocalKafkaBroker
from streamlet.testing.test_driver import TopologyTestDriver
from streamlet.topology import Topology
from tests.integration.emit_final_apps import tumbling_final_counts
from tests.spark.harness import Rec, create_topics, produce, read_all
from tests.spark.test_eos_handoff import _config, _on_spark

pytestmark = pytest.mark.broker

SECOND = 1000


def topology_on(make: Callable[[], Topology], source: str, out: str) -> Topology:
    """One of `tests.integration.emit_final_apps`' topologies on these topics (they are read from the
    environment there, so that `streamlet run` can build them too)."""
    os.environ.update(EF_INPUT=source, EF_OUTPUT=out)
    try:
        return make()
    finally:
        del os.environ["EF_INPUT"], os.environ["EF_OUTPUT"]


def _topology(source: str, out: str) -> Topology:
    return topology_on(tumbling_final_counts, source, out)


@dataclass
class Move:
    """One engine move's topics, application, config (exactly_once_v2, every final result emitted at
    once) and a base time ten minutes back, on a minute."""

    source: str
    out: str
    app: str
    config: dict[str, Any]
    base_ms: int

    def run_on(self, engine: str, spark: Any, topology: Topology, total: int) -> None:
        """Run `topology` on `engine` ("spark": a bounded backfill; "asyncio": until `out` holds `total`
        committed records), then stop it."""
        if engine == "spark":
            _on_spark(spark, topology, self.config)
        else:
            asyncio.run(_asyncio_until(topology, self.config, self.out, total))


def new_move(bootstrap: str, tmp_path: Path, prefix: str) -> Move:
    """Fresh one-partition topics and an application id for a move, with its config and base time."""
    run = uuid.uuid4().hex[:8]
    source, out, app = f"{prefix}-{run}-in", f"{prefix}-{run}-out", f"{prefix}-{run}"
    asyncio.run(create_topics(bootstrap, {source: 1, out: 1}))
    config = {**_config(app, bootstrap, tmp_path), "default.key.serde": "String", "default.value.serde": "String",
              WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0}
    base_ms = int(time.time() * 1000) - 10 * 60_000
    return Move(source, out, app, config, base_ms - base_ms % 60_000)


def _records(topic: str, seconds: range, base_ms: int) -> list[Rec]:
    """One record a second, five keys taking turns (each 10 s window sees every key twice)."""
    return [Rec(topic, 0, f"k{t % 5}".encode(), f"v{t}".encode(), base_ms + t * SECOND) for t in seconds]


def _expected(topology: Topology, source: str, out: str, records: list[Rec]) -> list[tuple[str, str]]:
    config = {"application.id": "expected", "default.key.serde": "String", "default.value.serde": "String",
              WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0}
    with TopologyTestDriver(topology, config) as driver:
        pipe = driver.create_input_topic(source, Serdes.String(), Serdes.String())
        output = driver.create_output_topic(out, Serdes.String(), Serdes.String())
        for r in records:
            pipe.pipe_input(r.key.decode(), (r.value or b"").decode(), r.timestamp)
        return [(kv.key, kv.value) for kv in output.read_key_values_to_list()]


async def _output(bootstrap: str, out: str) -> list[tuple[str, str | None]]:
    found = await read_all(bootstrap, {out: 1}, isolation_level="read_committed")
    return [(r.key.decode(), None if r.value is None else r.value.decode()) for r in found.get((out, 0), [])]


async def _asyncio_until(topology: Topology, config: dict[str, Any], out: str, records: int) -> None:
    """Run on the asyncio runtime until `out` has `records` committed records, then close it."""
    async with KafkaStreams(topology, config):
        deadline = time.monotonic() + 90
        while len(await _output(config["bootstrap.servers"], out)) < records:
            assert time.monotonic() < deadline, "the asyncio runtime did not finish"
            await asyncio.sleep(0.5)


async def _committed_metadata(bootstrap: str, app_id: str, source: str) -> TopicPartitionMetadata:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=app_id, enable_auto_commit=False)
    await consumer.start()
    try:
        found = await fetch_stable_commits(consumer, [(source, 0)], 30)
    finally:
        await consumer.stop()
    return TopicPartitionMetadata.decode(found[(source, 0)][1])


@pytest.mark.parametrize("first", ["asyncio", "spark"])
def test_emit_final_state_moves_between_engines(spark: Any, kafka_broker: LocalKafkaBroker, tmp_path: Path,
                                                first: str) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    move = new_move(bootstrap, tmp_path, "ef-move")
    source, out, app, base_ms = move.source, move.out, move.app, move.base_ms
    topology = _topology(source, out)
    phase1, phase2 = _records(source, range(60), base_ms), _records(source, range(60, 90), base_ms)
    expected = _expected(_topology(source, out), source, out, phase1 + phase2)
    assert len(expected) == len(set(expected)) == 40

    asyncio.run(produce(bootstrap, phase1))
    move.run_on(first, spark, topology, 25)
    meta = asyncio.run(_committed_metadata(bootstrap, app, source))
    assert meta.partition_time == base_ms + 59 * SECOND
    assert meta.processor_metadata["tumbling-counts"] == base_ms + 50 * SECOND  # the close time of the last emit

    asyncio.run(produce(bootstrap, phase2))
    move.run_on("spark" if first == "asyncio" else "asyncio", spark, topology, 40)
    time.sleep(2)  # a final result sent twice would show up now
    assert asyncio.run(_output(bootstrap, out)) == expected
    meta = asyncio.run(_committed_metadata(bootstrap, app, source))
    assert meta.partition_time == base_ms + 89 * SECOND
    assert meta.processor_metadata["tumbling-counts"] == base_ms + 80 * SECOND
