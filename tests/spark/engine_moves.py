"""An application moved between the asyncio runtime and the Spark engine, as the engine-move tests make it:
its settings, a bounded run on Spark, a run on the asyncio runtime until its output is complete, and
what it committed.

`new_move` makes a move's topics and application (exactly_once_v2, every final result emitted at once);
`Move.run_on` runs a topology on either engine; `expected_finals` is what one uninterrupted
`TopologyTestDriver` run gives.
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

from aiokafka import AIOKafkaConsumer

from streamlet.config import WINDOWED_AGGREGATION_EMIT_INTERVAL_MS
from streamlet.kafka.commit_metadata import TopicPartitionMetadata
from streamlet.kafka.fenced_offsets import fetch_stable_commits
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.serdes import Serdes
from streamlet.spark import SparkStreams
from streamlet.spark.query import Bounds
from streamlet.testing.test_driver import TopologyTestDriver
from streamlet.topology import Topology
from tests.helpers.kafka import Rec, create_kept_topics, read_all

SECOND = 1000
"""A second in milliseconds, the unit of the records' event times."""


def handoff_config(app: str, bootstrap: str, tmp_path: Path) -> dict[str, Any]:
    """An application's settings for both engines: exactly_once_v2, no record cache, commits every 100 ms,
    its state and Spark checkpoint under `tmp_path`."""
    return {"application.id": app, "bootstrap.servers": bootstrap, "processing.guarantee": "exactly_once_v2",
            "statestore.cache.max.bytes": 0, "commit.interval.ms": 100, "state.dir": str(tmp_path / app),
            "spark.checkpoint.location": str(tmp_path / f"{app}-checkpoint")}


def on_spark(spark: Any, topology: Topology, config: dict[str, Any]) -> None:
    """A bounded backfill of `topology` on the Spark engine: up to the input's end offsets, then it stops."""
    SparkStreams(topology, config, spark=spark).backfill(Bounds(bounded=True))


def topology_on(make: Callable[[], Topology], source: str, out: str) -> Topology:
    """One of `tests.integration.emit_final_apps`' topologies on these topics (they are read from the
    environment there, so that `streamlet run` can build them too)."""
    os.environ.update(EF_INPUT=source, EF_OUTPUT=out)
    try:
        return make()
    finally:
        del os.environ["EF_INPUT"], os.environ["EF_OUTPUT"]


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
            on_spark(spark, topology, self.config)
        else:
            asyncio.run(_asyncio_until(topology, self.config, self.out, total))


def new_move(bootstrap: str, tmp_path: Path, prefix: str) -> Move:
    """Fresh one-partition topics and an application id for a move, with its config and base time."""
    run = uuid.uuid4().hex[:8]
    source, out, app = f"{prefix}-{run}-in", f"{prefix}-{run}-out", f"{prefix}-{run}"
    asyncio.run(create_kept_topics(bootstrap, {source: 1, out: 1}))
    config = {**handoff_config(app, bootstrap, tmp_path), "default.key.serde": "String",
              "default.value.serde": "String", WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0}
    base_ms = int(time.time() * 1000) - 10 * 60_000
    return Move(source, out, app, config, base_ms - base_ms % 60_000)


def expected_finals(topology: Topology, source: str, out: str, records: list[Rec]) -> list[tuple[str, str]]:
    """What one uninterrupted `TopologyTestDriver` run of `records` writes to `out`, as (key, value) strings."""
    config = {"application.id": "expected", "default.key.serde": "String", "default.value.serde": "String",
              WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0}
    with TopologyTestDriver(topology, config) as driver:
        pipe = driver.create_input_topic(source, Serdes.String(), Serdes.String())
        output = driver.create_output_topic(out, Serdes.String(), Serdes.String())
        for r in records:
            pipe.pipe_input(r.key.decode(), (r.value or b"").decode(), r.timestamp)
        return [(kv.key, kv.value) for kv in output.read_key_values_to_list()]


async def committed_output(bootstrap: str, out: str) -> list[tuple[str, str | None]]:
    """The committed records of the one-partition topic `out`, as (key, value) strings."""
    found = await read_all(bootstrap, {out: 1}, isolation_level="read_committed")
    return [(r.key.decode(), None if r.value is None else r.value.decode()) for r in found.get((out, 0), [])]


async def _asyncio_until(topology: Topology, config: dict[str, Any], out: str, records: int) -> None:
    """Run on the asyncio runtime until `out` has `records` committed records, then close it."""
    async with KafkaStreams(topology, config):
        deadline = time.monotonic() + 90
        while len(await committed_output(config["bootstrap.servers"], out)) < records:
            assert time.monotonic() < deadline, "the asyncio runtime did not finish"
            await asyncio.sleep(0.5)


async def committed_metadata(bootstrap: str, app_id: str, source: str) -> TopicPartitionMetadata:
    """The commit metadata (Kafka Streams' `TopicPartitionMetadata`) `app_id` committed for partition 0 of
    `source`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=app_id, enable_auto_commit=False)
    await consumer.start()
    try:
        found = await fetch_stable_commits(consumer, [(source, 0)], 30)
    finally:
        await consumer.stop()
    return TopicPartitionMetadata.decode(found[(source, 0)][1])
