"""Where a query with a fresh checkpoint starts when the group `application.id` has committed offsets.

Spark's Kafka source knows only its checkpoint. An application that ran on the asyncio runtime (or on
Spark with another checkpoint) has its position in the group's committed offsets instead, as Kafka
Streams keeps it; a fresh query starts there, partition by partition, and where nothing is committed
from `auto.offset.reset` (a repartition topic: from its start). Under exactly-once the tasks also skip
input below the committed offsets, so this is what makes `auto.offset.reset=latest` lose nothing and
spares re-reading what was processed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streamlet.kafka.client_settings import ClientRole, client_kwargs, start_client, stop_client
from streamlet.kafka.fenced_offsets import fetch_stable_offsets

_EARLIEST, _LATEST = -2, -1


def is_fresh(checkpoint: Path) -> bool:
    """No micro-batch was ever planned in this checkpoint (Spark then uses `startingOffsets`)."""
    offsets = checkpoint / "offsets"
    return not offsets.is_dir() or not any(offsets.iterdir())


async def committed_starting_offsets(settings: dict[str, Any], partitions: dict[str, int], internal: set[str],
                                     reset: str) -> str | None:
    """The connector's `startingOffsets` JSON for `partitions` (topic -> count) from the group's committed
    offsets, or None if the group has none for them."""
    from aiokafka import AIOKafkaConsumer

    kwargs = {**client_kwargs(settings, ClientRole.MAIN_CONSUMER), "group_id": settings["application.id"],
              "enable_auto_commit": False}
    consumer = AIOKafkaConsumer(**kwargs)
    await start_client(consumer, kwargs)
    try:
        wanted = [(t, p) for t, n in sorted(partitions.items()) for p in range(n)]
        timeout = int(settings.get("transaction.timeout.ms") or 10000) / 1000 + 30
        found = await fetch_stable_offsets(consumer, wanted, timeout)
    finally:
        await stop_client(consumer)
    if all(found.get(tp) is None for tp in wanted):
        return None
    default = _LATEST if reset == "latest" else _EARLIEST
    result: dict[str, dict[str, int]] = {}
    for topic, partition in wanted:
        offset = found.get((topic, partition))
        if offset is None:
            offset = _EARLIEST if topic in internal else default
        result.setdefault(topic, {})[str(partition)] = offset
    return json.dumps(result)
