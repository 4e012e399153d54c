"""`SparkStreams`: a `Topology` run on Apache Spark, one Structured Streaming query per sub-topology (or per
pair of them that `fused` runs as one).

It mirrors `KafkaStreams`: the same topology and settings, the same internal topics (created here as
the asyncio runtime creates them), the same task code. Sub-topologies talk through their repartition
topics, so a continuous run starts every query at once; a backfill (`backfill()`) runs them one after
another in data-flow order, each to the end of its input, so that a reader of a repartition topic
starts after its writers, and goes round again while a query has input its writers added after it
ran (a foreign-key join's answers, any loop; see `backfill`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_progress import TaskProgress
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError, StreamsError, TopologyError
from streamlet.kafka.client_settings import ClientRole, client_kwargs
from streamlet.kafka.topic_manager import MissingSinkTopicError, TopicPlan, prepare_topics
from streamlet.offset_reset import AutoOffsetReset
from streamlet.spark.backfill import (
    DEFAULT_MAX_ROUNDS,
    MAX_ROUNDS_KEY,
    BackfillQuery,
    KafkaPositions,
    fed_topics,
    run_to_fixed_point,
)
from streamlet.spark.bounds import for_query
from streamlet.spark.fused import FUSE_KEY, fusable_pairs, fuse_wanted
from streamlet.spark.grouping import task_keys
from streamlet.spark.plan import CHECKPOINT_KEY, ENGINE_KEY_PREFIX, MASTER_KEY, TRIGGER_KEY, SubTopologyPlan
from streamlet.spark.query import Bounds, start_query
from streamlet.spark.session import configure, spark_session, warm_up_workers
from streamlet.spark.starting_offsets import committed_starting_offsets, is_fresh
from streamlet.spark.stateless import is_stateless
from streamlet.stores.spark import check_spark_backend
from streamlet.topology import SubTopology, Topology

log = logging.getLogger(__name__)



def _spark_reset(default: str, per_topic: Mapping[str, AutoOffsetReset]) -> str:
    """The Spark query's starting position for a fresh checkpoint without commits: `earliest` or `latest`.
    The Kafka source starts every topic alike, so a `by_duration` or `none` policy, or a topic's own policy
    that differs from `auto.offset.reset`, is refused here rather than silently applied differently."""
    policy = AutoOffsetReset.parse(default)
    differing = sorted(topic for topic, own in per_topic.items() if own != policy)
    if policy.kind not in ("earliest", "latest") or differing:
        what = f"the policy of topic {differing[0]!r} ({per_topic[differing[0]]!r})" if differing else \
            f"auto.offset.reset={default!r}"
        raise ConfigError(f"the Spark engine starts its input at earliest or latest for every topic alike; "
                          f"{what} runs on the asyncio runtime only")
    return policy.kind

class SparkQueryError(StreamsError):
    """A query of the Spark engine stopped with an error (Spark's message is attached)."""


def _probe(topology: Topology, sub: SubTopology, config: StreamsConfig) -> tuple[bool, TaskProgress]:
    """Build the sub-topology's task once, with its own stores in a scratch directory: whether its
    processors schedule wall-clock punctuations in `init` (only then does the query need timers), and
    the fresh task's progress (what it would carry between batches; see `stateless`)."""
    with tempfile.TemporaryDirectory(prefix="streamlet-spark-probe-") as scratch:
        task = StreamTask(topology, sub, 0, config, RecordCollector(lambda _topic: 1), Path(scratch),
                          clock=lambda: int(time.time() * 1000), resolve_topic=lambda t: t, cache_bytes=0)
        try:
            task.initialize_stores()
            task.initialize_processors()
            return task.next_wall_clock_due() is not None, task.progress()
        finally:
            task.close(clean=False)


def flow_order(topology: Topology) -> list[SubTopology]:
    """Sub-topologies so that each comes after every sub-topology writing a topic it reads."""
    subs = topology.sub_topologies()
    writers = {t: {s.id for s in subs if t in s.sink_topics} for s in subs for t in s.source_topics}
    done: list[SubTopology] = []
    pending = list(subs)
    while pending:
        ready = [s for s in pending
                 if all(w in {d.id for d in done} or w == s.id for t in s.source_topics for w in writers[t])]
        if not ready:  # a cycle through repartition topics: keep Kafka Streams' numbering
            ready = pending[:1]
        done.extend(ready)
        pending = [s for s in pending if s not in ready]
    return done


class SparkStreams:
    """Runs a topology on Spark. `spark`: a session to use (default: one made from the settings, with
    `spark.master`, default `local[*]`). Engine settings: `spark.checkpoint.location` (default
    `<state.dir>/<application.id>/spark`), `spark.trigger.interval.ms` (default: back to back).
    `start` and `backfill` first start the session's Python workers in the background (`WorkerWarmUp`)."""

    def __init__(self, topology: Topology, config: StreamsConfig | dict[str, Any], spark: Any = None) -> None:
        topology.validate()
        if topology.global_stores:  # a global consumer beside the micro-batches is not built yet
            raise TopologyError(f"the Spark engine does not run global stores yet ({sorted(topology.global_stores)}); "
                                "use KafkaStreams")
        self.topology = topology
        self.config = StreamsConfig.of(config)
        self._spark = spark
        self._owns_session = spark is None
        self.queries: list[Any] = []
        self.plans: list[SubTopologyPlan] = []

    # -- set-up -------------------------------------------------------------------------------------------
    def _session(self) -> Any:
        """The session, configured, its Python workers starting in the background (`WorkerWarmUp`)."""
        if self._spark is None:
            self._spark = spark_session(str(self.config.get(MASTER_KEY) or "local[*]"),
                                        f"streamlet-{self.config.application_id}")
        else:
            configure(self._spark)
        warm_up_workers(self._spark)
        return self._spark

    def checkpoint_root(self) -> Path:
        configured = self.config.get(CHECKPOINT_KEY)
        if configured:
            return Path(str(configured))
        state_dir = self.config.get("state.dir") or os.path.join(tempfile.gettempdir(), "streamlet")
        return Path(str(state_dir)) / self.config.application_id / "spark"

    def _plan(self) -> list[SubTopologyPlan]:
        for builder in self.topology.store_builders.values():
            check_spark_backend(builder)
        config = self.config
        settings = {k: v for k, v in config.items()}
        client_settings = {k: v for k, v in settings.items() if not k.startswith(ENGINE_KEY_PREFIX)}
        topics: TopicPlan = asyncio.run(prepare_topics(
            self.topology, config.application_id, client_kwargs(client_settings, ClientRole.ADMIN),
            replication_factor=int(config["replication.factor"]),
            internal_topics_check=config["internal.topics.check"]))
        if topics.missing_sinks:
            # The asyncio runtime waits for them at its first send; a Spark task learns partition counts
            # only from this plan, before the queries start.
            raise MissingSinkTopicError((), topics.missing_sinks)
        plans = []
        for sub in flow_order(self.topology):
            tasks = topics.subtopology_partitions[sub.id]
            wall_clock, progress = _probe(self.topology, sub, config)
            plan = SubTopologyPlan(self.topology, sub.id, settings, topics.partition_counts, task_keys(tasks),
                                   wall_clock=wall_clock)
            plan.source_topics = [plan.resolve_topic(t) for t in sub.source_topics]
            plan.stateless = is_stateless(plan, progress)
            plans.append(plan)
        return plans

    def _fused(self, plans: list[SubTopologyPlan], root: Path) -> list[SubTopologyPlan]:
        """`plans` with each pair that runs as one query (see `fused`) replaced by its downstream plan carrying
        the upstream one, at the upstream's place in data-flow order. A pair's checkpoints decide first:
        the fused one, if it ran, keeps the pair fused; either single one, if it ran, keeps them apart (a
        checkpoint holds its query's plan, and the state of the pair's tasks). On fresh checkpoints
        `spark.fuse.subtopologies` decides, unless the group has committed offsets on the repartition
        topic (records left there would never be read)."""
        out = list(plans)
        for up, down in fusable_pairs(plans):
            fused = replace(down, upstream=up)
            apart = self._apart(fused, root)
            if apart:
                log.info("subtopologies %s run as two queries: %s", fused.query_id, apart)
                continue
            out[out.index(up)] = fused  # where the upstream was: readers of its other output come after it
            out.remove(down)
        return out

    def _apart(self, fused: SubTopologyPlan, root: Path) -> str | None:
        """Why a fusable pair runs as two queries after all (None: it runs as one; see `_fused`)."""
        assert fused.upstream is not None
        if not is_fresh(root / f"subtopology-{fused.query_id}"):
            return None
        if not all(is_fresh(root / f"subtopology-{p.subtopology_id}") for p in (fused.upstream, fused)):
            return "their checkpoints began as two queries"
        if not fuse_wanted(fused.settings):
            return f"{FUSE_KEY} is false"
        (topic,) = fused.source_topics
        committed = asyncio.run(committed_starting_offsets(
            fused.client_settings(), {topic: fused.partition_counts[topic]}, {topic}, "earliest"))
        if committed is not None:
            return f"group {self.config.application_id} has committed offsets on {topic}"
        return None

    # -- running --------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start one continuous query per sub-topology (returns once they run)."""
        spark = self._session()
        root = self.checkpoint_root()
        self.plans = self._fused(self._plan(), root)
        configured = self.config.get(TRIGGER_KEY)
        interval = int(configured) if configured else None
        for plan in self.plans:
            checkpoint = root / f"subtopology-{plan.query_id}"
            starting = Bounds(starting=self._starting(plan, checkpoint))
            self.queries.append(start_query(spark, plan, str(checkpoint), starting, interval))
        log.info("started %d Spark queries for %s (checkpoints in %s)", len(self.queries),
                 self.config.application_id, root)

    def _starting(self, plan: SubTopologyPlan, checkpoint: Path) -> str:
        """Where the query starts if its checkpoint is fresh: the group's committed offsets if it has
        any (the application ran before on the asyncio runtime or another checkpoint), else
        `auto.offset.reset` (see `starting_offsets`)."""
        reset = _spark_reset(self.config["auto.offset.reset"], self.topology.offset_reset_policies())
        if not is_fresh(checkpoint):
            return reset
        internal = {plan.resolve_topic(t) for t in self.topology.internal_topics}
        committed = asyncio.run(committed_starting_offsets(
            plan.client_settings(), {t: plan.partition_counts[t] for t in plan.query_sources}, internal, reset))
        if committed is not None:
            log.info("subtopology %s starts from the committed offsets of group %s: %s", plan.query_id,
                     self.config.application_id, committed)
        return committed or reset

    def backfill(self, bounds: Bounds) -> int:
        """Process a bounded range of the input and return the number of passes it took: each
        sub-topology's query runs to the end of its input (`availableNow`), in data-flow order, and again
        while a topic the topology feeds itself holds records it has not read (see `streamlet.spark.backfill`).
        Its checkpoint is the continuous run's. `bounds` are the application's input's (see
        `bounds.for_query`); `--until` does not cut the topics the topology writes itself. A `--from` that
        does not fit the application's input topics raises `ConfigError` before any query starts; a query
        that stopped short of its input, or a loop without end, raises `BackfillIncompleteError`."""
        spark = self._session()
        root = self.checkpoint_root()
        self.plans = self._fused(self._plan(), root)
        app = self.config.application_id
        fed = fed_topics(self.topology, lambda t: f"{app}-{t}" if t in self.topology.internal_topics else t)
        if bounds.until_offsets:  # a fed topic ends where its writers stop, not where it was at the start
            bounds = replace(bounds, until_offsets={t: o for t, o in bounds.until_offsets.items() if t not in fed})
        internal = {f"{app}-{name}" for name in self.topology.internal_topics}
        inputs = {t: plan.partition_counts[t] for plan in self.plans for t in plan.query_sources if t not in internal}
        queries = []
        for plan in self.plans:
            checkpoint = root / f"subtopology-{plan.query_id}"
            run = partial(self._run_bounded, spark, plan, checkpoint, for_query(bounds, plan.reader, inputs))
            partitions = [(t, p) for t in plan.query_sources for p in range(plan.partition_counts[t])]
            queries.append(BackfillQuery(f"{app}-subtopology-{plan.query_id}", partitions, checkpoint, run))
        offsets = KafkaPositions(self.plans[0].client_settings(), self.config.exactly_once)
        try:
            return run_to_fixed_point(queries, fed, offsets, int(self.config.get(MAX_ROUNDS_KEY) or DEFAULT_MAX_ROUNDS))
        finally:
            offsets.close()

    def _run_bounded(self, spark: Any, plan: SubTopologyPlan, checkpoint: Path, bounds: Bounds) -> None:
        query = start_query(spark, plan, str(checkpoint), bounds)
        self.queries.append(query)
        query.awaitTermination()
        self._raise_if_failed()

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait until every query has stopped (True) or `timeout` seconds passed (False). A query that
        failed stops the others and raises `SparkQueryError`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._raise_if_failed()
            if not any(q.isActive for q in self.queries):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.2)

    def _raise_if_failed(self) -> None:
        for query in self.queries:
            error = query.exception()
            if error is not None:
                self.stop()
                raise SparkQueryError(f"Spark query {query.name} failed: {error}")

    def stop(self) -> None:
        """Stop every query (a batch in flight is abandoned and replayed on the next start), and the
        SparkSession if this object made it."""
        for query in self.queries:
            if query.isActive:
                query.stop()
        if self._owns_session and self._spark is not None:
            self._spark.stop()
            self._spark = None
