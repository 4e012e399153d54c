"""`python -m benchmarks.spark_bench` (`make bench-spark`): WordCount on the Spark engine beside native Spark.

Both read the same pre-loaded `lines` topic (benchmarks/workloads.py's generator, 2 partitions) to its
end with `availableNow` and the same cap on input lines per micro-batch (`--batch`; the engine's counting
query, which reads the repartition topic, is not capped again: see `streamlet.spark.query.trigger_cap`),
on `local[1]`, `local[2]` and `spark-cluster` (a standalone master and two one-core workers started
here from pyspark's own `spark-class`, on loopback; see `benchmarks.spark_cluster`):

* `streamlet-spark`: `benchmarks/apps/streamlet_app.py:wordcount`, unchanged, through `SparkStreams`
  (two queries: split and repartition by word, then count; caching on, so each batch sends the latest
  count per word, as Spark's update mode does);
* `native Spark`: what a Spark user writes by hand, Kafka -> explode(split) -> groupBy(word).count() ->
  Spark's Kafka sink (update mode; the count as text, since Spark's sink cannot set timestamps or
  write a Java long without more code).

Reported per run: lines/s over the whole run (start of the first query to the end of the last), the
median and max micro-batch time (Spark's own `triggerExecution`), SparkSession start-up time, the CPU
seconds the run took in the Spark JVM and in Python (this process and the JVM's Python workers):
`cpu_s`, `cpu_jvm_s`, `cpu_python_s`, the measure that holds when other work shares the machine,
whose load average is noted, and whether the final count of every word is right. Results: benchmarks/results/spark.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import struct
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from benchmarks.kafka_bench import create_topics, preload
from benchmarks.spark_cluster import CLUSTER, session_for
from benchmarks.workloads import BASE_TS, split_words, word_lines

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "spark.json"
PARTITIONS = 2


async def _latest(bootstrap: str, topic: str, decode: Any) -> dict[str, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    latest: dict[str, int] = {}
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        while [tp for tp in parts if await consumer.position(tp) < ends[tp]]:
            for records in (await consumer.getmany(timeout_ms=500, max_records=50_000)).values():
                for r in records:
                    latest[r.key.decode()] = decode(r.value)
    finally:
        await consumer.stop()
    return latest


def _batch_times(queries: list[Any]) -> list[int]:
    return [p["durationMs"]["triggerExecution"] for q in queries for p in q.recentProgress if p["numInputRows"]]


def _spark_cpu_seconds() -> tuple[float, float]:
    """CPU seconds used so far by the Spark JVM this process started and by Python (this process and
    the JVM's Python workers, live ones and those reaped): the work of a run, whatever else shares the
    machine. The broker, also started from here, is left out."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    used: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        used[int(entry)] = sum(int(f) for f in fields[11:15]) / tick  # utime, stime, cutime, cstime
        children.setdefault(int(fields[1]), []).append(int(entry))

    def cmdline(pid: int) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b""

    def below(pid: int) -> list[int]:
        found, todo = [], list(children.get(pid, []))
        while todo:
            found.append(todo.pop())
            todo.extend(children.get(found[-1], []))
        return found

    # The driver JVM, and on `spark-cluster` the executors' JVMs (children of the workers started here);
    # the master's and workers' own JVMs are left out, as the broker is.
    jvms = [pid for pid in below(os.getpid()) if any(
        name in cmdline(pid) for name in (b"org.apache.spark.deploy.SparkSubmit", b"CoarseGrainedExecutorBackend"))]
    python = sum(os.times()[:2])
    todo = [child for pid in jvms for child in children.get(pid, [])]
    while todo:
        pid = todo.pop()
        python += used.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return sum(used.get(pid, 0.0) for pid in jvms), python


def _stages(spark: Any, since: int) -> list[dict[str, Any]]:
    """The session's completed stages after stage `since` (Spark's REST API; the UI must be on):
    where each query's micro-batches spend their time."""
    import urllib.request

    url = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}/stages"
    with urllib.request.urlopen(f"{url}?status=complete") as response:
        stages = json.load(response)
    return [{"stage": st["stageId"], "name": st["name"][:60], "tasks": st["numTasks"],
             "wall_ms": _stage_ms(st), "run_ms": st["executorRunTime"],
             "cpu_ms": round(st["executorCpuTime"] / 1e6), "input_records": st["inputRecords"],
             "shuffle_read_records": st["shuffleReadRecords"], "shuffle_write_records": st["shuffleWriteRecords"],
             "shuffle_write_bytes": st["shuffleWriteBytes"]}
            for st in sorted(stages, key=lambda st: st["stageId"]) if st["stageId"] > since]


def _stage_ms(stage: dict[str, Any]) -> int | None:
    from datetime import datetime

    def at(text: str) -> datetime:
        return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")

    if "submissionTime" not in stage or "completionTime" not in stage:
        return None
    return round((at(stage["completionTime"]) - at(stage["submissionTime"])).total_seconds() * 1000)


def _run_engine(spark: Any, bootstrap: str, source: str, cap: int, tag: str) -> tuple[float, list[int], str]:
    from streamlet.spark import SparkStreams
    from streamlet.spark.query import Bounds

    output = f"out-streamlet-{tag}"
    asyncio.run(create_topics(bootstrap, {output: PARTITIONS}))
    os.environ["BENCH_INPUT"], os.environ["BENCH_OUTPUT"] = source, output
    from benchmarks.apps.streamlet_app import wordcount

    streams = SparkStreams(wordcount(), {
        "application.id": f"bench-spark-{tag}", "bootstrap.servers": bootstrap, "spark.max.offsets.per.trigger": cap,
        "spark.checkpoint.location": tempfile.mkdtemp(prefix="spark-bench-")}, spark=spark)
    started = time.monotonic()
    streams.backfill(Bounds(bounded=True))
    return time.monotonic() - started, _batch_times(streams.queries), output


def _run_native(spark: Any, bootstrap: str, source: str, cap: int, tag: str) -> tuple[float, list[int], str]:
    from pyspark.sql import functions as F

    output = f"out-native-{tag}"
    asyncio.run(create_topics(bootstrap, {output: PARTITIONS}))
    spark.conf.set("spark.sql.shuffle.partitions", str(PARTITIONS))
    lines = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", str(cap)).load())
    words = lines.select(F.explode(F.split(F.lower(F.col("value").cast("string")), r"\s+")).alias("word"))
    counts = words.where(F.col("word") != "").groupBy("word").count()
    query = (counts.select(F.col("word").alias("key"), F.col("count").cast("string").alias("value"))
             .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", output)
             .option("checkpointLocation", tempfile.mkdtemp(prefix="spark-bench-native-"))
             .outputMode("update").trigger(availableNow=True).start())
    started = time.monotonic()
    query.awaitTermination()
    return time.monotonic() - started, _batch_times([query]), output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=20_000, help="lines per micro-batch at most")
    parser.add_argument("--masters", default=f"local[1],local[2],{CLUSTER}",
                        help=f"Spark masters, comma-separated; {CLUSTER!r}: a standalone master and two workers "
                        "started here on loopback")
    parser.add_argument("--native-first", action="store_true",
                        help="run native Spark first in each session (the first run warms the JVM up)")
    parser.add_argument("--stages", type=Path, help="write each run's Spark stages (wall, run and CPU time, "
                        "records) to this JSON file (turns the Spark UI on)")
    args = parser.parse_args()

    from streamlet.testing.local_broker import LocalKafkaBroker

    truth = Counter(w for line in word_lines(args.lines) for w in split_words(line.decode()))
    results: list[dict[str, Any]] = []
    stage_log: list[dict[str, Any]] = []
    with LocalKafkaBroker(heap="1g") as broker:
        bootstrap = broker.bootstrap_servers
        source = "bench-spark-lines"
        asyncio.run(create_topics(bootstrap, {source: PARTITIONS}, {"retention.ms": "-1"}))
        asyncio.run(preload(bootstrap, source, PARTITIONS, ((None, v, BASE_TS) for v in word_lines(args.lines))))
        for master in args.masters.split(","):
            t0 = time.monotonic()
            ui = {"spark.ui.enabled": "true", "spark.ui.port": "0"} if args.stages else {}
            with session_for(master, "streamlet-spark-bench", ui) as spark:
                start_s = time.monotonic() - t0
                tag = master.replace("local[", "").replace("]", "").replace("*", "all")
                systems: list[tuple[str, Any, Any]] = [
                    ("streamlet-spark", _run_engine, lambda v: struct.unpack(">q", v)[0]),
                    ("native Spark", _run_native, lambda v: int(v.decode()))]
                for system, run, decode in (systems[::-1] if args.native_first else systems):
                    before = max([s["stage"] for run_log in stage_log if run_log["master"] == master
                                  for s in run_log["stages"]], default=-1)
                    jvm_before, python_before = _spark_cpu_seconds()
                    seconds, batches, output = run(spark, bootstrap, source, args.batch, tag)
                    jvm_after, python_after = _spark_cpu_seconds()
                    cpu_jvm, cpu_python = jvm_after - jvm_before, python_after - python_before
                    if args.stages:
                        stage_log.append({"system": system, "master": master, "stages": _stages(spark, before)})
                    correct = asyncio.run(_latest(bootstrap, output, decode)) == dict(truth)
                    row = {"system": system, "master": master, "lines": args.lines, "seconds": round(seconds, 2),
                           "lines_per_s": round(args.lines / seconds), "batches": len(batches),
                           "batch_ms_median": statistics.median(batches) if batches else None,
                           "batch_ms_max": max(batches) if batches else None, "session_start_s": round(start_s, 1),
                           "cpu_s": round(cpu_jvm + cpu_python, 1),
                           "cpu_jvm_s": round(cpu_jvm, 1), "cpu_python_s": round(cpu_python, 1),
                           "load_avg": round(os.getloadavg()[0], 1), "correct": correct}
                    print(json.dumps(row), flush=True)
                    results.append(row)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    if args.stages:
        args.stages.write_text(json.dumps(stage_log, indent=1) + "\n")
    return 0 if all(r["correct"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
