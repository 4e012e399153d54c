"""Kafka I/O for the tests that run against the real broker: topics, producing, reading back.

One set for every suite. Producing: `produce` (key/value bytes, the partitioner decides), `produce_at`
(with event times), `produce_in_order` (each record acknowledged before the next) and `produce_records`
(`Rec`s with their own partition, timestamp and headers, through an idempotent producer); `producer()`
for a caller that paces its own sends. Reading back, two ways to know when to stop: `read_until` reads
until a condition on what arrived holds (or raises TimeoutError), `read_all` and `read_topic` read every
partition up to the end offsets it had when reading began (the last stable offsets with `read_committed`).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from benchmarks.kafka_bench import create_topics
from streamlet.kafka.client_settings import stop_client
from streamlet.kafka.topic_manager import admin_client, describe_partition_counts

__all__ = [
    "RECENT_BASE_TS", "Headers", "Rec", "create_kept_topics", "create_topics", "decoded", "joined_consumer",
    "partition_count", "produce", "produce_at", "produce_in_order", "produce_records", "producer", "read_all",
    "read_settled", "read_topic", "read_until", "set_group_config", "transactional_producer",
]

Headers = tuple[tuple[str, bytes], ...]

RECENT_BASE_TS = int(time.time() * 1000) - 6 * 3_600_000
RECENT_BASE_TS -= RECENT_BASE_TS % 60_000
"""Recent event times (a minute boundary six hours ago): window changelogs are compact,delete with a
retention of store retention + 1 day, and the broker expires records by timestamp, so events from a
fixed date in the past could vanish from a changelog (or a default-retention input) mid-test. Six hours,
because the windowed join's takeover test's 200,000 events, one every 100 ms, span 5.6 hours, and a Kafka
4.x broker refuses records timestamped more than an hour ahead of its clock (InvalidTimestampError)."""


@dataclass(frozen=True)
class Rec:
    """One record of a topic partition, as produced or as read back."""

    topic: str
    partition: int
    key: bytes
    value: bytes | None
    timestamp: int
    headers: Headers = field(default=())


async def create_kept_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    """Topics that keep records of any age: inputs with fixed timestamps from 2023 would be deleted by the
    broker's default 7-day retention at its next check (a first run of a Spark test lost outputs so)."""
    await create_topics(bootstrap, partitions, {"retention.ms": "-1"})


async def partition_count(bootstrap: str, topic: str) -> int:
    """How many partitions `topic` has (0: there is no such topic)."""
    async with admin_client(bootstrap) as admin:
        return (await describe_partition_counts(admin, [topic])).get(topic, 0)


# Producing


@asynccontextmanager
async def producer(bootstrap: str, *, idempotent: bool = False, linger_ms: int = 5) -> AsyncIterator[AIOKafkaProducer]:
    """A started producer with acks=all, stopped on leaving."""
    started = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=linger_ms,
                               enable_idempotence=idempotent)
    await started.start()
    try:
        yield started
    finally:
        await started.stop()


async def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    """(key, value) records, all sent before their acknowledgements are awaited."""
    async with producer(bootstrap) as p:
        futures = [await p.send(topic, key=k, value=v) for k, v in records]
        await asyncio.gather(*futures)


async def produce_at(bootstrap: str, topic: str, records: list[tuple[str, bytes, int]]) -> None:
    """(key, value, timestamp ms) records: event time matters to windows."""
    async with producer(bootstrap) as p:
        futures = [await p.send(topic, key=k.encode(), value=v, timestamp_ms=ts) for k, v, ts in records]
        for future in futures:
            await future


async def produce_in_order(bootstrap: str, topic: str, records: list[tuple[str, str, int]]) -> None:
    """(key, value, timestamp) string records, each acknowledged before the next is sent: when their order
    is the point of the test."""
    async with producer(bootstrap) as p:
        for key, value, ts in records:
            await (await p.send(topic, key=key.encode(), value=value.encode(), timestamp_ms=ts))


async def produce_records(bootstrap: str, records: Iterable[Rec]) -> None:
    """Each `Rec` to its own topic and partition, with its timestamp and headers, through an idempotent
    producer that sends at once (no linger)."""
    async with producer(bootstrap, idempotent=True, linger_ms=0) as p:
        sent = [await p.send(r.topic, r.value, key=r.key, partition=r.partition, timestamp_ms=r.timestamp,
                             headers=list(r.headers) or None) for r in records]
        await asyncio.gather(*sent)


async def transactional_producer(bootstrap: str, name: str) -> Any:
    """A started producer with a transactional id of its own (`<name>-<random>`); the caller stops it."""
    started = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{name}-{uuid.uuid4().hex[:8]}")
    await started.start()
    return started


# Reading back


async def read_until(
    bootstrap: str,
    topic: str,
    done: Callable[[list[Any]], bool],
    timeout: float = 120.0,
    isolation_level: str = "read_uncommitted",
) -> list[Any]:
    """Read `topic` from the beginning until `done(records)` holds; raise TimeoutError otherwise."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False, group_id=None, isolation_level=isolation_level)
    await consumer.start()
    records: list[Any] = []
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for recs in batch.values():
                records.extend(recs)
            if done(records):
                return records
        raise TimeoutError(f"{topic}: condition not met after {timeout}s with {len(records)} records")
    finally:
        await consumer.stop()


async def read_settled(bootstrap: str, topic: str, expected: int, isolation_level: str = "read_uncommitted",
                       idle_polls: int = 4) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of `topic` from the beginning, until `expected` records arrived and `idle_polls` more
    polls brought nothing (records beyond `expected` are kept); what came within 120 polls otherwise."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False, group_id=None, isolation_level=isolation_level)
    await consumer.start()
    records: list[tuple[bytes | None, bytes | None]] = []
    quiet = 0
    try:
        for _ in range(120):
            batch = await consumer.getmany(timeout_ms=250)
            got = [(r.key, r.value) for recs in batch.values() for r in recs]
            records.extend(got)
            quiet = quiet + 1 if not got else 0
            if len(records) >= expected and quiet >= idle_polls:
                break
    finally:
        await consumer.stop()
    return records


async def read_all(bootstrap: str, topics: Mapping[str, int], timeout_s: float = 60.0,
                   isolation_level: str = "read_uncommitted") -> dict[tuple[str, int], list[Rec]]:
    """Everything in `topics` (name -> partitions) up to their ends when reading began, by partition in
    offset order (`read_committed`: only what committed transactions wrote, up to the last stable offsets).
    A partition that gave nothing has no entry; raises TimeoutError after `timeout_s`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                auto_offset_reset="earliest", isolation_level=isolation_level)
    await consumer.start()
    found: dict[tuple[str, int], list[Rec]] = defaultdict(list)
    try:
        partitions = [TopicPartition(t, p) for t, n in topics.items() for p in range(n)]
        if not partitions:
            return found
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        deadline = time.monotonic() + timeout_s
        while [tp for tp in partitions if await consumer.position(tp) < ends[tp]]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{sorted(topics)}: not read to their end offsets {ends} in {timeout_s}s")
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                found[(tp.topic, tp.partition)].extend(
                    Rec(r.topic, r.partition, r.key, r.value, r.timestamp, tuple(r.headers)) for r in records)
    finally:
        await stop_client(consumer)
    return found


async def read_topic(bootstrap: str, topic: str, isolation_level: str = "read_committed") -> list[Rec]:
    """Every record of `topic` (all its partitions, however many the broker says it has; none if there is
    no such topic) up to its ends, by partition then offset: `read_all` of one whole topic."""
    count = await partition_count(bootstrap, topic)
    found = await read_all(bootstrap, {topic: count}, isolation_level=isolation_level)
    return [r for p in range(count) for r in found.get((topic, p), [])]


def decoded(records: list[Any]) -> list[tuple[str, str, int]]:
    """Consumed string records as sorted (key, value, timestamp)."""
    return sorted((r.key.decode(), r.value.decode(), r.timestamp) for r in records)


async def joined_consumer(bootstrap: str, group: str, topic: str) -> Any:
    """A started `read_committed` consumer of `topic` in `group`, once the group has assigned it partitions."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                isolation_level="read_committed")
    await consumer.start()
    with anyio.fail_after(30):
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
    return consumer


# The broker's own tools


def set_group_config(broker: Any, group: str, key: str, value: str) -> None:
    """Kafka's own kafka-configs tool (`--entity-type groups`): a streams group's standby count is the
    group's config, as for Kafka Streams."""
    from streamlet.testing.local_broker import ensure_kafka_jars

    libs = ensure_kafka_jars(version=broker.version)
    classpath = ":".join(str(p) for p in sorted(libs.glob("*.jar")))
    subprocess.run(["java", "-cp", classpath, "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
                    broker.bootstrap_servers, "--entity-type", "groups", "--entity-name", group, "--alter",
                    "--add-config", f"{key}={value}"], check=True, capture_output=True, timeout=180)
