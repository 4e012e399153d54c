"""Kafka plumbing shared by the benchmark runs: topics, pre-loading, offsets, process metrics.

Input is written once per benchmark run with the producer's batch API (keyed records go to the partition
the Java client would choose, so Kafka Streams and streamlet see the same co-partitioning), before any
clock starts.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streamlet.partitioner import default_partition


async def create_topics(bootstrap: str, topics: dict[str, int], configs: dict[str, str] | None = None) -> None:
    """Create the topics and return once the broker's metadata lists each with all its partitions.

    CreateTopics is answered once the controller has the topic; the broker's metadata cache, which
    every client's metadata request reads, catches up a moment later (seen under load: an application
    started right after found its source topic missing and stopped with `MissingSourceTopicError`)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, n, 1, topic_configs=configs or {}) for t, n in topics.items()])
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            listed = {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics(list(topics))
                      if t["error_code"] == 0}
            if all(listed.get(t) == n for t, n in topics.items()):
                return
            if asyncio.get_running_loop().time() > deadline:
                missing = sorted(t for t, n in topics.items() if listed.get(t) != n)
                raise TimeoutError(f"topics not in the broker's metadata after 30 s: {missing}")
            await asyncio.sleep(0.05)
    finally:
        await admin.close()


async def preload(bootstrap: str, topic: str, partitions: int,
                  records: Iterable[tuple[bytes | None, bytes, int]]) -> int:
    """Write (key, value, timestamp) records with the batch API; keyed records are partitioned by murmur2,
    unkeyed ones round-robin. Returns the count."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, max_batch_size=1 << 20, linger_ms=20)
    await producer.start()
    count = 0
    try:
        builders = {p: producer.create_batch() for p in range(partitions)}
        futures = []
        for key, value, ts in records:
            p = count % partitions if key is None else default_partition(key, partitions)
            if builders[p].append(key=key, value=value, timestamp=ts) is None:
                futures.append(await producer.send_batch(builders[p], topic, partition=p))
                builders[p] = producer.create_batch()
                builders[p].append(key=key, value=value, timestamp=ts)
            count += 1
        for p, b in builders.items():
            if b.record_count():
                futures.append(await producer.send_batch(b, topic, partition=p))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return count


async def partitions_of(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    parts = consumer.partitions_for_topic(topic)
    if not parts:
        await consumer._client.force_metadata_update()
        parts = consumer.partitions_for_topic(topic) or set()
    return [TopicPartition(topic, p) for p in sorted(parts)]


async def end_offsets(bootstrap: str, topics: list[str]) -> dict[TopicPartition, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        tps = [tp for t in topics for tp in await partitions_of(consumer, t)]
        return dict(await consumer.end_offsets(tps))
    finally:
        await consumer.stop()


async def committed(admin: Any, group: str) -> dict[TopicPartition, int]:
    from aiokafka.errors import KafkaError

    try:
        offsets = await admin.list_consumer_group_offsets(group)
    except KafkaError:  # the group's coordinator is not known yet: nothing committed
        return {}
    return {tp: meta.offset for tp, meta in offsets.items() if meta is not None and meta.offset >= 0}


# --- process metrics, summed over the process tree (streamlet --workers N, JVM, Python peers) -----------

def process_tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return pids


def peak_rss_mb(pid: int) -> int | None:
    """Sum of the peak resident sets (VmHWM) of the process tree, read just before it is stopped."""
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return round(total / 1024) if total else None


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of the running process tree (children that already exited are not counted)."""
    total, found = 0, False
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
        found = True
    return total / os.sysconf("SC_CLK_TCK") if found else None


def dir_mb(path: Path) -> float | None:
    """The bytes of the files under `path` (a run's state directory: its stores, checkpoints, LevelDB's or
    RocksDB's logs), in MB, read just before the system is stopped; None if there is no such directory."""
    if not path.exists():
        return None
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name), follow_symlinks=False).st_size
            except OSError:  # a file a compaction removed meanwhile
                continue
    return round(total / 1e6, 1)
