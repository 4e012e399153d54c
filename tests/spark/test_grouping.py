"""The grouping keys put each task in a Spark partition of its own, or share fewer partitions evenly."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from streamlet.spark.grouping import shuffle_partitions, spark_hash_int, task_keys


def test_our_murmur3_is_sparks_hash_of_an_int(spark: Any) -> None:
    values = [0, 1, -1, 7, 42, 2**31 - 1, -(2**31), *range(100, 400, 7)]
    rows = spark.createDataFrame([(v,) for v in values], "v int").select("v", F.hash("v").alias("h")).collect()
    assert {r.v: r.h for r in rows} == {v: spark_hash_int(v) for v in values}


def test_each_task_lands_in_its_own_shuffle_partition(spark: Any) -> None:
    for tasks in (1, 2, 3, 4, 8, 13):
        keys = task_keys(tasks)
        assert len(set(keys)) == tasks
        rows = (spark.createDataFrame([(k,) for k in keys], "k int")
                .select("k", F.expr(f"pmod(hash(k), {tasks})").alias("bucket")).collect())
        assert [r.bucket for r in sorted(rows, key=lambda r: keys.index(r.k))] == list(range(tasks))


def test_tasks_share_fewer_partitions_evenly(spark: Any) -> None:
    for tasks, cores, partitions in ((8, 2, 2), (8, 3, 2), (6, 4, 3), (12, 8, 6), (4, 16, 4), (7, 2, 7), (1, 2, 1)):
        assert shuffle_partitions(tasks, cores) == partitions
        keys = task_keys(tasks)
        rows = (spark.createDataFrame([(k,) for k in keys], "k int")
                .select("k", F.expr(f"pmod(hash(k), {partitions})").alias("bucket")).collect())
        assert [r.bucket for r in sorted(rows, key=lambda r: keys.index(r.k))] == [p % partitions
                                                                                   for p in range(tasks)]
