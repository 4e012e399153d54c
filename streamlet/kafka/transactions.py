"""The exactly-once commit sequence both engines run, once: its steps in the order that makes it exactly-once.

Under `processing.guarantee=exactly_once_v2` the asyncio runtime (`runtime.commit_protocol`) and the
Spark engine (`spark.transactions`) make a task's work durable the same way, with a transactional
producer, so that an application can move between them and keep its guarantee:

1. `start_transactional`: the producer starts and begins its first transaction, which waits for its
   producer id. InitProducerId bumps the epoch of the transactional id: whatever an earlier producer of
   that id left open is aborted, and that producer, wherever it still runs, is fenced (it cannot commit).
2. The output (sink, repartition and changelog records) goes out through a `RecordSender` in the open
   transaction.
3. `commit_transaction`: the consumed input offsets, each with its metadata (`with_metadata`: Kafka
   Streams' commit metadata, see `commit_metadata`), are added for the group `application.id` while the
   records sent are being acknowledged (as Kafka Streams' producer sends them beside its in-flight
   batches: the two round trips no longer follow each other); once every record is acknowledged and the
   offsets are in, the transaction is committed. Offsets in a transaction count only when it commits,
   and it commits only after every record was acknowledged: a failed send fails the commit, and the
   abort (or the next producer's start) takes the offsets with it, so the input they cover is read again.

What is not here differs between the engines, because their producers live differently (each says why
where it does it): the runtime keeps one producer for all of a member's tasks across commits, begins
the next transaction right after a commit, aborts on failure (replacing a producer that cannot abort)
and stamps the offsets with its group membership; the Spark engine starts one producer per task and
micro-batch, never aborts (the next producer's start does) and has no membership to stamp, since its
tasks never join the group.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from aiokafka import TopicPartition
from aiokafka.structs import OffsetAndMetadata

from streamlet.kafka.client_settings import stop_client
from streamlet.kafka.record_sender import RecordSender

if TYPE_CHECKING:
    from streamlet.metrics.latency_trace import LatencyTrace

Offsets = dict[tuple[str, int], int]
"""Offsets per (topic, partition): the next input offsets to commit, or the offsets after acknowledged output."""
Metadata = Mapping[tuple[str, int], str]
"""The metadata committed with each partition's offset ('' where a partition has none)."""


def with_metadata(offsets: Offsets, metadata: Metadata) -> dict[TopicPartition, OffsetAndMetadata]:
    """`offsets` as aiokafka commits them, each with its metadata: in a transaction (both engines) and
    through a consumer (the asyncio runtime under at-least-once) alike."""
    return {TopicPartition(t, p): OffsetAndMetadata(o, metadata.get((t, p), "")) for (t, p), o in offsets.items()}


async def start_transactional(producer: Any, start: Callable[[], Awaitable[None]] | None = None) -> None:
    """Start the transactional `producer` (by `start()`, else `producer.start()`) and begin its first
    transaction, which waits for its producer id (see the module docstring). A producer that fails
    either is stopped (one whose start failed still holds a client) and the error raised."""
    try:
        await (producer.start() if start is None else start())
        await producer.begin_transaction()
    except BaseException:
        await stop_client(producer)
        raise


async def commit_transaction(sender: RecordSender, offsets: dict[TopicPartition, OffsetAndMetadata],
                             group_id: str, *, before_offsets: Callable[[], object] | None = None,
                             trace: LatencyTrace | None = None) -> Offsets:
    """Commit the open transaction of `sender`'s producer: add `offsets` (see `with_metadata`) for the group
    `group_id` (none: no offsets) while waiting until everything sent is acknowledged, then commit.
    `before_offsets` runs right before the offsets go out and may refuse them by raising; `trace` times
    each step (`commit.offsets`: what the offsets took beyond the acknowledgements). Returns, per partition
    written, the offset after its last acknowledged record. Raises whatever failed; the transaction is then
    open or failed, for the caller to abort or abandon."""
    producer = sender.producer
    step = time.perf_counter_ns()
    adding: asyncio.Future[None] | None = None
    refused: Exception | None = None
    if offsets:
        try:
            if before_offsets is not None:
                before_offsets()
        except Exception as exc:  # raised once nothing is in flight: the caller aborts next
            refused = exc
        else:
            adding = asyncio.ensure_future(producer.send_offsets_to_transaction(offsets, group_id))
    try:
        acked = await sender.flush()
    except BaseException:
        if adding is not None:  # settled before the caller aborts; its own error says less than this one
            await asyncio.gather(adding, return_exceptions=True)
        raise
    if refused is not None:
        raise refused
    if trace is not None:
        trace.duration("commit.produce-acks", step)
        step = time.perf_counter_ns()
    if adding is not None:
        await adding
        if trace is not None:
            trace.duration("commit.offsets", step)
            step = time.perf_counter_ns()
    await producer.commit_transaction()
    if trace is not None:
        trace.duration("commit.end-txn", step)
    return acked
