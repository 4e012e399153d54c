"""A backfill's range, from the command line's words to what each query needs.

`--from`: `earliest`, `latest`, an ISO-8601 time (turned here into the first offset at or after it in
each partition, asked of Kafka once before the run) or the connector's offsets JSON
(`{"topic": {"0": 42, "1": -2}}`, -2 for earliest, -1 for latest) naming every partition of every input
topic. `--until`: `latest` (the end of each partition when the backfill starts; `availableNow` stops
there by itself) or an ISO-8601 time, turned into offsets the same way.

The range is the application's input's. A topology has a query per sub-topology, and Spark's Kafka
source wants, for specific offsets, exactly the partitions that query reads: so `for_query` gives each
query the part of the JSON that names its input topics, and its repartition topics (written by the
queries before it in this backfill) from their earliest offset.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from streamlet.errors import ConfigError
from streamlet.kafka.client_settings import ClientRole, client_kwargs, start_client
from streamlet.kafka.topic_manager import admin_client, describe_partition_counts
from streamlet.spark.plan import SubTopologyPlan
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
    where there is none). The partitions come from the cluster's metadata, asked with an admin client (a
    consumer that subscribed to nothing knows no topic's partitions)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    wanted = list(topics)
    async with admin_client(client_kwargs(settings, ClientRole.ADMIN)) as admin:
        counts = await describe_partition_counts(admin, wanted)
    missing = sorted(set(wanted) - counts.keys())
    if missing:
        raise ConfigError(f"the input topic(s) {missing} do not exist: nothing to backfill from them")
    partitions = [TopicPartition(t, p) for t in wanted for p in range(counts[t])]
    kwargs = client_kwargs(settings, ClientRole.MAIN_CONSUMER)
    consumer = AIOKafkaConsumer(**kwargs, enable_auto_commit=False)
    await start_client(consumer, kwargs)
    try:
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
    sources = list(source_topics)
    starting = start
    if start in ("earliest", "latest"):
        pass
    elif start.lstrip().startswith("{"):
        parse_offsets(start)
    else:
        starting = json.dumps(await offsets_at(settings, sources, _iso_ms(start, "--from")))
    until_offsets = None
    if until != "latest":
        until_offsets = await offsets_at(settings, sources, _iso_ms(until, "--until"))
    return Bounds(starting=starting, until_offsets=until_offsets, bounded=True)


def parse_offsets(text: str) -> dict[str, dict[str, int]]:
    """`--from`'s offsets JSON as topic -> partition (a string, as in the JSON) -> offset."""
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict):
            raise ValueError("expected an object of topics")
        return {str(topic): {str(int(p)): int(o) for p, o in parts.items()} for topic, parts in parsed.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(f"--from: not valid offsets JSON ({{\"topic\": {{\"0\": offset, ...}}}}): {exc}") from exc


def _check_offsets(offsets: dict[str, dict[str, int]], inputs: dict[str, int]) -> None:
    """Raise `ConfigError` unless `offsets` names exactly every partition of every input topic
    (`inputs`: topic -> partition count)."""
    unknown = sorted(set(offsets) - set(inputs))
    if unknown:
        raise ConfigError(f"--from: {', '.join(unknown)} is not an input topic of the application "
                          f"(its input topics: {', '.join(sorted(inputs))})")
    for topic, count in sorted(inputs.items()):
        named = offsets.get(topic)
        if named is None:
            raise ConfigError(f"--from: the offsets JSON does not name input topic {topic!r} "
                              "(name every input topic; -2 means earliest, -1 latest)")
        want = {str(p) for p in range(count)}
        if set(named) != want:
            raise ConfigError(f"--from: topic {topic!r} has partitions 0..{count - 1}; the offsets JSON names "
                              f"{sorted(named, key=int)} (name each partition once; -2 means earliest, -1 latest)")


def for_query(bounds: Bounds, plan: SubTopologyPlan, inputs: dict[str, int]) -> Bounds:
    """`bounds` (the application's input's) as the query of `plan` needs them: its input topics from where
    the backfill starts, its repartition topics from their earliest offset and to their end."""
    internal = {plan.resolve_topic(t) for t in plan.subtopology.source_topics if t in plan.topology.internal_topics}
    external = [t for t in plan.source_topics if t not in internal]
    if not external:
        return Bounds(bounded=bounds.bounded)
    if not internal and not bounds.starting.lstrip().startswith("{"):
        return bounds
    if bounds.starting.lstrip().startswith("{"):
        offsets = parse_offsets(bounds.starting)
        _check_offsets(offsets, inputs)
    else:
        where = -1 if bounds.starting == "latest" else -2
        offsets = {t: {str(p): where for p in range(inputs[t])} for t in external}
    mine: dict[str, dict[str, int]] = {t: offsets[t] for t in external}
    for topic in internal:
        mine[topic] = {str(p): -2 for p in range(plan.partition_counts[topic])}
    return replace(bounds, starting=json.dumps(mine))
