"""The ceiling: a hand-written aiokafka consume → produce pipe with no processing at all.

It reads the input topic in batches and writes each record unchanged to the same partition of an
output topic with the batch API, committing offsets after the output is acknowledged — the least
work any Python stream processor on aiokafka can do per record.
"""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


async def run_pipe(bootstrap: str, source: str, sink: str, expected: int, group: str) -> float:
    consumer = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group,
                                auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=5000)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_batch_size=1 << 20, linger_ms=5)
    await consumer.start()
    await producer.start()
    seen = 0
    started = None
    try:
        while seen < expected:
            batches = await consumer.getmany(timeout_ms=500, max_records=5000)
            if not batches:
                continue
            if started is None:
                started = time.monotonic()
            futures = []
            offsets = {}
            for tp, records in batches.items():
                builder = producer.create_batch()
                for r in records:
                    if builder.append(key=r.key, value=r.value, timestamp=r.timestamp) is None:
                        futures.append(await producer.send_batch(builder, sink, partition=tp.partition))
                        builder = producer.create_batch()
                        builder.append(key=r.key, value=r.value, timestamp=r.timestamp)
                futures.append(await producer.send_batch(builder, sink, partition=tp.partition))
                offsets[TopicPartition(tp.topic, tp.partition)] = records[-1].offset + 1
                seen += len(records)
            await asyncio.gather(*futures)
            await consumer.commit(offsets)
        assert started is not None
        return time.monotonic() - started
    finally:
        await producer.stop()
        await consumer.stop()
