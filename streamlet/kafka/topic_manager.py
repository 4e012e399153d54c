"""Topic preparation at start-up: check the user's topics, then create and verify the internal ones.

Kafka Streams fails fast (MissingSourceTopicException) when a topic the application reads does not
exist, and creates the topics the application owns before it joins its group:

* repartition topics (`<application.id>-<name>`): as many partitions as the sub-topology that writes
  them has tasks, i.e. the max partition count of that sub-topology's source topics. Repartition topics
  can feed further sub-topologies, so the counts are resolved iteratively to a fixed point.
* changelog topics (`<application.id>-<store>-changelog`, for stores with logging enabled): compacted,
  one partition per task of the sub-topology that owns the store.

The two inputs of a join (stream-stream, stream-table, table-table) are co-partitioned, as Kafka Streams'
`CopartitionedTopicsEnforcer` requires: user topics with different partition counts stop the start-up
(`Topics not co-partitioned: [{a=2, b=3}]`) instead of silently running max(count) tasks, and a
repartition topic among a join's inputs gets the partition count of the join's user topics (or, when
all of them are repartition topics, the largest), not the count of the sub-topology that writes it.

An existing internal topic with the wrong partition count is an error (the keys would no longer map to
the tasks that own their state). Several instances start at once, so "already exists" from a
concurrent creation is expected and fine.

Two layers: `plan_internal_topics` is pure (topology + partition counts in, plan out) so the counting
rules are testable without a broker; `ensure_topics` / `prepare_topics` do the I/O with aiokafka's
admin client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.protocol.metadata import MetadataRequest

from streamlet.errors import StreamsError, TopologyError
from streamlet.kafka.client_settings import ClientRole, KafkaAuthorizationError, client_kwargs, start_client
from streamlet.kafka.internal_topic_check import NONE as NO_CHECK
from streamlet.kafka.internal_topic_check import check_internal_topics
from streamlet.topology import SubTopology, Topology

log = logging.getLogger(__name__)

# Kafka Streams' defaults for the topics it owns (checked against kafka-streams 3.9.1's
# RepartitionTopicConfig / UnwindowedUnversionedChangelogTopicConfig). Repartition topics keep their
# records whatever their timestamps (retention.ms=-1); the RepartitionPurger deletes them once committed.
REPARTITION_TOPIC_DEFAULTS: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "segment.bytes": "52428800",
    "retention.ms": "-1",
    "message.timestamp.type": "CreateTime",
}
CHANGELOG_TOPIC_DEFAULTS: Mapping[str, str] = {
    "cleanup.policy": "compact",
    "message.timestamp.type": "CreateTime",
}

_NO_ERROR = 0
_TOPIC_AUTHORIZATION_FAILED = 29
_TOPIC_ALREADY_EXISTS = 36


class MissingTopicsError(StreamsError):
    """Topics the topology reads or writes do not exist; names them all."""

    def __init__(self, missing_sources: Iterable[str], missing_sinks: Iterable[str] = ()) -> None:
        self.missing_sources = sorted(missing_sources)
        self.missing_sinks = sorted(missing_sinks)
        parts = []
        if self.missing_sources:
            parts.append(f"source topics {self.missing_sources}")
        if self.missing_sinks:
            parts.append(f"sink topics {self.missing_sinks}")
        super().__init__(f"{' and '.join(parts)} do not exist; create them before starting the application "
                         "(`streamlet topics create MODULE:TOPOLOGY` creates a topology's source and sink topics)")


class MissingSourceTopicError(MissingTopicsError):
    """A topic the topology reads does not exist (Kafka Streams: MissingSourceTopicException)."""


class MissingSinkTopicError(MissingTopicsError):
    """Output topics still missing after waiting for them (Kafka Streams' send times out likewise):
    streamlet partitions output itself, as Java does, and needs their partition counts."""


class InternalTopicError(StreamsError):
    """An internal topic cannot be created, or exists with a partition count that does not match."""


# -- names ---------------------------------------------------------------------------------------------------
def internal_topic_name(application_id: str, name: str) -> str:
    return f"{application_id}-{name}"


def changelog_topic_name(application_id: str, store_name: str) -> str:
    return f"{application_id}-{store_name}-changelog"


def resolve_topic(topology: Topology, application_id: str, name: str) -> str:
    """The real name of a topic as the topology names it (internal topics get the application prefix)."""
    return internal_topic_name(application_id, name) if name in topology.internal_topics else name


# -- the plan (pure) ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InternalTopic:
    name: str  # real name
    kind: str  # "repartition" | "changelog" | "dead-letter"
    partitions: int
    config: Mapping[str, str]


@dataclass(frozen=True)
class TopicPlan:
    """Every topic the application touches, with partition counts; input of `ensure_topics`."""

    application_id: str
    source_topics: dict[str, int]
    """Real name of every source topic -> id of the sub-topology reading it (the assignor's input)."""
    subtopology_partitions: dict[int, int]
    """Sub-topology id -> number of tasks."""
    user_topics: dict[str, int]
    """Partition counts of the non-internal topics the application reads or writes."""
    internal_topics: dict[str, InternalTopic] = field(default_factory=dict)
    changelog_topics: dict[str, str] = field(default_factory=dict)
    """Store name -> real changelog topic name, for stores with logging enabled."""
    missing_sinks: frozenset[str] = frozenset()
    """Sink topics that did not exist at start-up: output waits for them (`await_sink_topics`)."""

    @property
    def partition_counts(self) -> dict[str, int]:
        counts = dict(self.user_topics)
        counts.update((name, t.partitions) for name, t in self.internal_topics.items())
        return counts


def user_topics(topology: Topology) -> tuple[set[str], set[str]]:
    """(sources, sinks): the topics the topology reads and writes that the application does not own."""
    sources: set[str] = set()
    sinks: set[str] = set()
    for sub in topology.sub_topologies():
        sources.update(t for t in sub.source_topics if t not in topology.internal_topics)
        sinks.update(t for t in sub.sink_topics if t not in topology.internal_topics)
    return sources, sinks - sources


def plan_internal_topics(
    topology: Topology, application_id: str, source_partition_counts: Mapping[str, int]
) -> TopicPlan:
    """Resolve task counts and internal topic partition counts from the user topics' partition counts.

    `source_partition_counts`: partition counts of existing topics by real name; must cover every user
    source topic (else MissingSourceTopicError). Sink topics may be missing, as in Kafka Streams, which
    checks only its sources: they are listed in the plan's `missing_sinks`.
    """
    subs = topology.sub_topologies()
    sources, sinks = user_topics(topology)
    missing_sources = {t for t in sources if t not in source_partition_counts}
    missing_sinks = {t for t in sinks if t not in source_partition_counts}
    if missing_sources:
        raise MissingSourceTopicError(missing_sources, missing_sinks)

    writers: dict[str, set[int]] = {}
    for sub in subs:
        for t in sub.sink_topics:
            if t in topology.internal_topics:
                writers.setdefault(t, set()).add(sub.id)

    enforced: dict[str, int] = {
        name: spec.num_partitions for name, spec in topology.internal_topics.items() if spec.num_partitions
    }

    def resolve(pinned: Mapping[str, int]) -> tuple[dict[str, int], dict[int, int]]:
        """Internal topics' partition counts and sub-topologies' task counts, from the pinned counts up."""
        internal_counts = dict(pinned)
        tasks: dict[int, int] = {}

        def count_of(topic: str) -> int | None:
            if topic in topology.internal_topics:
                return internal_counts.get(topic)
            return source_partition_counts[topic]

        changed = True
        while changed:  # each pass resolves at least one more sub-topology or topic, or stops
            changed = False
            for sub in subs:
                if sub.id in tasks:
                    continue
                # A repartition topic the sub-topology writes itself (a cogroup's regrouped stream) follows
                # its other sources, as in Kafka Streams.
                counts = [count_of(t) for t in sub.source_topics
                          if not (t in topology.internal_topics and t in sub.sink_topics)]
                if counts and all(c is not None for c in counts):
                    tasks[sub.id] = max(c for c in counts if c is not None)
                    changed = True
            for name, spec in topology.internal_topics.items():
                if name in internal_counts:
                    continue
                if spec.copartition:
                    resolved = _copartitioned_count(name, subs, count_of)
                    if resolved is not None:
                        internal_counts[name] = resolved
                        changed = True
                    continue
                upstream = writers.get(name, set())
                if upstream and upstream <= tasks.keys():
                    internal_counts[name] = max(tasks[s] for s in upstream)
                    changed = True
        return internal_counts, tasks

    pinned = dict(enforced)
    groups = topology.copartition_topic_groups()
    for group in groups:  # joins over user topics: those decide, and must agree
        external = {t: source_partition_counts[t] for t in group if t not in topology.internal_topics}
        if external:
            n = _same_partitions(external)
            _pin_repartition_topics(topology, application_id, group, n, enforced, pinned)
    internal_counts, tasks = resolve(pinned)
    for _ in range(len(groups)):  # joins over repartition topics only: the largest (or the enforced) count
        repinned = dict(pinned)
        for group in groups:
            if all(t in topology.internal_topics for t in group) and all(t in internal_counts for t in group):
                n = _repartition_group_count(topology, application_id, group, enforced, internal_counts)
                _pin_repartition_topics(topology, application_id, group, n, enforced, repinned)
        if repinned == pinned:
            break
        pinned = repinned
        internal_counts, tasks = resolve(pinned)

    unresolved = sorted(name for name in topology.internal_topics if name not in internal_counts)
    if unresolved:
        raise InternalTopicError(
            f"cannot determine the partition count of internal topics {unresolved}: no sub-topology with "
            "known partitions writes them (give them a partition count)"
        )
    stuck = sorted(sub.id for sub in subs if sub.id not in tasks)
    if stuck:
        raise InternalTopicError(f"cannot determine the number of tasks of sub-topologies {stuck}")

    internal: dict[str, InternalTopic] = {}
    for name, spec in topology.internal_topics.items():
        real = internal_topic_name(application_id, name)
        defaults = CHANGELOG_TOPIC_DEFAULTS if spec.kind == "changelog" else REPARTITION_TOPIC_DEFAULTS
        internal[real] = InternalTopic(real, spec.kind, internal_counts[name], {**defaults, **spec.config})
    changelogs: dict[str, str] = {}
    for sub in subs:
        for store in sub.stores:
            builder = topology.store_builders[store]
            if not builder.logging_enabled:
                continue
            real = changelog_topic_name(application_id, store)
            config = {**CHANGELOG_TOPIC_DEFAULTS, **(getattr(builder, "logging_config", None) or {})}
            internal[real] = InternalTopic(real, "changelog", tasks[sub.id], config)
            changelogs[store] = real

    return TopicPlan(
        application_id=application_id,
        source_topics={resolve_topic(topology, application_id, t): sub.id for sub in subs for t in sub.source_topics},
        subtopology_partitions=dict(sorted(tasks.items())),
        user_topics={t: source_partition_counts[t] for t in sorted(sources | sinks) if t not in missing_sinks},
        internal_topics=internal,
        changelog_topics=changelogs,
        missing_sinks=frozenset(missing_sinks),
    )


def _copartitioned_count(topic: str, subs: list[SubTopology], count_of: Callable[[str], int | None]) -> int | None:
    """The partition count of a topic co-partitioned with the other sources of its reader, once they are known."""
    for sub in subs:
        if topic in sub.source_topics:
            counts = [count_of(t) for t in sub.source_topics if t != topic]
            if counts and all(c is not None for c in counts):
                return max(c for c in counts if c is not None)
            return None
    return None


def _java_map(counts: Mapping[str, int]) -> str:
    """A map as Java prints a `TreeMap` (Kafka Streams' error messages name topics so)."""
    return "{" + ", ".join(f"{t}={n}" for t, n in sorted(counts.items())) + "}"


def _same_partitions(external: Mapping[str, int]) -> int:
    """The partition count shared by a join's user topics; a join over topics with different counts cannot
    run (partition p of one would meet keys of other partitions of the other): Kafka Streams refuses it."""
    if len(set(external.values())) > 1:
        raise TopologyError(f"Invalid topology: Topics not co-partitioned: [{_java_map(external)}]")
    return next(iter(external.values()))


def _repartition_group_count(topology: Topology, application_id: str, group: list[str],
                             enforced: Mapping[str, int], counts: Mapping[str, int]) -> int:
    """For a join over repartition topics only: the count they were given (which must agree), else the largest."""
    given = {internal_topic_name(application_id, t): enforced[t] for t in group if t in enforced}
    if given:
        if len(set(given.values())) > 1:
            raise TopologyError("Invalid topology: Following topics do not have the same number of partitions: "
                                f"[{_java_map(given)}]")
        return next(iter(given.values()))
    return max(counts[t] for t in group)


def _pin_repartition_topics(topology: Topology, application_id: str, group: list[str], n: int,
                            enforced: Mapping[str, int], pinned: dict[str, int]) -> None:
    """Give the group's repartition topics `n` partitions; one with another count of its own is an error."""
    for t in group:
        if t not in topology.internal_topics:
            continue
        if t in enforced and enforced[t] != n:
            raise TopologyError(
                f"Invalid topology: Number of partitions [{enforced[t]}] of repartition topic "
                f"[{internal_topic_name(application_id, t)}] doesn't match number of partitions [{n}] of the "
                "source topic.")
        pinned[t] = n


# -- I/O -----------------------------------------------------------------------------------------------------------
@asynccontextmanager
async def admin_client(admin_or_bootstrap: Any) -> AsyncIterator[Any]:
    """Use the caller's started admin client, or start (and close) one for a bootstrap string or for
    admin keyword arguments (`client_settings.client_kwargs(config, ClientRole.ADMIN)`: secured clusters)."""
    if isinstance(admin_or_bootstrap, str):
        kwargs: dict[str, Any] = {"bootstrap_servers": admin_or_bootstrap}
    elif isinstance(admin_or_bootstrap, Mapping):
        kwargs = dict(admin_or_bootstrap)
    else:
        yield admin_or_bootstrap
        return
    admin = AIOKafkaAdminClient(**kwargs)
    await start_client(admin, kwargs)
    try:
        yield admin
    finally:
        await admin.close()


async def describe_partition_counts(admin: Any, topics: Iterable[str] | None = None) -> dict[str, int]:
    """Partition counts of the existing topics among `topics` (all topics when None).

    Asks for the metadata of *all* topics: naming a missing topic in a metadata request would make a
    broker with `auto.create.topics.enable=true` create it, with the wrong partition count.
    """
    wanted = None if topics is None else set(topics)
    counts: dict[str, int] = {}
    for entry in await admin.describe_topics(None):
        name = entry["topic"]
        if entry.get("error_code", _NO_ERROR) != _NO_ERROR or not entry["partitions"]:
            continue
        if wanted is None or name in wanted:
            counts[name] = len(entry["partitions"])
    return counts


async def _broker_default_replication(admin: Any) -> int:
    """The cluster's `default.replication.factor` (aiokafka's CreateTopics v3 cannot send -1 for it)."""
    cluster = await admin.describe_cluster()
    broker_ids = sorted(b["node_id"] for b in cluster["brokers"])
    if not broker_ids:
        raise InternalTopicError("the cluster reports no brokers")
    responses = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, str(broker_ids[0]), {"default.replication.factor": None})]
    )
    for response in responses:
        for resource in response.resources:
            for entry in resource[4]:  # (name, value, read_only, ...) per config entry
                if entry[0] == "default.replication.factor" and entry[1] is not None:
                    return int(entry[1])
    return min(3, len(broker_ids))


async def ensure_topics(
    admin_or_bootstrap: Any,
    plan: TopicPlan,
    *,
    replication_factor: int = -1,
    timeout_s: float = 30.0,
) -> dict[str, int]:
    """Create the plan's missing internal topics and verify them all; returns every topic's partition count.

    `replication_factor` -1 uses the broker's default. Idempotent, and safe while other instances of the
    same application do the same. Raises InternalTopicError when an internal topic exists with another
    partition count, or cannot be created.
    """
    async with admin_client(admin_or_bootstrap) as admin:
        existing = await describe_partition_counts(admin, plan.internal_topics)
        _check_partition_counts(plan, existing)
        to_create = [t for name, t in sorted(plan.internal_topics.items()) if name not in existing]
        if to_create:
            replication = replication_factor if replication_factor > 0 else await _broker_default_replication(admin)
            response = await admin.create_topics(
                [NewTopic(t.name, t.partitions, replication, topic_configs=dict(t.config)) for t in to_create]
            )
            failures = []
            for topic_error in response.topic_errors:
                name, code = topic_error[0], topic_error[1]
                message = topic_error[2] if len(topic_error) > 2 else None
                if code == _TOPIC_ALREADY_EXISTS:
                    log.info("internal topic %s was created concurrently (another instance)", name)
                elif code == _TOPIC_AUTHORIZATION_FAILED:
                    raise KafkaAuthorizationError(
                        f"not authorized to create internal topic {name!r}: the application's principal needs "
                        f"CREATE on it (Kafka Streams' ACLs: ALL on the topics prefixed {plan.application_id!r})")
                elif code != _NO_ERROR:
                    failures.append(f"{name}: error {code} {message or ''}".strip())
            if failures:
                raise InternalTopicError(f"could not create internal topics: {'; '.join(failures)}")
            log.info("created internal topics %s", [t.name for t in to_create])
            existing = await _wait_until_visible(admin, plan, timeout_s)
            _check_partition_counts(plan, existing)
    return plan.partition_counts


def _check_partition_counts(plan: TopicPlan, existing: Mapping[str, int]) -> None:
    wrong = [
        f"{name} has {existing[name]} partitions, expected {t.partitions}"
        for name, t in sorted(plan.internal_topics.items())
        if name in existing and existing[name] != t.partitions
    ]
    if wrong:
        raise InternalTopicError(
            "existing internal topics do not match the topology: " + "; ".join(wrong)
            + " (delete them, e.g. with the application reset tool, or change the topology back)"
        )


async def _wait_until_visible(admin: Any, plan: TopicPlan, timeout_s: float) -> dict[str, int]:
    """Topic creation is asynchronous in the cluster: poll metadata until every internal topic shows up."""
    deadline = time.monotonic() + timeout_s
    while True:
        existing = await describe_partition_counts(admin, plan.internal_topics)
        missing = sorted(set(plan.internal_topics) - existing.keys())
        if not missing:
            return existing
        if time.monotonic() > deadline:
            raise InternalTopicError(f"internal topics {missing} did not appear within {timeout_s}s of creation")
        await anyio.sleep(0.1)


async def _check_topics_authorized(admin: Any, sources: set[str], sinks: set[str]) -> None:
    """A topic the principal may not describe is left out of the all-topics metadata, as if it did not
    exist: ask for the missing ones by name (never creating them) and name those that are refused."""
    if not sources and not sinks:
        return
    request = MetadataRequest(topics=sorted(sources | sinks), allow_auto_topic_creation=False)
    response = await admin._send_request(request)
    refused = sorted(t["topic"] for t in response.to_object()["topics"]
                     if t["error_code"] == _TOPIC_AUTHORIZATION_FAILED)
    if refused:
        needs = [f"topic {t!r} needs {'READ' if t in sources else 'WRITE'}"
                 + (" and WRITE" if t in sources and t in sinks else "") for t in refused]
        raise KafkaAuthorizationError(
            "the cluster refuses this application's principal access (TOPIC_AUTHORIZATION_FAILED): "
            + "; ".join(needs) + " (Kafka Streams' ACLs: READ on source topics, WRITE on sink topics)")


async def await_sink_topics(admin_or_bootstrap: Any, topics: Iterable[str], timeout_s: float) -> dict[str, int]:
    """Partition counts of sink topics that did not exist at start-up, once they do.

    Asks for them by name with auto-creation allowed, as a Kafka producer's metadata request does: a
    cluster with `auto.create.topics.enable=true` creates them now (with its default partition count,
    as it would for Kafka Streams). Otherwise waits for someone to create them, up to `timeout_s` (Kafka
    Streams' send blocks for `max.block.ms`, 60 s), then raises MissingSinkTopicError naming them.
    """
    wanted = sorted(set(topics))
    deadline = time.monotonic() + timeout_s
    reported_at = 0.0
    async with admin_client(admin_or_bootstrap) as admin:
        while True:
            response = await admin._send_request(MetadataRequest(topics=wanted, allow_auto_topic_creation=True))
            counts = {t["topic"]: len(t["partitions"]) for t in response.to_object()["topics"]
                      if t["error_code"] == _NO_ERROR and t["partitions"]}
            missing = [t for t in wanted if t not in counts]
            if not missing:
                return counts
            now = time.monotonic()
            if now > deadline:
                raise MissingSinkTopicError((), missing)
            if now - reported_at >= 10:
                reported_at = now
                log.warning("waiting for sink topic(s) %s to be created before writing output (up to %.0fs more; "
                            "the cluster does not create them on first use)", missing, deadline - now)
            await anyio.sleep(0.5)


async def create_user_topics(topology: Topology, config: Any, partitions: int = 1,
                             replication_factor: int = -1) -> dict[str, int]:
    """For development (`streamlet topics create`): create the source and sink topics `topology` names
    that do not exist yet, with `partitions` each; returns those created. Internal topics are left to
    the application, which creates them with the partition counts it derives. No `application.id` is
    needed: Kafka Streams' users create these topics with Kafka's tools, which know of no application."""
    sources, sinks = user_topics(topology)
    async with admin_client(client_kwargs(config, ClientRole.ADMIN)) as admin:
        existing = await describe_partition_counts(admin, sources | sinks)
        missing = sorted((sources | sinks) - existing.keys())
        if not missing:
            return {}
        replication = replication_factor if replication_factor > 0 else await _broker_default_replication(admin)
        await admin.create_topics([NewTopic(t, partitions, replication) for t in missing])
        deadline = time.monotonic() + 30
        while set(missing) - (await describe_partition_counts(admin, missing)).keys():
            if time.monotonic() > deadline:
                raise InternalTopicError(f"topics {missing} did not appear within 30s of creation")
            await anyio.sleep(0.1)
    return dict.fromkeys(missing, partitions)


async def prepare_topics(
    topology: Topology,
    application_id: str,
    admin_or_bootstrap: Any,
    *,
    replication_factor: int = -1,
    timeout_s: float = 30.0,
    dead_letter_topic: str | None = None,
    internal_topics_check: str = NO_CHECK,
) -> TopicPlan:
    """Describe the user topics, plan and ensure the internal ones: the whole start-up step in one call.
    A dead-letter topic is used as it is when it exists, else created with one partition. Before
    anything is created, the internal topics the cluster holds for the application are checked against
    the plan's (`internal_topics_check`: see `streamlet.kafka.internal_topic_check`)."""
    async with admin_client(admin_or_bootstrap) as admin:
        sources, sinks = user_topics(topology)
        wanted = sources | sinks | ({dead_letter_topic} if dead_letter_topic else set())
        counts = await describe_partition_counts(admin, wanted)
        await _check_topics_authorized(admin, sources - counts.keys(), sinks - counts.keys())
        dlq_partitions = counts.pop(dead_letter_topic, None) if dead_letter_topic else None
        plan = plan_internal_topics(topology, application_id, counts)
        await check_internal_topics(admin, application_id, plan.internal_topics, internal_topics_check)
        if plan.missing_sinks:
            log.warning("sink topic(s) %s do not exist yet: the first output waits until they do (a cluster "
                        "with auto.create.topics.enable creates them on first use)", sorted(plan.missing_sinks))
        if dead_letter_topic:
            plan.internal_topics[dead_letter_topic] = InternalTopic(
                dead_letter_topic, "dead-letter", dlq_partitions or 1, dict(REPARTITION_TOPIC_DEFAULTS))
        await ensure_topics(admin, plan, replication_factor=replication_factor, timeout_s=timeout_s)
        return plan
