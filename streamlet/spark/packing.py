"""Input rows packed into one row per Arrow batch before the shuffle, for the stateful queries.

`transformWithStateInPandas` moves every input row through the shuffle, turns each Arrow batch into
pandas, walks it row by row (`itertuples`) to group it, and builds new frames from those rows: about
17 µs per record here, more than the task's own work, and the shuffle on top. The Kafka source's
rows of one Spark partition are one Kafka partition's, i.e. one task's, so a `mapInArrow` stage right
after the source (narrow: no shuffle, same Spark task) packs each Arrow batch whole, as Arrow IPC
bytes, into one row keyed by its task. The shuffle and the pandas path then carry a few rows per
batch, and the processor reads each blob back column-wise (`rows.add_columns`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

from streamlet.spark.rows import INPUT_COLUMNS, ByPartition, add_columns, by_offset

PACKED_SCHEMA = StructType([StructField("task", IntegerType(), False), StructField("rows", BinaryType(), False)])
"""The packed rows: the task's grouping key and an Arrow IPC stream of INPUT_COLUMNS rows."""


def _ipc(batch: Any) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def pack(batches: Iterator[Any]) -> Iterator[Any]:
    """`mapInArrow`'s function: each input batch as one row per task it holds (one, from a Kafka source)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = pa.schema([("task", pa.int32(), False), ("rows", pa.binary(), False)])
    for batch in batches:
        if not batch.num_rows:
            continue
        tasks = batch.column("task").unique().to_pylist()
        parts = [(tasks[0], batch)] if len(tasks) == 1 else [
            (task, batch.filter(pc.equal(batch.column("task"), task))) for task in tasks]
        yield pa.RecordBatch.from_pydict({"task": [task for task, _ in parts],
                                          "rows": [_ipc(part) for _, part in parts]}, schema=schema)


def unpack_frames(frames: Iterable[Any]) -> ByPartition:
    """The records of packed pandas frames, per (topic, partition), each sorted by offset (Spark does
    not keep a group's row order)."""
    import pyarrow as pa

    found: ByPartition = {}
    for frame in frames:
        for blob in frame["rows"].tolist():
            for batch in pa.ipc.open_stream(blob):
                add_columns(found, [batch.column(name).to_pylist() for name in INPUT_COLUMNS])
    for records in found.values():
        records.sort(key=by_offset)
    return found
