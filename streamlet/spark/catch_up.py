"""Bring a task's Spark state forward to what Kafka has committed, from the stores' changelogs.

Under exactly-once a Spark task commits its batch in a Kafka transaction before Spark commits its
state. If the driver dies between the two, Spark replays the batch with the state of the batch
before, while Kafka already holds the batch's output, offsets and changelog records. The same gap,
only wider, is there when an application comes to Spark from the asyncio runtime: Spark's state is
empty and Kafka holds the whole changelog and the group's offsets. Both are closed the same way: the
changelog tail after the position Spark's state reflects (the start, with no state) is read
`read_committed` into the task's stores, exactly as the asyncio runtime restores a store.
"""

from __future__ import annotations

import asyncio
from typing import Any

from streamlet.actors.stream_task import StreamTask
from streamlet.kafka.client_settings import ClientRole, client_kwargs, start_client, stop_client


async def _restore(settings: dict[str, Any], task: StreamTask, positions: dict[str, int]) -> dict[str, int]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    changelogs = task.state.changelog_partitions()
    if not changelogs:
        return {}
    kwargs = {**client_kwargs(settings, ClientRole.RESTORE_CONSUMER), "enable_auto_commit": False,
              "isolation_level": "read_committed", "group_id": None}
    consumer = AIOKafkaConsumer(**kwargs)
    await start_client(consumer, kwargs)
    try:
        store_of = {TopicPartition(topic, partition): store for store, (topic, partition) in changelogs.items()}
        consumer.assign(list(store_of))
        ends = await consumer.end_offsets(list(store_of))  # read_committed: the last stable offsets
        begins = await consumer.beginning_offsets(list(store_of))
        reached: dict[str, int] = {}
        for tp in store_of:
            start = max(positions.get(f"{tp.topic}:{tp.partition}", 0), begins[tp])
            consumer.seek(tp, start)
            reached[f"{tp.topic}:{tp.partition}"] = max(start, ends[tp])
        pending = {tp for tp in store_of if await consumer.position(tp) < ends[tp]}
        while pending:
            batches = await consumer.getmany(*pending, timeout_ms=200)
            for tp, records in batches.items():
                entries = [(r.key, r.value, r.timestamp) for r in records if r.offset < ends[tp]]
                if entries:
                    task.state.registered[store_of[tp]].restore(entries)
            pending = {tp for tp in pending if await consumer.position(tp) < ends[tp]}
        return reached
    finally:
        await stop_client(consumer)


def restore_changelog_tails(settings: dict[str, Any], task: StreamTask, positions: dict[str, int]) -> dict[str, int]:
    """Apply each logged store's changelog from `positions` ('topic:partition' -> offset; absent: the
    start) to its stable end into the task's stores; returns the new positions."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_restore(settings, task, positions))
    finally:
        loop.close()
