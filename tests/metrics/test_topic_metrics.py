"""The values of `stream-topic-metrics` (KIP-846) against Kafka Streams 4.4.0's on the same broker and input
(TopicMetricsCheck in tests/java/streams4): records and bytes consumed from the input topic by the source node
and produced to the output topic by the sink node, with keys, a null key, a null value and headers, so every
term of Kafka Streams' byte reckoning is exercised. Each side writes to its own output topic, of the same
name length (the topic's name is part of a record's size)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaProducer

from streamlet import Consumed, Produced, Serdes, StreamsBuilder
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.helpers.kafka import create_topics, read_until
from tests.streams4_java import run_check

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

_RECORDS: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]] = [
    (b"k1", b"a", []),
    (b"key-two", b"some longer value", [("h", b"v"), ("trace-id", b"0123456789")]),
    (None, b"no key", []),
    (b"k4", None, [("empty", b"")]),
    *[(f"k{i}".encode(), f"value {i}".encode(), []) for i in range(5, 25)],
]


async def _produce(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        futures = [await producer.send(topic, key=k, value=v, headers=h) for k, v, h in _RECORDS]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


def _ours(streams: KafkaStreams) -> dict[str, int]:
    return {f"{m.name.name} {m.name.tag('processor-node-id')} {m.name.tag('topic')}": int(m.value)
            for m in streams.streams_metrics.metrics() if m.name.group == "stream-topic-metrics"}


async def test_topic_metrics_match_kafka_streams(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    source, java_out, our_out = f"tm-in-{sfx}", f"tm-oj-{sfx}", f"tm-op-{sfx}"
    await create_topics(bootstrap, {source: 1, java_out: 1, our_out: 1})
    await _produce(bootstrap, source)
    count = len(_RECORDS)
    stdin = f"{bootstrap}\ntopic-metrics-java-{sfx}\n{source}\n{java_out}\n{count}\n"
    java_lines = await anyio.to_thread.run_sync(lambda: run_check("TopicMetricsCheck", stdin))
    java = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in java_lines.splitlines() if line}
    java = {k.replace(java_out, our_out): v for k, v in java.items()}

    builder = StreamsBuilder()
    (builder.stream(source, Consumed(key_serde=Serdes.ByteArray(), value_serde=Serdes.String()))
     .map_values(lambda v: None if v is None else v.upper())
     .to(our_out, Produced(key_serde=Serdes.ByteArray(), value_serde=Serdes.String())))
    streams = KafkaStreams(builder.build(), {"application.id": f"topic-metrics-{sfx}", "bootstrap.servers": bootstrap,
                                             "state.dir": str(tmp_path), "commit.interval.ms": 100,
                                             "auto.offset.reset": "earliest"})
    await streams.start()
    try:
        await read_until(bootstrap, our_out, lambda rs: len(rs) >= count, timeout=60)
        ours = _ours(streams)
    finally:
        await streams.close()
    assert ours == java
    assert ours[f"records-consumed-total KSTREAM-SOURCE-0000000000 {source}"] == count
    assert ours[f"records-produced-total KSTREAM-SINK-0000000002 {our_out}"] == count
