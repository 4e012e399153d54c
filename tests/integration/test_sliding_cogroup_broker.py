"""Sliding windows with final results, and a cogroup, in the asyncio runtime on the real broker.

The processors are the ones the test driver runs (and the differential suite checks against Kafka
Streams); here they run in `KafkaStreams` against a real broker, and what reaches the output topics must
be what the driver produces for the same input: record for record for the sliding windows, and the
same updates and final sums for the cogroup (whose regrouped half comes back through a repartition
topic, so the interleaving depends on the broker). One input partition keeps the order of processing
fixed; the emit interval is 0 (as in the driver), so final results do not depend on how fast the wall
clock runs, and the cache is off so that updates do not depend on commit timing.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from streamlet import (
    Consumed,
    EmitStrategy,
    KafkaStreams,
    KeyValue,
    Produced,
    Serdes,
    SlidingWindows,
    StreamsBuilder,
    Topology,
)
from streamlet.config import WINDOWED_AGGREGATION_EMIT_INTERVAL_MS
from streamlet.testing import TopologyTestDriver
from streamlet.windowed import Windowed
from tests.helpers.kafka import create_topics, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

BASE_TS = int(time.time() * 1000) - 3_600_000  # recent: window changelogs expire records by timestamp
STRING, LONG = Serdes.String(), Serdes.Long()
DEFAULTS = {"default.key.serde": "String", "default.value.serde": "String"}  # the cogroup's store and regrouping


def _flatten(key: Windowed, value: Any) -> KeyValue:
    return KeyValue(f"{key.key}@{key.window.start - BASE_TS}/{key.window.end - BASE_TS}", value)


def topology(inp: str, sliding_out: str, cogroup_out: str) -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream(inp, Consumed(STRING, STRING))
    (stream.group_by_key()
     .windowed_by(SlidingWindows.of_time_difference_and_grace(100, 30))
     .emit_strategy(EmitStrategy.on_window_close())
     .count()
     .to_stream().map(_flatten).to(sliding_out, Produced(STRING, LONG)))
    letters = stream.group_by_key()
    lengths = stream.map_values(lambda v: str(len(v))).group_by(lambda k, v: v)
    # Sums, so that the result does not depend on how the two streams interleave (the regrouped one
    # comes back through a repartition topic: in the runtime, when depends on the broker).
    (letters.cogroup(lambda k, v, agg: str(int(agg) + len(v)))
     .cogroup(lengths, lambda k, v, agg: str(int(agg) + 100 * int(v)))
     .aggregate(lambda: "0")
     .to_stream().to(cogroup_out, Produced(STRING, STRING)))
    return builder.build()


def inputs() -> list[tuple[str, str, int]]:
    """Keys a-c, event times that go back (late records, some past the grace period) and repeat."""
    offsets = [0, 40, 90, 95, 30, 150, 151, 60, 260, 200, 100, 400, 395, 420, 10, 600, 580, 700]
    return [("abc"[i % 3], "x" * (1 + i % 4), BASE_TS + off) for i, off in enumerate(offsets)]


def expected(topo: Topology, records: list[tuple[str, str, int]], topics: tuple[str, str, str]) -> dict[str, list]:
    config = {"application.id": "expected", "statestore.cache.max.bytes": 0, **DEFAULTS}
    with TopologyTestDriver(topo, config, initial_wall_clock_time=0) as driver:
        inp = driver.create_input_topic(topics[0], STRING, STRING)
        for key, value, ts in records:
            inp.pipe_input(key, value, ts)
        outs = {topics[1]: driver.create_output_topic(topics[1], STRING, LONG),
                topics[2]: driver.create_output_topic(topics[2], STRING, STRING)}
        return {t: [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()] for t, out in outs.items()}


async def test_sliding_final_results_and_cogroup_as_in_the_driver(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topics = (f"slide-in-{suffix}", f"slide-out-{suffix}", f"cogroup-out-{suffix}")
    await create_topics(bootstrap, dict.fromkeys(topics, 1))
    records = inputs()
    want = expected(topology(*topics), records, topics)
    assert want[topics[1]] and want[topics[2]]  # both produce something to compare

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for key, value, ts in records:
            await producer.send_and_wait(topics[0], value.encode(), key=key.encode(), timestamp_ms=ts)
    finally:
        await producer.stop()

    config = {"bootstrap.servers": bootstrap, "application.id": f"slide-{suffix}", "state.dir": tmp_path / "state",
              "commit.interval.ms": 100, "statestore.cache.max.bytes": 0, WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0,
              **DEFAULTS}

    def decoded(rs: list[Any], value_serde: Any) -> list[tuple[str, Any, int]]:
        return [(r.key.decode(), value_serde.deserializer.deserialize("", r.value), r.timestamp) for r in rs]

    async with KafkaStreams(topology(*topics), config):
        sliding = await read_until(bootstrap, topics[1], lambda rs: len(rs) >= len(want[topics[1]]), timeout=90)
        cogrouped = await read_until(bootstrap, topics[2], lambda rs: len(rs) >= len(want[topics[2]]), timeout=90)
    assert decoded(sliding, LONG) == want[topics[1]]
    got = decoded(cogrouped, STRING)
    assert len(got) == len(want[topics[2]])  # one update per record of either stream
    assert {k: v for k, v, _ in got} == {k: v for k, v, _ in want[topics[2]]}  # and the same final sums
