"""One Structured Streaming query per sub-topology: Kafka source -> tasks (transformWithState) -> sink.
A fused pair (see `fused`) is one query: Kafka source -> upstream tasks (mapInArrow) -> shuffle -> tasks.

Kafka partitions are never split across Spark input partitions (no `minPartitions`): a task's rows of
one partition are then one ordered run, which the processor still sorts by offset after the shuffle.
A stateful query's shuffle has one partition per task, or on a local master a divisor of the task count
that keeps its cores busy (`task_partitions`); the grouping keys put task p in partition p mod that
count, each partition holding as many tasks. Spark fixes the count for the life of the checkpoint, as
Kafka Streams fixes the task count for the life of the application id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamlet.spark.fused import packed_schema, repartition_in_shuffle
from streamlet.spark.grouping import shuffle_partitions
from streamlet.spark.plan import MAX_OFFSETS_KEY, PARTITIONS_KEY, SubTopologyPlan
from streamlet.spark.rows import INPUT_COLUMNS, headers_column, topic_column
from streamlet.spark.sink import run_batch
from streamlet.spark.stateless import stateless_tasks
from streamlet.spark.task_processor import OUTPUT_SCHEMA, TaskProcessor

_KAFKA_CLIENT_PREFIXES = ("security.", "ssl.", "sasl.")
"""Client settings the connector's own Kafka consumer needs too (it takes them prefixed `kafka.`)."""

SOURCE_FETCH_MAX_WAIT_MS = 10
"""`fetch.max.wait.ms` of the connector's consumers (Kafka's default: 500). A Spark task reads a range of
offsets the driver saw exist, so a fetch never needs to wait for data; but a cached consumer that
read a partition to its end leaves a prefetch parked at the broker, and the next task that seeks it
waits for that fetch to expire first. Measured on WordCount's counting query (local[2]): its last
micro-batch's Kafka stage (8 tasks, 112,500 records) took 2.3 s with the default, every task
~550 ms for 15 ms of CPU, and 0.37 s at 10 ms."""


@dataclass(frozen=True)
class Bounds:
    """Where a query starts on a fresh checkpoint and, for a backfill, where its input ends."""

    starting: str = "earliest"
    """`earliest`, `latest`, or the connector's offsets JSON."""
    starting_timestamp_ms: int | None = None
    until_offsets: dict[str, dict[str, int]] | None = None
    """For a bounded run: topic -> partition -> first offset not to process (topics it does not name are
    read to their end)."""
    bounded: bool = False


def trigger_cap(plan: SubTopologyPlan) -> int | None:
    """The query's `maxOffsetsPerTrigger` (`spark.max.offsets.per.trigger`), if it gets one.

    The cap bounds what the application takes in per trigger, for queries whose tasks read one
    partition each. A query reading a repartition topic gets no cap of its own: what it finds there
    is already bounded by its writers' caps, and capping it again only splits the same records into
    more micro-batches (each with its fixed cost; in a backfill, where it runs after its writers are
    done, 3x as many batches for WordCount's 3 words per line). A query whose tasks read several
    partitions (a join, a merge) gets none either: the connector splits a cap over the partitions by
    their backlog, so a task would process one partition's records ahead of older ones of another that
    the broker already has, where Kafka Streams (and the asyncio runtime) wait for them. Measured: a
    stream-table join over 250,000 pre-loaded events dropped 80,958 of them, joined before their
    users' table rows arrived in a later micro-batch. Uncapped, a batch reads every partition to the
    end it had when the batch was planned: a partition is then either read or at its end, as the
    `max.task.idle.ms` = 0 rule asks.
    """
    cap = plan.settings.get(MAX_OFFSETS_KEY)
    if cap and not plan.reads_internal_topics and len(plan.source_topics) == 1:
        return int(cap)
    return None


def task_partitions(spark: Any, plan: SubTopologyPlan) -> int:
    """The shuffle partitions of a stateful query (`spark.task.partitions`, see `plan.PARTITIONS_KEY`).
    Only a local master packs tasks by default: its cores are those of this process for good, where a
    cluster's executors (and so `defaultParallelism`) come and go while the checkpoint keeps the
    count it started with."""
    configured = plan.settings.get(PARTITIONS_KEY)
    if configured:
        return int(configured)
    context = spark.sparkContext
    if str(context.master).startswith("local"):
        return shuffle_partitions(plan.tasks, int(context.defaultParallelism))
    return plan.tasks


def _source(spark: Any, plan: SubTopologyPlan, bounds: Bounds) -> Any:
    settings = plan.client_settings()
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", settings["bootstrap.servers"])
              .option("subscribe", ",".join(plan.source_topics))
              .option("includeHeaders", "true")
              .option("failOnDataLoss", "false")  # repartition topics are purged by retention
              .option("kafka.fetch.max.wait.ms", str(SOURCE_FETCH_MAX_WAIT_MS)))
    if bounds.starting_timestamp_ms is not None:
        reader = reader.option("startingTimestamp", str(bounds.starting_timestamp_ms))
    else:
        reader = reader.option("startingOffsets", bounds.starting)
    if plan.config().exactly_once:  # aborted transactions (a failed task's partial output) are not input
        reader = reader.option("kafka.isolation.level", "read_committed")
    cap = trigger_cap(plan)
    if cap is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(cap))
    for key, value in settings.items():
        if key.startswith(_KAFKA_CLIENT_PREFIXES):
            reader = reader.option(f"kafka.{key}", str(value))
    return reader.load()


def _until_filter(bounds: Bounds) -> Any:
    from pyspark.sql import functions as F

    ends = [(f"{topic}:{partition}", end) for topic, parts in (bounds.until_offsets or {}).items()
            for partition, end in parts.items()]
    if not ends:
        return None
    end_of = F.create_map(*[F.lit(x) for pair in ends for x in pair])
    tp = F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"))
    # Topics it does not name (a query's repartition topics) are read to their end.
    return end_of[tp].isNull() | (F.col("offset") < end_of[tp])


def start_query(spark: Any, plan: SubTopologyPlan, checkpoint: str, bounds: Bounds,
                trigger_interval_ms: int | None = None) -> Any:
    from pyspark.sql import functions as F

    reader = plan.reader
    df = _source(spark, reader, bounds)
    bounded_rows = _until_filter(bounds)
    if bounded_rows is not None:  # on the source's columns (the topic by name)
        df = df.where(bounded_rows)
    keys = F.create_map(*[F.lit(x) for p, key in enumerate(reader.task_keys) for x in (p, key)])
    rows = df.select(keys[F.col("partition")].cast("int").alias("task"),
                     topic_column(reader.source_topics).cast("int").alias("topic"), "partition", "offset",
                     F.unix_millis(F.col("timestamp")).alias("timestamp"), "key", "value",
                     headers_column().alias("headers"))
    assert tuple(rows.columns) == INPUT_COLUMNS
    if plan.upstream is not None:
        rows = rows.mapInArrow(repartition_in_shuffle(plan.upstream, plan), packed_schema())
    if plan.stateless:
        out = rows.mapInArrow(stateless_tasks(plan), OUTPUT_SCHEMA)
    else:
        out = rows.groupBy("task").transformWithStateInPandas(
            TaskProcessor(plan), OUTPUT_SCHEMA, "Update", "ProcessingTime" if plan.wall_clock else "None")
        spark.conf.set("spark.sql.shuffle.partitions", str(task_partitions(spark, plan)))  # read at the query's start
    writer = (out.writeStream.foreachBatch(run_batch)
              .option("checkpointLocation", checkpoint)
              .queryName(f"{plan.settings['application.id']}-subtopology-{plan.query_id}"))
    if bounds.bounded:
        writer = writer.trigger(availableNow=True)
    elif trigger_interval_ms:
        writer = writer.trigger(processingTime=f"{trigger_interval_ms} milliseconds")
    return writer.start()
