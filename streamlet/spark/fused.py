"""A stateless sub-topology and the stateful one it repartitions for, as one query with one shuffle.

WordCount is two sub-topologies: the split writes every word to a repartition topic keyed by the word,
and the count reads it back. Run as two queries, every word is produced to Kafka from Python, written
by the broker, read back by the connector with its headers, and only then shuffled to its counting task.
A repartition topic is a shuffle by key already: the records the stateless tasks write to it are put on
the partition the default partitioner picks, and the counting task of that partition reads them. Here
the stateless tasks run in the query's map stage (as `stateless` runs them) and hand those records on
to the stateful tasks, partition for partition, through Spark's shuffle: packed, one row per upstream
task and downstream task and batch (`PACKED_COLUMNS`), so the JVM moves a few rows where it would move
every word, and the downstream task unpacks them into records. Their other output still goes to Kafka.
Measured in `benchmarks/RESULTS.md` ("One query for the split and the count").

The stateful tasks see what they would have read from the repartition topic: the same keys, values,
timestamps and headers, on the same partitions, each upstream task's records in the order it wrote
them. What a topic would have added is an offset; the records get one made up for the batch (see
`_offsets`), which orders each upstream task's records as written and interleaves upstream tasks as a
topic written by several producers does. Nothing keeps it past the batch: under at-least-once a task's
progress holds no offsets (Spark's checkpoint holds the query's input position).

When the plan fuses a pair (`fusable_pairs`): at-least-once only (exactly-once commits each task's input
offsets in its own Kafka transaction, and a fused task's input has none); the stateful sub-topology
reads nothing but that repartition topic and no other sub-topology writes or reads it; and
`spark.fuse.subtopologies` is not false. `SparkStreams` also keeps the two queries when either
already has a checkpoint, or the application's group has committed offsets on the repartition topic
(it ran on the asyncio runtime before): records left there would otherwise never be read.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from typing import Any

from streamlet.actors.partition_group import RawRecord
from streamlet.actors.record_collector import ProducedRecord
from streamlet.spark.batch_gc import fewer_collections
from streamlet.spark.plan import ENGINE_KEY_PREFIX, SubTopologyPlan
from streamlet.spark.rows import ByPartition, by_offset
from streamlet.spark.sink import Drained, send_output
from streamlet.spark.stateless import read_partition, run_task

FUSE_KEY = f"{ENGINE_KEY_PREFIX}fuse.subtopologies"
"""`false` keeps every sub-topology its own query, repartition topics going through Kafka (default: true;
see the module docstring). Like `spark.task.partitions`, a checkpoint keeps the plan it started with."""


def fuse_wanted(settings: dict[str, Any]) -> bool:
    """`spark.fuse.subtopologies` (default true)."""
    return str(settings.get(FUSE_KEY, "true")).strip().lower() != "false"


def fusable_pairs(plans: list[SubTopologyPlan]) -> list[tuple[SubTopologyPlan, SubTopologyPlan]]:
    """The (upstream, downstream) pairs whose repartition records could skip Kafka (see the module
    docstring; the setting, checkpoints and committed offsets are `SparkStreams`' to check). An upstream
    sub-topology is in one pair at most: it runs in one query only."""
    pairs = []
    used: set[int] = set()
    for down in plans:
        if down.stateless or len(down.subtopology.source_topics) != 1 or down.config().exactly_once:
            continue
        (topic,) = down.subtopology.source_topics
        if topic not in down.topology.internal_topics:
            continue
        writers = [p for p in plans if topic in p.subtopology.sink_topics]
        readers = [p for p in plans if topic in p.subtopology.source_topics]
        if len(writers) != 1 or readers != [down]:
            continue
        (up,) = writers
        if up is down or not up.stateless or up.subtopology_id in used:
            continue
        used.add(up.subtopology_id)
        pairs.append((up, down))
    return pairs


PACKED_COLUMNS = ("task", "source", "first", "records")
"""The rows the map stage hands to the shuffle: the downstream task's grouping key, the upstream (source)
partition, the index of the chunk's first record among those that partition's task wrote for the
downstream task in this batch, and the chunk's records (`_pack`)."""

RECORDS_PER_ROW = 100_000
"""Records per packed row at most (a row is one binary cell of a few MB at most)."""


def packed_schema() -> Any:
    """PACKED_COLUMNS as Spark's schema."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    return StructType([StructField("task", IntegerType(), False), StructField("source", IntegerType(), False),
                       StructField("first", LongType(), False), StructField("records", BinaryType(), False)])


def _pack(records: list[ProducedRecord]) -> bytes:
    """Records as one cell: their columns pickled (plain lists of bytes, ints and header tuples). Pickle is
    safe here for the reason Spark pickles its own rows and functions: the cells pass only between this
    query's Python workers, through its shuffle."""
    return pickle.dumps(([r.key for r in records], [r.value for r in records], [r.timestamp for r in records],
                         [r.headers for r in records]), protocol=pickle.HIGHEST_PROTOCOL)


def _offsets(first: int, count: int, source: int, sources: int) -> range:
    """Offsets for `count` records (from the `first`-th on) that upstream task `source` wrote for one
    downstream task in this batch: increasing in the order written, and never the same as another
    upstream task's (each takes its own residue modulo the upstream partition count), so that the
    downstream task's sort by offset keeps each writer's order and interleaves the writers."""
    start = first * sources + source
    return range(start, start + count * sources, sources)


def _packed_rows(kept: dict[int, list[ProducedRecord]], task_keys: list[int],
                 source: int) -> dict[str, list[Any]]:
    """The records the upstream task `source` wrote, per repartition partition, as PACKED_COLUMNS."""
    columns: dict[str, list[Any]] = {name: [] for name in PACKED_COLUMNS}
    for partition, written in sorted(kept.items()):
        for first in range(0, len(written), RECORDS_PER_ROW):
            columns["task"].append(task_keys[partition])
            columns["source"].append(source)
            columns["first"].append(first)
            columns["records"].append(_pack(written[first:first + RECORDS_PER_ROW]))
    return columns


def unpack(frames: Iterable[Any], topic: str, partition: int, sources: int) -> ByPartition:
    """The downstream task's input from PACKED_COLUMNS frames: its records, sorted by their offsets."""
    records: list[RawRecord] = []
    for frame in frames:
        for source, first, packed in zip(frame["source"].tolist(), frame["first"].tolist(),
                                         frame["records"].tolist(), strict=True):
            keys, values, stamps, headers = pickle.loads(packed)
            records.extend(map(RawRecord, repeat(topic), repeat(partition),
                               _offsets(first, len(keys), source, sources), stamps, keys, values, headers))
    if not records:
        return {}
    records.sort(key=by_offset)
    return {(topic, partition): records}


def repartition_in_shuffle(upstream: SubTopologyPlan, downstream: SubTopologyPlan) -> Callable[[Iterator[Any]],
                                                                                              Iterator[Any]]:
    """`mapInArrow`'s function: one Kafka partition's rows through its upstream task; yields the records it
    wrote to the repartition topic as PACKED_COLUMNS rows for the downstream tasks, and sends the rest
    of its output to Kafka (acknowledged before the map stage ends)."""
    (topic,) = downstream.source_topics

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        with fewer_collections():
            source, found = read_partition(upstream, batches)
            if source is None:
                return
            kept: dict[int, list[ProducedRecord]] = {}

            def deliver(drained: Drained) -> int:
                rest = {}
                for (name, p), records in drained.items():
                    if name == topic:
                        kept[p] = records
                    else:
                        rest[(name, p)] = records
                return send_output(upstream.client_settings(), rest)

            run_task(upstream, source, found, deliver)
            columns = _packed_rows(kept, downstream.task_keys, source)
        if columns["task"]:
            yield pa.RecordBatch.from_pydict(columns, schema=to_arrow_schema(packed_schema()))

    return run
