"""Topic preparation at start-up: check the user's topics, create the application's internal ones.

Kafka Streams fails fast when a source topic is missing, creates repartition topics with the
partition count of the sub-topology that writes them, and changelog topics (compacted) with one
partition per task of the sub-topology that owns the store. This module does the same before the
consumer joins the group, and returns the partition count of every topic the app reads or writes,
which the sinks need for Java-compatible partitioning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streamlet.config import StreamsConfig
from streamlet.errors import StreamsError
from streamlet.topology import Topology

log = logging.getLogger(__name__)


class MissingSourceTopicError(StreamsError):
    """A topic the topology reads (or writes) does not exist."""


@dataclass
class TopicPlan:
    source_topics: set[str] = field(default_factory=set)
    partition_counts: dict[str, int] = field(default_factory=dict)
    topic_to_subtopology: dict[str, int] = field(default_factory=dict)
    subtopology_partitions: dict[int, int] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)


def plan_partitions(topology: Topology, resolve: Any, existing: dict[str, int]) -> TopicPlan:
    """Partition counts of every sub-topology and internal topic, from the user topics' counts."""
    plan = TopicPlan()
    subs = topology.sub_topologies()
    writer_of: dict[str, int] = {}
    for sub in subs:
        for t in sub.sink_topics:
            writer_of[t] = sub.id
        for t in sub.source_topics:
            plan.topic_to_subtopology[resolve(t)] = sub.id
            plan.source_topics.add(resolve(t))
    counts: dict[str, int] = {}
    for name, spec in topology.internal_topics.items():
        if spec.num_partitions:
            counts[name] = spec.num_partitions
    missing = sorted({t for sub in subs for t in sub.source_topics + sub.sink_topics
                      if t not in topology.internal_topics and resolve(t) not in existing})
    if missing:
        raise MissingSourceTopicError(
            f"topics {missing} do not exist; create them before starting the application"
        )
    for _ in range(len(subs) + 1):  # internal topics may feed each other: iterate to a fixed point
        for sub in subs:
            known = [existing[resolve(t)] if t not in topology.internal_topics else counts.get(t)
                     for t in sub.source_topics]
            if all(k is not None for k in known):
                plan.subtopology_partitions[sub.id] = max(k for k in known if k is not None)
        for name in topology.internal_topics:
            if name not in counts and writer_of.get(name) in plan.subtopology_partitions:
                counts[name] = plan.subtopology_partitions[writer_of[name]]
    unresolved = [s.id for s in subs if s.id not in plan.subtopology_partitions]
    if unresolved:
        raise StreamsError(f"cannot determine the partition count of sub-topologies {unresolved}")
    for name, n in counts.items():
        plan.partition_counts[resolve(name)] = n
    for sub in subs:
        for t in sub.source_topics + sub.sink_topics:
            if t not in topology.internal_topics:
                plan.partition_counts[resolve(t)] = existing[resolve(t)]
    return plan


async def prepare_topics(topology: Topology, config: StreamsConfig, resolve: Any) -> TopicPlan:
    app_id = config.application_id
    admin = AIOKafkaAdminClient(bootstrap_servers=config["bootstrap.servers"])
    await admin.start()
    try:
        existing = await _partition_counts(admin)
        plan = plan_partitions(topology, resolve, existing)
        replication = int(config["replication.factor"])
        wanted: dict[str, tuple[int, dict[str, str]]] = {}
        for name, spec in topology.internal_topics.items():
            cfg = {"cleanup.policy": "delete", **spec.config}
            wanted[resolve(name)] = (plan.partition_counts[resolve(name)], cfg)
        for sub in topology.sub_topologies():
            for store in sub.stores:
                builder = topology.store_builders[store]
                if builder.logging_enabled:
                    topic = f"{app_id}-{store}-changelog"
                    cfg = {"cleanup.policy": "compact", **(builder.logging_config or {})}
                    wanted[topic] = (plan.subtopology_partitions[sub.id], cfg)
                    plan.partition_counts[topic] = plan.subtopology_partitions[sub.id]
        to_create = [
            NewTopic(t, n, replication if replication > 0 else 1, topic_configs=cfg)
            for t, (n, cfg) in wanted.items() if t not in existing
        ]
        if to_create:
            await admin.create_topics(to_create)
            plan.created = [t.name for t in to_create]
            log.info("created internal topics %s", plan.created)
            existing = await _partition_counts(admin)
        for t, (n, _cfg) in wanted.items():
            have = existing.get(t)
            if have is None:
                raise StreamsError(f"internal topic {t} could not be created")
            if have != n:
                raise StreamsError(f"internal topic {t} has {have} partitions, expected {n}")
        return plan
    finally:
        await admin.close()


async def _partition_counts(admin: Any) -> dict[str, int]:
    """Partition counts of existing topics, without triggering the broker's topic auto-creation."""
    names = [t for t in await admin.list_topics() if not t.startswith("__")]
    if not names:
        return {}
    described = await admin.describe_topics(names)
    return {d["topic"]: len(d["partitions"]) for d in described if d.get("error_code", 0) == 0}
