"""Repartition topics keep their records whatever their age, and lose them only once committed.

Reprocessing old data (timestamps years in the past) must not hand the repartition topic's records to the
broker's time-based retention, so the topic is created with retention.ms=-1 (as Kafka Streams does) and
the RepartitionPurger deletes what the application has committed.
"""

from __future__ import annotations

import struct
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, read_until
from tests.integration.wordcount_app import TARGET, settings, topic_env

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

OLD_TS = 1_500_000_000_000  # 2017: far beyond any default retention


async def test_repartition_topic_is_kept_forever_and_purged_after_commit(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, out, app_id = f"purge-in-{suffix}", f"purge-out-{suffix}", f"purge-{suffix}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    lines = [f"w{i % 7} w{i % 11}" for i in range(600)]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for line in lines:
            await producer.send(inp, line.encode(), timestamp_ms=OLD_TS)
        await producer.flush()
    finally:
        await producer.stop()
    expected = Counter(w for line in lines for w in line.split())
    config = {**settings(bootstrap, app_id, tmp_path / "state"), "repartition.purge.interval.ms": 200}
    app = AppProcess(TARGET, config, tmp_path / "app.log", env=topic_env(inp, out)).start()
    repartition = None
    try:
        def counts(rs: list[Any]) -> dict[str, int]:
            return {r.key.decode(): struct.unpack(">q", r.value)[0] for r in rs}

        await read_until(bootstrap, out, lambda rs: counts(rs) == dict(expected), timeout=90)
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            topics = [t for t in await admin.list_topics() if t.startswith(app_id) and t.endswith("-repartition")]
            assert len(topics) == 1
            repartition = topics[0]
            described = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, repartition)])
            configs = {name: value for name, value, *_ in described[0].resources[0][4]}
            assert configs["retention.ms"] == "-1"
        finally:
            await admin.close()
        # Everything was processed and committed: within a few purge intervals nothing is left.
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        try:
            tps = [TopicPartition(repartition, p) for p in range(2)]
            for _ in range(100):
                starts, ends = await consumer.beginning_offsets(tps), await consumer.end_offsets(tps)
                if sum(ends.values()) > 0 and starts == ends:
                    break
                await anyio.sleep(0.2)
            assert sum(ends.values()) == sum(expected.values())  # one repartitioned record per word
            assert starts == ends, (starts, ends)
        finally:
            await consumer.stop()
    finally:
        assert app.stop() == 0, app.log_text()[-3000:]

