"""A backfill's range, from the command line's words to what the queries need.

`--from`: `earliest`, an ISO-8601 time (the connector's `startingTimestamp`: the first offset at or
after it in each partition) or the connector's offsets JSON. `--until`: `latest` (the end of each
partition when the backfill starts; `availableNow` stops there by itself) or an ISO-8601 time, turned
here into the first offset at or after it in each partition, asked of Kafka once before the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from streamlet.errors import ConfigError
from streamlet.runtime.client_settings import ClientRole, client_kwargs, start_client
from streamlet.spark.query import Bounds


def _iso_ms(text: str, flag: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ConfigError(f"{flag} {text!r}: expected 'earliest', 'latest', an ISO-8601 time or offsets JSON") from exc
    if moment.tzinfo is None:
        raise ConfigError(f"{flag} {text!r}: give the time zone (e.g. 2024-01-31T00:00:00Z or +01:00)")
    return int(moment.timestamp() * 1000)


async def offsets_at(settings: dict[str, Any], topics: Iterable[str], when_ms: int) -> dict[str, dict[str, int]]:
    """Per topic and partition: the first offset whose timestamp is at or after `when_ms` (the end offset
    where there is none)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    kwargs = client_kwargs(settings, ClientRole.MAIN_CONSUMER)
    consumer = AIOKafkaConsumer(**kwargs, enable_auto_commit=False)
    await start_client(consumer, kwargs)
    try:
        partitions = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        found = await consumer.offsets_for_times({tp: when_ms for tp in partitions})
        ends = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    result: dict[str, dict[str, int]] = {}
    for tp in partitions:
        hit = found.get(tp)
        result.setdefault(tp.topic, {})[str(tp.partition)] = hit.offset if hit is not None else ends[tp]
    return result


async def backfill_bounds(settings: dict[str, Any], source_topics: Iterable[str], start: str, until: str) -> Bounds:
    starting, starting_ms = "earliest", None
    if start in ("earliest", "latest"):
        starting = start
    elif start.lstrip().startswith("{"):
        try:
            json.loads(start)
        except ValueError as exc:
            raise ConfigError(f"--from: not valid offsets JSON: {exc}") from exc
        starting = start
    else:
        starting_ms = _iso_ms(start, "--from")
    until_offsets = None
    if until != "latest":
        until_offsets = await offsets_at(settings, list(source_topics), _iso_ms(until, "--until"))
    return Bounds(starting=starting, starting_timestamp_ms=starting_ms, until_offsets=until_offsets, bounded=True)
