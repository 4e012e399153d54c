"""A query with a fresh checkpoint starts at the group's committed offsets (what the asyncio runtime, or
Spark under exactly-once, committed), partition by partition; `auto.offset.reset` where nothing is
committed, a repartition topic from its start; and nothing special when the group has no offsets."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from streamlet.kafka.client_settings import stop_client
from streamlet.spark.starting_offsets import committed_starting_offsets, is_fresh
from streamlet.testing.local_broker import LocalKafkaBroker
from tests.helpers.kafka import Rec, create_kept_topics, produce_records

pytestmark = pytest.mark.broker


async def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(t, p) for t, p in offsets])
        await consumer.commit({TopicPartition(t, p): o for (t, p), o in offsets.items()})
    finally:
        await stop_client(consumer)


def test_fresh_queries_start_at_the_committed_offsets(kafka_broker: LocalKafkaBroker) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    app, source, repartition = f"start-{run}", f"start-{run}-in", f"start-{run}-app-repartition"
    asyncio.run(create_kept_topics(bootstrap, {source: 3, repartition: 2}))
    asyncio.run(produce_records(bootstrap, [Rec(source, p, b"k", b"v", 1) for p in range(3) for _ in range(5)]
                        + [Rec(repartition, 0, b"k", b"v", 1) for _ in range(4)]))
    settings = {"bootstrap.servers": bootstrap, "application.id": app}
    partitions = {source: 3, repartition: 2}

    assert asyncio.run(committed_starting_offsets(settings, partitions, {repartition}, "earliest")) is None

    asyncio.run(_commit(bootstrap, app, {(source, 0): 4, (source, 2): 1, (repartition, 0): 3}))
    for reset, unset in (("earliest", -2), ("latest", -1)):
        starting = asyncio.run(committed_starting_offsets(settings, partitions, {repartition}, reset))
        assert starting is not None
        assert json.loads(starting) == {source: {"0": 4, "1": unset, "2": 1}, repartition: {"0": 3, "1": -2}}


def test_a_checkpoint_is_fresh_until_a_batch_was_planned(tmp_path: Path) -> None:
    assert is_fresh(tmp_path / "missing")
    (tmp_path / "offsets").mkdir()
    assert is_fresh(tmp_path)
    (tmp_path / "offsets" / "0").write_text("v1")
    assert not is_fresh(tmp_path)
