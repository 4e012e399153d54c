"""WordCount's split and count as one query on the real broker (see `streamlet.spark.fused`): the counts
carry over from one run to the next, nothing goes through the repartition topic, and a checkpoint or
committed offsets that began the other way keep the two queries."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from streamlet.kafka.client_settings import stop_client
from streamlet.spark import SparkStreams
from streamlet.spark.query import Bounds
from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all
from tests.spark.topologies import Topics, wordcount

pytestmark = pytest.mark.broker

PARTITIONS = 3
BASE_TS = 1_700_000_000_000


def _setup(bootstrap: str, tmp_path: Path, **extra: Any) -> tuple[Topics, dict[str, Any]]:
    topics = Topics(f"fused-{uuid.uuid4().hex[:8]}")
    asyncio.run(create_kept_topics(bootstrap, {topics.events: PARTITIONS, topics.out("count"): PARTITIONS}))
    config = {"application.id": topics.prefix, "bootstrap.servers": bootstrap, "statestore.cache.max.bytes": 0,
              "spark.checkpoint.location": str(tmp_path / "checkpoint"), **extra}
    return topics, config


def _lines(topics: Topics, first: int, count: int) -> list[Rec]:
    return [Rec(topics.events, i % PARTITIONS, f"line{i}".encode(), f"w{i % 5} w{(i * 3) % 7} w{i % 2}".encode(),
                BASE_TS + i) for i in range(first, first + count)]


def _run(topics: Topics, config: dict[str, Any], spark: Any, lines: list[Rec]) -> list[str]:
    """Produce `lines`, run a bounded backfill; returns the ids of the queries that ran."""
    asyncio.run(produce_records(config["bootstrap.servers"], lines))
    streams = SparkStreams(wordcount(topics), config, spark=spark)
    streams.backfill(Bounds(bounded=True))
    return [plan.query_id for plan in streams.plans]


def _check_counts(topics: Topics, bootstrap: str, lines: list[Rec]) -> list[Rec]:
    """Each word's updates are 1, 2, ... its count (caching off: one per word read); returns the
    repartition topic's records."""
    repartition = f"{topics.prefix}-counts-repartition"
    found = asyncio.run(read_all(bootstrap, {topics.out("count"): PARTITIONS, repartition: PARTITIONS}))
    words = Counter(w for r in lines for w in (r.value or b"").split())
    updates: dict[bytes, list[int]] = {}
    for (topic, _partition), records in sorted(found.items()):
        if topic == topics.out("count"):
            for r in records:
                updates.setdefault(r.key, []).append(int.from_bytes(r.value or b"", "big", signed=True))
    assert updates == {w: list(range(1, n + 1)) for w, n in words.items()}
    return [r for (topic, _p), records in found.items() if topic == repartition for r in records]


def test_the_count_carries_over_between_fused_runs(spark: Any, kafka_broker: LocalKafkaBroker,
                                                    tmp_path: Path) -> None:
    topics, config = _setup(kafka_broker.bootstrap_servers, tmp_path)
    first, second = _lines(topics, 0, 40), _lines(topics, 40, 35)
    assert _run(topics, config, spark, first) == ["0+1"]
    assert _run(topics, config, spark, second) == ["0+1"]
    assert _check_counts(topics, kafka_broker.bootstrap_servers, first + second) == []


def test_a_pair_that_began_as_two_queries_stays_two(spark: Any, kafka_broker: LocalKafkaBroker,
                                                     tmp_path: Path) -> None:
    topics, config = _setup(kafka_broker.bootstrap_servers, tmp_path, **{"spark.fuse.subtopologies": "false"})
    first, second = _lines(topics, 0, 30), _lines(topics, 30, 30)
    assert _run(topics, config, spark, first) == ["0", "1"]
    del config["spark.fuse.subtopologies"]  # the checkpoints decide now
    assert _run(topics, config, spark, second) == ["0", "1"]
    assert len(_check_counts(topics, kafka_broker.bootstrap_servers, first + second)) == 3 * 60


def test_committed_offsets_on_the_repartition_topic_keep_two_queries(kafka_broker: LocalKafkaBroker,
                                                                    tmp_path: Path) -> None:
    """The application ran on the asyncio runtime before: what it left in the repartition topic must
    still be read, so the count keeps its own query."""
    topics, config = _setup(kafka_broker.bootstrap_servers, tmp_path)
    streams = SparkStreams(wordcount(topics), config)
    plans = streams._plan()  # creates the internal topics
    root = streams.checkpoint_root()
    assert [p.query_id for p in streams._fused(plans, root)] == ["0+1"]

    async def commit() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=config["bootstrap.servers"], group_id=topics.prefix,
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            where = TopicPartition(f"{topics.prefix}-counts-repartition", 1)
            consumer.assign([where])
            await consumer.commit({where: OffsetAndMetadata(0, "")})
        finally:
            await stop_client(consumer)

    asyncio.run(commit())
    assert [p.query_id for p in streams._fused(plans, root)] == ["0", "1"]
