"""Bring a task's Spark state forward to what Kafka has committed, from the stores' changelogs.

Under exactly-once a Spark task commits its batch in a Kafka transaction before Spark commits its
state. If the driver dies between the two, Spark replays the batch with the state of the batch
before, while Kafka already holds the batch's output, offsets and changelog records. The same gap,
only wider, is there when an application comes to Spark from the asyncio runtime: Spark's state is
empty and Kafka holds the whole changelog and the group's offsets. Both are closed the same way: the
changelog tail after the position Spark's state reflects (the start, with no state) is read
`read_committed` into the task's stores by the asyncio runtime's `ChangelogReader`, so a store is
rebuilt the same way, and as fast, in both engines.
"""

from __future__ import annotations

import asyncio
from typing import Any

from streamlet.actors.stream_task import StreamTask
from streamlet.kafka.changelog_reader import ChangelogReader
from streamlet.kafka.client_settings import ClientRole, client_kwargs, start_client, stop_client


async def _restore(settings: dict[str, Any], task: StreamTask, positions: dict[str, int]) -> dict[str, int]:
    from aiokafka import AIOKafkaConsumer

    if not task.state.changelog_partitions():
        return {}
    kwargs = {**client_kwargs(settings, ClientRole.RESTORE_CONSUMER), "enable_auto_commit": False,
              "isolation_level": "read_committed", "group_id": None}
    consumer = AIOKafkaConsumer(**kwargs)
    await start_client(consumer, kwargs)
    try:
        # Up to each changelog's stable end as the restore begins, without waiting for transactions still
        # open on it: the batch's begin has already waited until the task's committed offsets were stable.
        reader = ChangelogReader(consumer, read_committed=True, wait_for_open_transactions=False)
        return await reader.restore(task, positions)
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
