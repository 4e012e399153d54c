"""Topic planning (pure) and topic creation/verification on the real broker."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from hypothesis import given
from hypothesis import strategies as st

from streamlet.kafka.topic_manager import (
    InternalTopicError,
    MissingSinkTopicError,
    MissingSourceTopicError,
    MissingTopicsError,
    describe_partition_counts,
    ensure_topics,
    plan_internal_topics,
    prepare_topics,
)
from streamlet.processor import Processor
from streamlet.record import Record
from streamlet.stores.api import StateStore, StoreBuilder
from streamlet.topology import InternalTopicSpec, Topology


class PassThrough(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record)


class PlanOnlyStoreBuilder(StoreBuilder):
    """Just enough of a store builder for topic planning: a name and the logging choice."""

    def __init__(self, name: str, logging_enabled: bool = True, logging_config: dict[str, str] | None = None) -> None:
        self.name = name
        self.logging_enabled = logging_enabled
        self.logging_config = logging_config or {}

    def build(self) -> StateStore:
        raise NotImplementedError("planning never builds stores")

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> StoreBuilder:
        return PlanOnlyStoreBuilder(self.name, True, config)

    def with_logging_disabled(self) -> StoreBuilder:
        return PlanOnlyStoreBuilder(self.name, False)

    def with_caching_enabled(self) -> StoreBuilder:
        return self

    def with_caching_disabled(self) -> StoreBuilder:
        return self


def aggregate_through_repartition(inp: str, out: str, *, store_logging: bool = True,
                                  logging_config: dict[str, str] | None = None) -> Topology:
    """in -> [select key] -> repartition -> [aggregate with a store] -> out, as the DSL would wire it.
    The downstream nodes are added first, so the downstream sub-topology gets id 0 (sub-topologies are numbered
    by insertion order) and partition-count resolution must iterate."""
    t = Topology()
    t.add_internal_topic(InternalTopicSpec("agg-repartition", "repartition"))
    t.add_source("a-repartition-source", "agg-repartition")
    t.add_processor("a-aggregate", PassThrough, "a-repartition-source")
    t.add_state_store(PlanOnlyStoreBuilder("agg-store", store_logging, logging_config), "a-aggregate")
    t.add_sink("a-sink", out, "a-aggregate")
    t.add_source("z-source", inp)
    t.add_processor("z-select-key", PassThrough, "z-source")
    t.add_sink("z-repartition-sink", "agg-repartition", "z-select-key")
    return t


# -- planning --------------------------------------------------------------------------------------------------
def test_repartition_and_changelog_partitions_follow_the_writing_subtopology() -> None:
    plan = plan_internal_topics(aggregate_through_repartition("in", "out"), "app", {"in": 6, "out": 2})
    assert plan.subtopology_partitions == {0: 6, 1: 6}
    assert plan.source_topics == {"app-agg-repartition": 0, "in": 1}
    repartition = plan.internal_topics["app-agg-repartition"]
    changelog = plan.internal_topics["app-agg-store-changelog"]
    assert (repartition.kind, repartition.partitions) == ("repartition", 6)
    assert repartition.config["cleanup.policy"] == "delete"
    assert (changelog.kind, changelog.partitions, changelog.config["cleanup.policy"]) == ("changelog", 6, "compact")
    assert plan.changelog_topics == {"agg-store": "app-agg-store-changelog"}
    assert plan.partition_counts == {"in": 6, "out": 2, "app-agg-repartition": 6, "app-agg-store-changelog": 6}


def test_store_without_logging_has_no_changelog_and_logging_config_overrides_defaults() -> None:
    plan = plan_internal_topics(aggregate_through_repartition("in", "out", store_logging=False), "app",
                                {"in": 1, "out": 1})
    assert "app-agg-store-changelog" not in plan.internal_topics and plan.changelog_topics == {}
    plan = plan_internal_topics(
        aggregate_through_repartition("in", "out", logging_config={"cleanup.policy": "compact,delete",
                                                                  "min.insync.replicas": "1"}),
        "app", {"in": 1, "out": 1})
    config = plan.internal_topics["app-agg-store-changelog"].config
    assert config["cleanup.policy"] == "compact,delete" and config["min.insync.replicas"] == "1"
    assert config["message.timestamp.type"] == "CreateTime"


def test_fixed_partition_count_of_an_internal_topic_wins() -> None:
    t = aggregate_through_repartition("in", "out")
    t.internal_topics["agg-repartition"].num_partitions = 10
    plan = plan_internal_topics(t, "app", {"in": 3, "out": 1})
    assert plan.internal_topics["app-agg-repartition"].partitions == 10
    assert plan.subtopology_partitions == {0: 10, 1: 3}
    assert plan.internal_topics["app-agg-store-changelog"].partitions == 10


def test_missing_source_topics_are_named() -> None:
    t = aggregate_through_repartition("orders", "totals")
    with pytest.raises(MissingSourceTopicError, match=r"source topics \['orders'\].*sink topics \['totals'\]") as err:
        plan_internal_topics(t, "app", {})
    assert err.value.missing_sources == ["orders"]



def test_missing_sink_topics_do_not_stop_the_plan() -> None:
    """Kafka Streams checks only its sources at start-up; a missing sink is waited for at the first output."""
    plan = plan_internal_topics(aggregate_through_repartition("orders", "totals"), "app", {"orders": 2})
    assert plan.missing_sinks == {"totals"}
    assert "totals" not in plan.partition_counts and plan.partition_counts["orders"] == 2
    error = MissingSinkTopicError((), ["totals"])
    assert not isinstance(error, MissingSourceTopicError)
    assert isinstance(error, MissingTopicsError) and error.missing_sinks == ["totals"]


def test_internal_topic_nobody_writes_is_an_error() -> None:
    t = Topology()
    t.add_internal_topic(InternalTopicSpec("orphan-repartition", "repartition"))
    t.add_source("src", "orphan-repartition")
    t.add_processor("p", PassThrough, "src")
    with pytest.raises(InternalTopicError, match="orphan-repartition"):
        plan_internal_topics(t, "app", {})


@given(st.lists(st.one_of(st.none(), st.integers(1, 50)), min_size=1, max_size=6), st.integers(1, 50))
def test_property_partitions_propagate_down_a_chain_of_repartitions(side_inputs: list[int | None], first: int) -> None:
    """Stage i reads the previous stage's repartition topic (and maybe a user topic of its own): its task
    count is the running maximum of every user topic upstream of it, however the stages are numbered."""
    t = Topology()
    counts = {"u0": first}
    t.add_source("src-0", "u0")
    t.add_processor("p-0", PassThrough, "src-0")
    for i, side in enumerate(side_inputs, start=1):
        topic = f"r{i}"
        t.add_internal_topic(InternalTopicSpec(topic, "repartition"))
        t.add_sink(f"to-{i}", topic, f"p-{i - 1}")
        sources = [topic]
        if side is not None:
            counts[f"u{i}"] = side
            sources.append(f"u{i}")
        t.add_source(f"src-{i}", *sources)
        t.add_processor(f"p-{i}", PassThrough, f"src-{i}")
    plan = plan_internal_topics(t, "app", counts)
    running = first
    for i, side in enumerate(side_inputs, start=1):
        assert plan.internal_topics[f"app-r{i}"].partitions == running
        running = max(running, side or 0)
        reader = plan.source_topics[f"app-r{i}"]
        assert plan.subtopology_partitions[reader] == running


# -- on the real broker ------------------------------------------------------------------------------------------


async def _topic_configs(admin: Any, topic: str, keys: list[str]) -> dict[str, str]:
    responses = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, dict.fromkeys(keys))])
    return {entry[0]: entry[1] for r in responses for res in r.resources for entry in res[4]}


async def _create(admin: Any, topics: list[NewTopic]) -> None:
    """Create topics and wait until the broker's metadata lists them: CreateTopics returns before
    every metadata view has them, and the code under test describes topics with its own client."""
    await admin.create_topics(topics)
    with anyio.fail_after(15):
        while not {t.name for t in topics} <= set(await describe_partition_counts(admin)):
            await anyio.sleep(0.05)


class _Admin:
    def __init__(self, bootstrap: str) -> None:
        self.client = AIOKafkaAdminClient(bootstrap_servers=bootstrap)

    async def __aenter__(self) -> Any:
        await self.client.start()
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()


@pytest.mark.anyio
@pytest.mark.broker
async def test_prepare_creates_internal_topics_and_is_idempotent(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    app, inp, out = (f"tm-{x}-{uuid.uuid4().hex[:8]}" for x in ("app", "in", "out"))
    async with _Admin(bootstrap) as admin:
        await _create(admin, [NewTopic(inp, 3, 1), NewTopic(out, 2, 1)])
        topology = aggregate_through_repartition(inp, out)
        plan = await prepare_topics(topology, app, bootstrap)  # a bootstrap string: own admin client
        counts = await describe_partition_counts(admin)
        assert counts[f"{app}-agg-repartition"] == 3
        assert counts[f"{app}-agg-store-changelog"] == 3
        assert plan.partition_counts == {inp: 3, out: 2, f"{app}-agg-repartition": 3, f"{app}-agg-store-changelog": 3}
        repartition_cfg = await _topic_configs(admin, f"{app}-agg-repartition", ["cleanup.policy", "segment.bytes"])
        changelog_cfg = await _topic_configs(admin, f"{app}-agg-store-changelog", ["cleanup.policy"])
        assert repartition_cfg == {"cleanup.policy": "delete", "segment.bytes": "52428800"}
        assert changelog_cfg == {"cleanup.policy": "compact"}
        described = {t["topic"]: t for t in await admin.describe_topics(None)}
        assert all(len(p["replicas"]) == 1 for p in described[f"{app}-agg-repartition"]["partitions"])

        # Again, with the caller's admin client: nothing to create, same answer.
        again = await prepare_topics(topology, app, admin)
        assert again == plan


@pytest.mark.anyio
@pytest.mark.broker
async def test_concurrent_instances_race_to_create_the_same_topics(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    app, inp, out = (f"tm-{x}-{uuid.uuid4().hex[:8]}" for x in ("race", "in", "out"))
    async with _Admin(bootstrap) as admin:
        await _create(admin, [NewTopic(inp, 4, 1), NewTopic(out, 1, 1)])
    plan = plan_internal_topics(aggregate_through_repartition(inp, out), app, {inp: 4, out: 1})
    results: list[dict[str, int]] = []

    async def instance() -> None:
        results.append(await ensure_topics(bootstrap, plan, replication_factor=1))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(instance)
    assert results == [plan.partition_counts] * 4
    async with _Admin(bootstrap) as admin:
        counts = await describe_partition_counts(admin, plan.internal_topics)
    assert counts == {name: 4 for name in plan.internal_topics}


@pytest.mark.anyio
@pytest.mark.broker
async def test_existing_internal_topic_with_wrong_partition_count_is_rejected(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    app, inp, out = (f"tm-{x}-{uuid.uuid4().hex[:8]}" for x in ("wrong", "in", "out"))
    async with _Admin(bootstrap) as admin:
        await _create(admin, [NewTopic(inp, 3, 1), NewTopic(out, 1, 1), NewTopic(f"{app}-agg-repartition", 1, 1)])
    with pytest.raises(InternalTopicError, match=rf"{app}-agg-repartition has 1 partitions, expected 3"):
        await prepare_topics(aggregate_through_repartition(inp, out), app, bootstrap)
    async with _Admin(bootstrap) as admin:  # nothing was created on the way to the error
        assert f"{app}-agg-store-changelog" not in await describe_partition_counts(admin)


@pytest.mark.anyio
@pytest.mark.broker
async def test_missing_source_topic_fails_without_auto_creating_it(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    app, inp, out = (f"tm-{x}-{uuid.uuid4().hex[:8]}" for x in ("missing", "in", "out"))
    async with _Admin(bootstrap) as admin:
        await _create(admin, [NewTopic(out, 1, 1)])
    with pytest.raises(MissingSourceTopicError, match=inp):
        await prepare_topics(aggregate_through_repartition(inp, out), app, bootstrap)
    async with _Admin(bootstrap) as admin:
        existing = await describe_partition_counts(admin)
    assert inp not in existing
    assert not any(name.startswith(app) for name in existing)


@pytest.mark.anyio
@pytest.mark.broker
async def test_impossible_replication_factor_is_reported_with_the_topic(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    app, inp, out = (f"tm-{x}-{uuid.uuid4().hex[:8]}" for x in ("rf", "in", "out"))
    async with _Admin(bootstrap) as admin:
        await _create(admin, [NewTopic(inp, 1, 1), NewTopic(out, 1, 1)])
    with pytest.raises(InternalTopicError, match=rf"{app}-agg-repartition: error 38"):
        await prepare_topics(aggregate_through_repartition(inp, out), app, bootstrap, replication_factor=3)
