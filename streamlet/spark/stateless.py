"""Sub-topologies without state run as `mapInArrow` over the Kafka source: no shuffle, no state store.

A sub-topology with no store, one source topic, no punctuation and no processor that carries progress
(WordCount's split-and-repartition half, a filter/map pipe) needs nothing from one micro-batch to the
next. Spark's Kafka source gives each topic partition of a batch its own Spark partition, in offset
order (no `minPartitions`), which is exactly one task's input: so the task runs where the rows are,
instead of behind a shuffle into `transformWithState`, whose state store commits and grouping cost
more per batch than such a task's own work.

What a task would still carry between batches (the task is built for each batch): the stream and
partition times (no punctuation reads them; a timestamp extractor that falls back on partition time,
`UsePartitionTimeOnInvalidTimestamp`, needs it) and the round robin over partitions for records whose
key is null. Under exactly-once they come back from the metadata committed with the task's offsets (see
`commit_progress`); under at-least-once they start again at each batch.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_progress import TaskProgress
from streamlet.spark.batch_gc import fewer_collections
from streamlet.spark.exactly_once import ExactlyOnceBatch, abandon
from streamlet.spark.plan import SubTopologyPlan
from streamlet.spark.rows import ByPartition, by_offset, from_arrow
from streamlet.spark.sink import Drained, send_output

_STATE_ROOT = Path(tempfile.gettempdir()) / "streamlet-spark-stateless"
"""Handed to tasks as their state root; a task without stores never writes there."""


def is_stateless(plan: SubTopologyPlan, probed: TaskProgress) -> bool:
    """Whether `plan`'s sub-topology can run without state (`probed`: a fresh task's progress after
    its processors' `init`)."""
    sub = plan.subtopology
    return (not sub.stores and len(sub.source_topics) == 1 and not probed.stream_punctuations
            and not probed.wall_punctuations and not probed.processors)


def run_task(plan: SubTopologyPlan, partition: int, found: ByPartition,
             deliver: Callable[[Drained], int] | None = None) -> int:
    """Runs the task; under exactly-once in its own transaction, without the input already committed
    (see `exactly_once`); under at-least-once its output goes to `deliver` (default: sent to Kafka and
    acknowledged), which returns how many records it sent."""
    counts = plan.partition_counts
    now = int(time.time() * 1000)
    config = plan.config()
    batch = ExactlyOnceBatch(plan, partition) if config.exactly_once else None
    if batch is not None:
        found = batch.unprocessed(found)
    task = StreamTask(plan.topology, plan.subtopology, partition, config, RecordCollector(counts.__getitem__),
                      _STATE_ROOT, clock=lambda: now,
                      resolve_topic=plan.resolve_topic, cache_bytes=0)
    try:
        task.initialize_stores()
        task.initialize_processors()
        if batch is not None and (committed := batch.committed_progress()) is not None:
            task.resume(committed)  # partition time (and round robin) from the last commit, as Kafka Streams keeps it
        for (topic, part), records in sorted(found.items()):
            records.sort(key=by_offset)
            task.add_records(topic, part, records)
        task.process()
        task.prepare_commit()
        task.close(clean=True)
        drained = task.collector.drain()
        if batch is not None:
            batch.commit(drained, task.consumed_offsets, task.progress())
            return sum(len(records) for records in drained.values())
    except BaseException:
        abandon(task, batch)
        raise
    if deliver is not None:
        return deliver(drained)
    return send_output(plan.client_settings(), drained)


def stateless_tasks(plan: SubTopologyPlan) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """`mapInArrow`'s function: the Spark partition's rows (one Kafka partition's) through the task,
    its output sent and acknowledged; yields one row with the number of records sent."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        with fewer_collections():
            partition, found = read_partition(plan, batches)
            sent = 0 if partition is None else run_task(plan, partition, found)
        yield pa.RecordBatch.from_pydict({"records": [sent]}, schema=pa.schema([("records", pa.int64(), False)]))

    return run


def read_partition(plan: SubTopologyPlan, batches: Iterator[Any]) -> tuple[int | None, ByPartition]:
    """The Spark partition's records and the one Kafka partition they are from (None: no records)."""
    found: ByPartition = {}
    for batch in batches:
        for where, records in from_arrow(batch, plan.source_topics).items():
            found.setdefault(where, []).extend(records)
    partitions = {partition for _topic, partition in found}
    assert len(partitions) <= 1, f"a Kafka partition was split or merged across Spark partitions: {partitions}"
    return (partitions.pop() if partitions else None), found
