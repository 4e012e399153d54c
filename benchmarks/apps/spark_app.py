"""The Spark systems of the suite: streamlet's Spark engine, and WordCount written by hand on Spark.

    python -m benchmarks.apps.spark_app --engine streamlet|native --master local[2] <the run contract>

`--engine streamlet` runs the suite's own topology (benchmarks/apps/streamlet_app.py) unchanged through
`SparkStreams`; `--engine native` is the anchor, what a Spark user writes by hand for WordCount: Kafka ->
explode(split) -> groupBy(word).count() -> Spark's Kafka sink, in update mode. Both run continuously
(micro-batches back to back) with the same `maxOffsetsPerTrigger` and as many shuffle partitions as the
input has partitions, until SIGTERM.

The runner (benchmarks/measure.py) follows a system through its consumer group: the clock starts when
the group is Stable, and a run is over once the group has committed the whole input. Spark's Kafka
source belongs to no group and commits nothing (its offsets live in the checkpoint), so a stand-in
member joins the group once the queries run, holds the input's partitions paused (it never fetches),
and every half second commits the input offsets whose effects have all been written (see
`done_offsets`: with a repartition topic in between, the query reading it must have caught up too).
Under `exactly_once_v2` (`wordcount_eos`) the engine's tasks commit their input offsets themselves, in
their transactions, to the group `application.id`: the first query's as soon as it has split the lines,
long before the counts are out. So the engine runs as `<app id>-spark` there, and the stand-in commits
what is done to the group the runner watches exactly as under at-least-once: both measure the same thing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
from datetime import datetime
from typing import Any

from benchmarks.run_args import parse_run_args

CAP_PER_TRIGGER = 100_000
"""Input records per micro-batch at most, the same for both engines."""

TOPOLOGY = {"wordcount_alos": "wordcount", "wordcount_eos": "wordcount", "window_count": "window_count",
            "join": "join", "pipe": "pipe"}


def _progress_ms(progress: Any) -> tuple[int, int]:
    """A micro-batch's (start, end) in epoch ms, from its progress report."""
    start = int(datetime.fromisoformat(str(progress["timestamp"]).replace("Z", "+00:00")).timestamp() * 1000)
    return start, start + int((progress["durationMs"] or {}).get("triggerExecution", 0))


def _end_offsets_of(progress: Any, topic: str) -> dict[int, int]:
    found: dict[int, int] = {}
    for source in progress["sources"] or []:
        end = source["endOffset"]
        offsets = json.loads(end) if isinstance(end, str) else end
        for partition, offset in ((offsets or {}).get(topic) or {}).items():
            found[int(partition)] = int(offset)
    return found


def done_offsets(readers: list[Any], downstream: list[Any], topic: str) -> dict[int, int]:
    """Partition -> the next offset of `topic` whose effects are all written: what the queries reading the
    input (`readers`) had finished by the time the last completed micro-batch of every query reading a
    repartition topic (`downstream`) started, since that batch read everything written before."""
    horizon = None
    for query in downstream:
        progress = query.recentProgress
        if not progress:
            return {}
        started = _progress_ms(progress[-1])[0]
        horizon = started if horizon is None else min(horizon, started)
    done: dict[int, int] = {}
    for query in readers:
        for progress in query.recentProgress:
            if horizon is None or _progress_ms(progress)[1] <= horizon:
                for partition, offset in _end_offsets_of(progress, topic).items():
                    done[partition] = max(done.get(partition, 0), offset)
    return done


class _GroupStandIn:
    """A member of the application's consumer group that commits what the Spark queries processed."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self._bootstrap, self._group, self._topic = bootstrap, group, topic
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="group-stand-in")
        self._consumer: Any = None

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._join(), self._loop).result(60)

    async def _join(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.abc import ConsumerRebalanceListener

        consumer = AIOKafkaConsumer(bootstrap_servers=self._bootstrap, group_id=self._group,
                                    enable_auto_commit=False, auto_offset_reset="earliest")

        class _Pause(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            async def on_partitions_assigned(self, assigned: Any) -> None:
                consumer.pause(*assigned)  # Spark reads the input; this member only commits

        await consumer.start()
        consumer.subscribe([self._topic], listener=_Pause())
        self._consumer = consumer
        self._poller = asyncio.ensure_future(self._poll())

    async def _poll(self) -> None:
        while True:  # keeps the group membership going (all partitions paused: nothing is fetched)
            await self._consumer.getmany(timeout_ms=500)

    async def _commit(self, offsets: dict[int, int]) -> None:
        from aiokafka import TopicPartition

        assigned = self._consumer.assignment()
        mine = {TopicPartition(self._topic, p): o for p, o in offsets.items()
                if TopicPartition(self._topic, p) in assigned}
        if mine:
            await self._consumer.commit(mine)

    def commit(self, offsets: dict[int, int]) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._commit(offsets), self._loop).result(30)
        except Exception as exc:  # a rebalance in between: the next round commits again
            print(f"stand-in commit failed: {exc!r}", file=sys.stderr, flush=True)


def _native_wordcount(spark: Any, run: argparse.Namespace, checkpoint: str) -> list[Any]:
    from pyspark.sql import functions as F

    lines = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", run.bootstrap)
             .option("subscribe", run.input).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", str(CAP_PER_TRIGGER)).load())
    words = lines.select(F.explode(F.split(F.lower(F.col("value").cast("string")), r"\s+")).alias("word"))
    counts = words.where(F.col("word") != "").groupBy("word").count()
    # The count as an 8-byte big-endian long, as the other systems write it.
    value = F.unhex(F.lpad(F.hex(F.col("count")), 16, "0"))
    query = (counts.select(F.col("word").alias("key"), value.alias("value"))
             .writeStream.format("kafka").option("kafka.bootstrap.servers", run.bootstrap)
             .option("topic", run.output).option("checkpointLocation", checkpoint)
             .outputMode("update").start())
    return [query]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--engine", choices=("streamlet", "native"), required=True)
    parser.add_argument("--master", default="local[2]")
    own, rest = parser.parse_known_args(argv)
    run = parse_run_args(rest)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())

    from benchmarks.kafka_bench import end_offsets
    from benchmarks.spark_cluster import session_for

    partitions = len(asyncio.run(end_offsets(run.bootstrap, [run.input])))
    # `--master spark-cluster` starts a standalone master and two workers for this run (and stops them).
    with session_for(own.master, f"bench-{run.app_id}", {"spark.sql.shuffle.partitions": str(partitions)}) as spark:
        return _run(spark, own, run, stopping)


def _run(spark: Any, own: argparse.Namespace, run: argparse.Namespace, stopping: threading.Event) -> int:
    checkpoint = os.path.join(run.state_dir, "spark")
    if own.engine == "native":
        queries = readers = _native_wordcount(spark, run, checkpoint)
        downstream: list[Any] = []
        streams = None
    else:
        from benchmarks.apps import streamlet_app
        from streamlet.spark import SparkStreams

        topology = getattr(streamlet_app, TOPOLOGY[run.workload])()
        eos = run.guarantee == "exactly_once_v2"
        streams = SparkStreams(topology, {
            "application.id": f"{run.app_id}-spark" if eos else run.app_id, "bootstrap.servers": run.bootstrap,
            "state.dir": run.state_dir,
            "spark.checkpoint.location": checkpoint, "spark.max.offsets.per.trigger": CAP_PER_TRIGGER,
            "processing.guarantee": run.guarantee}, spark=spark)
        streams.start()
        queries = streams.queries
        # A fused query (the split and the count in one, see streamlet.spark.fused) reads the input only.
        through_kafka = [plan.reader.reads_internal_topics for plan in streams.plans]
        readers = [q for q, internal in zip(queries, through_kafka, strict=True) if not internal]
        downstream = [q for q, internal in zip(queries, through_kafka, strict=True) if internal]
    member = _GroupStandIn(run.bootstrap, run.app_id, run.input)
    member.start()
    print(f"spark ({own.engine}, {own.master}): {len(queries)} queries running", file=sys.stderr, flush=True)
    try:
        while not stopping.wait(0.5):
            if streams is not None:
                streams.await_termination(0)  # raises if a query failed
            elif any(q.exception() is not None for q in queries):
                raise RuntimeError(str(queries[0].exception()))
            member.commit(done_offsets(readers, downstream, run.input))
    finally:
        for query in queries:
            if query.isActive:
                query.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
