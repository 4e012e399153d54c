"""What the restart suite asks of the broker: topics, input batches, evicting a stopped application's members,
waiting until an application has consumed and committed everything, and reading output `read_committed`.

Why each exists:
- Input is written either while the application is down (all of it is there when the application starts, so a
  task reading several partitions merges them by timestamp exactly as Kafka Streams does) or while it runs in
  ONE transaction over every input topic, so that the batch becomes visible to the application at once rather
  than topic by topic (which would make the merge depend on which fetch saw what).
- A Kafka Streams client does not leave its group when it closes (and nothing leaves on a kill -9): the next
  instance's join would wait for the old member's session timeout. Evicting the group's members before a start
  (LeaveGroup on their behalf, as Kafka's own reset tool does with `--force`) makes restarts fast; it changes
  nothing the application computes.
- "Done" must not depend on guessing a delay: `quiesce` waits until, on every partition the group consumes (the
  case's source topics and the application's repartition topics), nothing readable lies at or after the committed
  offset, and the committed offsets and every end offset have stayed put over a settling pause (longer than the
  commit interval, so that no transaction is left open).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import GroupCoordinatorNotAvailableError
from aiokafka.protocol.group import LeaveGroupRequest

from tests.helpers.kafka import create_topics

__all__ = ["Out", "committed", "create_topics", "evict_members", "quiesce", "read_topics", "watch_arrivals",
           "write_records"]

Rec = tuple[str, str | None, str | None, int]
"""An input record: (topic, key, value, timestamp ms)."""


@dataclass(frozen=True)
class Out:
    """An output record as read: key and value bytes as hex (None for null), timestamp."""

    key: str | None
    value: str | None
    timestamp: int


async def _stopped(stop: Awaitable[Any]) -> None:
    """Await a client's stop; aiokafka may let a CancelledError of its own background task escape a consumer's
    stop right after an error elsewhere, which must not cancel the whole run (a real cancellation still does)."""
    try:
        await stop
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def _bytes(s: str | None) -> bytes | None:
    return None if s is None else s.encode()


async def write_records(bootstrap: str, records: Sequence[Rec], transactional: bool) -> None:
    """Write `records` in order (one partition per topic, so per-topic order is kept); in one transaction when
    `transactional`, so that all of them become readable `read_committed` together."""
    if not records:
        return
    if transactional:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"restart-input-{uuid.uuid4().hex}",
                                    enable_idempotence=True, acks="all", linger_ms=5)
    else:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=5)
    await producer.start()
    try:
        if transactional:
            async with producer.transaction():
                futures = [await producer.send(t, key=_bytes(k), value=_bytes(v), timestamp_ms=ts, partition=0)
                           for t, k, v, ts in records]
                await asyncio.gather(*futures)
        else:
            futures = [await producer.send(t, key=_bytes(k), value=_bytes(v), timestamp_ms=ts, partition=0)
                       for t, k, v, ts in records]
            await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def evict_members(bootstrap: str, group: str) -> int:
    """Remove every member of `group` (a stopped application's, which did not leave); returns how many."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        for attempt in range(50):
            try:
                coordinator = await admin.find_coordinator(group)
                break
            except GroupCoordinatorNotAvailableError:  # the offsets topic of a fresh broker is being created
                if attempt == 49:
                    raise
                await asyncio.sleep(0.2)
        [response] = await admin.describe_consumer_groups([group], group_coordinator_id=coordinator)
        members: list[str] = []
        for described in response.groups:
            members += [m[0] for m in described[5]]
        for member in members:
            await admin._send_request_to_node(coordinator, LeaveGroupRequest(group, member))
        return len(members)
    finally:
        await admin.close()


@dataclass
class _Snapshot:
    committed: dict[TopicPartition, int]
    ends: dict[TopicPartition, int]
    pending: list[TopicPartition]  # consumed partitions with something readable at or after the committed offset


async def _snapshot(admin: AIOKafkaAdminClient, consumer: AIOKafkaConsumer, group: str,
                    consumed: list[TopicPartition], watched: list[TopicPartition]) -> _Snapshot:
    offsets = await admin.list_consumer_group_offsets(group)
    committed = {tp: offsets[tp].offset if tp in offsets and offsets[tp].offset >= 0 else 0 for tp in consumed}
    ends = await consumer.end_offsets(watched)
    pending = []
    for tp in consumed:
        if committed[tp] < ends[tp]:
            consumer.seek(tp, committed[tp])
            records = await consumer.getmany(tp, timeout_ms=300, max_records=1)
            if records.get(tp):
                pending.append(tp)
    return _Snapshot(committed, dict(ends), pending)


async def quiesce(bootstrap: str, group: str, consumed_topics: list[str], watched_topics: list[str],
                  alive: Callable[[], bool], timeout: float = 120.0, settle: float = 0.6) -> None:
    """Wait until the application of `group` has consumed and committed everything readable on `consumed_topics`
    (partition 0 of each), and nothing moved (committed offsets, end offsets of those and of `watched_topics`)
    over `settle` seconds. Raises RuntimeError if `alive()` turns false, TimeoutError after `timeout`."""
    consumed = [TopicPartition(t, 0) for t in consumed_topics]
    watched = [*consumed, *(TopicPartition(t, 0) for t in watched_topics if t not in consumed_topics)]
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                isolation_level="read_committed", auto_offset_reset="earliest")
    await admin.start()
    await consumer.start()
    try:
        consumer.assign(consumed)
        deadline = time.monotonic() + timeout
        last: _Snapshot | None = None
        while True:
            if not alive():
                raise RuntimeError("the application stopped while its input was being consumed")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{group}: not quiescent after {timeout:.0f}s: {last}")
            now = await _snapshot(admin, consumer, group, consumed, watched)
            if not now.pending and last is not None and not last.pending and \
                    (now.committed, now.ends) == (last.committed, last.ends):
                return
            last = now
            await asyncio.sleep(settle if not now.pending else 0.1)
    finally:
        await _stopped(consumer.stop())
        await _stopped(admin.close())


async def committed(bootstrap: str, group: str, topics: list[str]) -> dict[str, int]:
    """The group's committed offset on partition 0 of each topic (0 where none)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await _stopped(admin.close())
    return {t: max(0, offsets[tp].offset) if (tp := TopicPartition(t, 0)) in offsets else 0 for t in topics}


async def _from_the_start(bootstrap: str, topics: list[str]) -> tuple[AIOKafkaConsumer, list[TopicPartition]]:
    """A started `read_committed` consumer on partition 0 of each topic, at its beginning (the caller stops it)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                isolation_level="read_committed", auto_offset_reset="earliest")
    await consumer.start()
    tps = [TopicPartition(t, 0) for t in topics]
    try:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
    except BaseException:
        await _stopped(consumer.stop())
        raise
    return consumer, tps


async def read_topics(bootstrap: str, topics: list[str]) -> dict[str, list[Out]]:
    """Every committed record of partition 0 of each topic, in offset order."""
    consumer, tps = await _from_the_start(bootstrap, topics)
    try:
        ends = await consumer.end_offsets(tps)
        out: dict[str, list[Out]] = {t: [] for t in topics}
        deadline = time.monotonic() + 60
        while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topics} did not reach {ends}")
            batch = await consumer.getmany(timeout_ms=300)
            for tp, records in batch.items():
                out[tp.topic] += [Out(_hex(r.key), _hex(r.value), r.timestamp) for r in records]
        return out
    finally:
        await consumer.stop()


async def watch_arrivals(bootstrap: str, topics: list[str], arrivals: list[float]) -> None:
    """Until cancelled, append to `arrivals` the wall-clock moment (`time.monotonic()`) each committed record of
    partition 0 of `topics` became readable, as a downstream `read_committed` consumer sees it (under
    exactly-once, at the producing task's commit): what a rolling swap's pause looks like from outside."""
    consumer, _ = await _from_the_start(bootstrap, topics)
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=50)
            now = time.monotonic()
            arrivals += [now for records in batch.values() for _ in records]
    finally:
        await _stopped(consumer.stop())
