"""Wall-clock punctuators run on Spark as processing-time timers, without input to drive them."""

from __future__ import annotations

import asyncio
import itertools
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet.spark import SparkStreams
from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all
from tests.spark.topologies import Topics, wall_clock

pytestmark = pytest.mark.broker


def test_wall_clock_punctuation_fires_between_inputs(spark: Any, kafka_broker: LocalKafkaBroker,
                                                     tmp_path: Path) -> None:
    topics = Topics(f"wall-{uuid.uuid4().hex[:8]}")
    bootstrap = kafka_broker.bootstrap_servers
    out = topics.out("ticks")
    asyncio.run(create_kept_topics(bootstrap, {topics.events: 1, out: 1}))
    now = int(time.time() * 1000)
    asyncio.run(produce_records(bootstrap,
                                [Rec(topics.events, 0, b"k", b"v", now), Rec(topics.events, 0, b"k", b"w", now)]))
    streams = SparkStreams(wall_clock(topics), {"application.id": topics.prefix, "bootstrap.servers": bootstrap,
                                                "spark.checkpoint.location": str(tmp_path / "checkpoint")},
                           spark=spark)
    assert [p.wall_clock for p in streams._plan()] == [True]
    streams.start()
    try:
        deadline = time.monotonic() + 90
        while True:
            ticks = asyncio.run(read_all(bootstrap, {out: 1})).get((out, 0), [])
            if len(ticks) >= 3:
                break
            assert streams.await_termination(0.01) is False, "the query stopped"
            assert time.monotonic() < deadline, f"only {len(ticks)} ticks in 90 s"
            time.sleep(1.0)
    finally:
        streams.stop()
    counts = [struct.unpack(">q", t.value or b"")[0] for t in ticks]
    stamps = [t.timestamp for t in ticks]
    assert set(counts) == {2}  # the store's count, carried from the batch with the input to the timers' batches
    # Each fires at the time it ran; the next is due at the schedule's next 500 ms grid point, so two
    # ticks may be closer than 500 ms, but never two in one grid interval.
    assert all(a < b for a, b in itertools.pairwise(stamps))
    assert stamps[-1] - stamps[0] > 500 * (len(stamps) - 2)
