"""Shared pieces of the Kafka benchmarks: a broker, a pre-loaded input topic, progress by offsets.

Every system is measured the same way: the input topic is loaded before the clock starts, and a
run is over when the consumer group of the system under test has committed every input offset
(and, for streamlet's WordCount, every repartition offset too) — so the number counts records
that were fully processed and whose output was acknowledged, not records merely fetched.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic


async def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()])
    finally:
        await admin.close()


def word_lines(n: int, words_per_line: int, vocabulary: int, seed: int = 1) -> Iterable[bytes]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(vocabulary)]
    for _ in range(n):
        yield " ".join(rng.choice(vocab) for _ in range(words_per_line)).encode()


async def preload(bootstrap: str, topic: str, partitions: int, values: Iterable[bytes]) -> int:
    """Write values round-robin over the partitions with the batch API; returns the count."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, max_batch_size=1 << 20, linger_ms=20)
    await producer.start()
    count = 0
    try:
        builders = {p: producer.create_batch() for p in range(partitions)}
        futures = []
        ts = int(time.time() * 1000)
        for value in values:
            p = count % partitions
            if builders[p].append(key=None, value=value, timestamp=ts) is None:
                futures.append(await producer.send_batch(builders[p], topic, partition=p))
                builders[p] = producer.create_batch()
                builders[p].append(key=None, value=value, timestamp=ts)
            count += 1
        for p, b in builders.items():
            if b.record_count():
                futures.append(await producer.send_batch(b, topic, partition=p))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return count


async def end_offsets(bootstrap: str, topics: list[str]) -> dict[TopicPartition, int]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(t, p) for t in topics for p in (consumer.partitions_for_topic(t) or set())]
        if not tps:
            await consumer._client.force_metadata_update()
            tps = [TopicPartition(t, p) for t in topics for p in (consumer.partitions_for_topic(t) or set())]
        return dict(await consumer.end_offsets(tps))
    finally:
        await consumer.stop()


async def committed(admin: Any, group: str) -> dict[TopicPartition, int]:
    offsets = await admin.list_consumer_group_offsets(group)
    return {tp: meta.offset for tp, meta in offsets.items() if meta is not None and meta.offset >= 0}


async def wait_group_done(bootstrap: str, group: str, topics: list[str], timeout: float,
                          transactional: tuple[str, ...] = (), settle_s: float = 3.0) -> float:
    """Wait until `group` has consumed everything in `topics`; returns the time it finished.

    Plain topics are done when the committed offset reaches the end offset. In `transactional` topics a
    partition can end with several commit markers (one per producer whose transaction touched it), which
    no consumer commits past, so there "done" means: every plain topic is done and the group's committed
    offsets have not moved for `settle_s`; the finish time is when they last moved."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    deadline = time.monotonic() + timeout
    last: dict[Any, int] = {}
    last_change = time.monotonic()
    try:
        while time.monotonic() < deadline:
            ends = await end_offsets(bootstrap, topics)
            done = await committed(admin, group)
            now = time.monotonic()
            if done != last:
                last, last_change = done, now
            plain_done = ends and all(done.get(tp, -1) >= end for tp, end in ends.items()
                                      if end > 0 and tp.topic not in transactional)
            if plain_done and not transactional:
                return now
            if plain_done and now - last_change >= settle_s:
                return last_change
            await asyncio.sleep(0.25)
        raise TimeoutError(f"group {group} did not finish {topics} within {timeout}s")
    finally:
        await admin.close()
