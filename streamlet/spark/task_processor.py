"""`TaskProcessor`: the `transformWithStateInPandas` processor that runs streamlet tasks inside Spark.

Each grouping key is one task (sub-topology, partition). For each micro-batch Spark hands a task's
rows to `handleInputRows` as pandas frames, in no particular order (the pandas flavour because the
row-based one builds every row cell by cell, see `rows`); the task is built afresh (its stores over Spark's
state, its progress from the `task` state), the rows go into its `PartitionGroup` per input partition
in offset order, and the ordinary `StreamTask.process` merges partitions by timestamp and punctuates
on stream time. The task then commits (stores write their dirty entries back to Spark once), its
progress is saved, and it sends its output to Kafka itself (see `sink`). Nothing about a task survives
in the Python worker between batches: Spark may run the next batch of the same task elsewhere.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import LongType, StructField, StructType

from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_progress import TaskProgress
from streamlet.spark.batch_gc import fewer_collections
from streamlet.spark.catch_up import restore_changelog_tails
from streamlet.spark.exactly_once import ExactlyOnceBatch, SparkPosition, abandon
from streamlet.spark.fused import unpack
from streamlet.spark.group_frames import install as _install_group_frames
from streamlet.spark.plan import SubTopologyPlan
from streamlet.spark.rows import ByPartition, from_frames
from streamlet.spark.sink import lookup_topics, send_output
from streamlet.spark.state_adapter import TaskState
from streamlet.stores.spark import over_spark_state

_install_group_frames()  # in the Python worker: unpickling the processor imports this module before any input

OUTPUT_SCHEMA = StructType([StructField("records", LongType(), False)])
"""One row per task and batch: how many records it sent (its output goes to Kafka from the task)."""


def _sent(records: int) -> Any:
    import pandas as pd

    return pd.DataFrame({"records": [records]})

_STATE_ROOT = Path(tempfile.gettempdir()) / "streamlet-spark-tasks"
"""Handed to tasks as their state root; Spark-backed stores never write there."""


class TaskProcessor(StatefulProcessor):
    """Runs one sub-topology's tasks: each grouping key is a task, rebuilt for each micro-batch."""

    def __init__(self, plan: SubTopologyPlan) -> None:
        self._plan = plan

    def init(self, handle: Any) -> None:
        plan = self._plan
        self._handle = handle
        self._sub = plan.subtopology
        self._state = TaskState(handle, list(self._sub.stores))
        self._partition_of = {key: p for p, key in enumerate(plan.task_keys)}
        self._config = plan.config()
        self._cache_bytes = int(self._config["statestore.cache.max.bytes"]) // max(1, plan.tasks)
        self._eos = self._config.exactly_once

    # -- one task, built for one batch ------------------------------------------------------------------
    def _open_task(self, key: Any, now: int, batch: ExactlyOnceBatch | None) -> tuple[StreamTask, SparkPosition]:
        """The task over Spark's state. Under exactly-once (`batch`), state that Kafka's committed
        offsets are ahead of is first brought forward from the changelogs (see `catch_up`)."""
        plan = self._plan
        counts = plan.partition_counts
        task = StreamTask(plan.topology, self._sub, self._partition_of[key[0]], self._config,
                          RecordCollector(counts.__getitem__), _STATE_ROOT, clock=lambda: now,
                          resolve_topic=plan.resolve_topic, cache_bytes=self._cache_bytes,
                          open_store=over_spark_state(self._state.stores.__getitem__,
                                                      logged=batch is not None))
        position = SparkPosition()
        try:
            task.initialize_stores()
            task.initialize_processors()
            saved = self._state.progress()
            progress = None if saved is None else TaskProgress.from_bytes(saved)
            if batch is not None:
                position = SparkPosition.from_bytes(self._state.position())
                if batch.behind(position):
                    changelogs = restore_changelog_tails(plan.client_settings(), task, position.changelogs)
                    position = SparkPosition({f"{t}:{p}": o for (t, p), o in batch.next_offsets({}).items()},
                                             changelogs)
                    progress = batch.committed_progress()  # what the committed state had
            if progress is not None:
                task.resume(progress)
        except BaseException:
            task.close(clean=False)
            raise
        return task, position

    def _finish(self, task: StreamTask, batch: ExactlyOnceBatch | None, position: SparkPosition) -> Any:
        """Commit the batch: stores write back, progress saved, timers set, the output sent and
        acknowledged before Spark commits the batch (at-least-once); under exactly-once, committed in
        the task's transaction with its input offsets."""
        task.prepare_commit()
        progress = task.progress()
        self._state.set_progress(progress.to_bytes())
        if self._plan.wall_clock:
            self._set_timer(task.next_wall_clock_due())
        changelogs = list(task.state.changelog_partitions().values())
        task.close(clean=True)
        collector = task.collector
        unknown = collector.deferred_topics()
        if unknown:  # topics a topic name extractor named that the plan does not know (kept for later batches)
            self._plan.partition_counts.update(lookup_topics(self._plan.client_settings(), unknown))
            collector.place_deferred()
        drained = collector.drain()
        if batch is None:
            return _sent(send_output(self._plan.client_settings(), drained))
        acked = batch.commit(drained, task.consumed_offsets, progress)
        self._state.set_position(batch.position_after(position, task.consumed_offsets, acked, changelogs).to_bytes())
        return _sent(sum(len(records) for records in drained.values()))

    def _set_timer(self, due: int | None) -> None:
        handle = self._handle
        registered = list(handle.listTimers())
        for when in registered:
            if when != due:
                handle.deleteTimer(when)
        if due is not None and due not in registered:
            handle.registerTimer(due)

    def _records(self, key: Any, frames: Iterator[Any]) -> ByPartition:
        """The batch's input records per partition, each sorted by offset: from the Kafka source's rows, or
        packed by the upstream sub-topology run in this query (see `fused`)."""
        plan = self._plan
        if plan.upstream is None:
            return from_frames(frames, plan.source_topics)
        return unpack(frames, plan.source_topics[0], self._partition_of[key[0]],
                      plan.partition_counts[plan.upstream.source_topics[0]])

    def _run(self, key: Any, now: int, frames: Iterator[Any] | None) -> Any:
        by_partition = self._records(key, frames) if frames is not None else {}
        batch = ExactlyOnceBatch(self._plan, self._partition_of[key[0]]) if self._eos else None
        try:
            if batch is not None:
                by_partition = batch.unprocessed(by_partition)
            task, position = self._open_task(key, now, batch)
        except BaseException:
            if batch is not None:
                batch.abort()
            raise
        try:
            if by_partition:
                for (topic, partition), records in sorted(by_partition.items()):
                    task.add_records(topic, partition, records)
                task.process()
            if self._plan.wall_clock:
                task.maybe_punctuate_wall_clock(now)
            return self._finish(task, batch, position)
        except BaseException:
            abandon(task, batch)
            raise

    # -- Spark's callbacks ------------------------------------------------------------------------------
    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        now = timerValues.getCurrentProcessingTimeInMs() if self._plan.wall_clock else int(time.time() * 1000)
        with fewer_collections():
            sent = self._run(key, now, rows)
        yield sent

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
        with fewer_collections():
            sent = self._run(key, timerValues.getCurrentProcessingTimeInMs(), None)
        yield sent

    def close(self) -> None:
        pass
