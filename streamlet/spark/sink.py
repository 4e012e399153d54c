"""The queries' sink: each micro-batch's output rows go to Kafka with their timestamps and headers.

Spark's own Kafka sink cannot set record timestamps, which downstream stream time and windows need, so
output goes through `foreachBatch`: every Spark partition of the batch (one task's output, in the order
the task produced it) is sent by an idempotent aiokafka producer and acknowledged before the batch
counts as done. A batch that fails is replayed from Spark's checkpoint: at-least-once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from functools import partial
from typing import Any

from streamlet.runtime.client_settings import ClientRole, client_kwargs, start_client


async def _send(settings: dict[str, Any], rows: list[Any]) -> None:
    from aiokafka import AIOKafkaProducer

    kwargs = {**client_kwargs(settings, ClientRole.PRODUCER), "acks": "all", "enable_idempotence": True}
    producer = AIOKafkaProducer(**kwargs)
    await start_client(producer, kwargs)
    try:
        pending = [await producer.send(topic, value=value, key=key, partition=partition, timestamp_ms=timestamp,
                                       headers=[(h[0], h[1]) for h in headers] if headers else None)
                   for topic, partition, key, value, timestamp, headers in rows]
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


def _send_partition(settings: dict[str, Any], rows: Iterable[Any]) -> None:
    batch = [tuple(row) for row in rows]
    if batch:
        asyncio.run(_send(settings, batch))


def write_batch(settings: dict[str, Any], batch: Any, batch_id: int) -> None:
    """`foreachBatch`'s function: one pass over the batch (a second action would recompute its state)."""
    batch.foreachPartition(partial(_send_partition, settings))
