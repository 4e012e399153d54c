"""Input rows, as Spark hands them to Python, turned into the `RawRecord`s a task consumes.

Column-wise on purpose: the row-based `transformWithState` builds each row from Arrow one cell at a
time (`as_py()` per cell: about 30 µs per record here, as much as the topology's own work), while a
column turned into a Python list at once costs well under a microsecond per value. Both the pandas
frames of `transformWithStateInPandas` and the Arrow batches of `mapInArrow` come through here.

Headers cross as one JSON string per record (`headers_column`), not as Spark's array of structs: the
JVM's Arrow writer asks for the batch's size after every row, and an Arrow list column answers that
by walking every row written so far (`ListVector.setValueCount`), so an array column made each Arrow
batch quadratic in its rows. Measured on WordCount (`local[2]`, 250,000 lines): that walk was 30% of
the JVM's samples, and a run took 20.2 s with the array against 16.1 s with the string. A record
without headers has a null there, which costs nothing on either side.
"""

from __future__ import annotations

from base64 import b64decode
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

import orjson

from streamlet.actors.partition_group import RawRecord
from streamlet.record import Headers

INPUT_COLUMNS = ("task", "topic", "partition", "offset", "timestamp", "key", "value", "headers")
"""The input rows' columns, in this order (the query selects them so). `topic` is the topic's index in the
query's source topics (`topic_column`), not its name."""

ByPartition = dict[tuple[str, int], list[RawRecord]]
by_offset = attrgetter("offset")
"""Sort key of a partition's records."""


def _bytes(data: Any) -> bytes | None:
    return data if data is None or type(data) is bytes else bytes(data)


def headers_column() -> Any:
    """The `headers` input column: the Kafka source's headers as JSON, `[{"key": ..., "value": base64}]`
    (Spark writes binary as base64; a null value is left out, also in a session whose
    `spark.sql.jsonGenerator.ignoreNullFields` is false), or null when a record has none."""
    from pyspark.sql import functions as F

    return F.when(F.size("headers") > 0, F.to_json(F.col("headers"), {"ignoreNullFields": "true"}))


def topic_column(topics: Sequence[str]) -> Any:
    """The `topic` input column: the record's topic as its index in `topics` (the query's source topics,
    in the order the tasks are told them), not the name. A name is tens of bytes on every row, through
    the shuffle, Arrow and pandas, and for a repartition topic it is most of the row: WordCount's
    counting rows carry a 6-byte key and an 8-byte count beside a 50-odd-byte topic name."""
    from pyspark.sql import functions as F

    if len(topics) == 1:
        return F.lit(0)
    index = F.create_map(*[F.lit(x) for i, topic in enumerate(topics) for x in (topic, i)])
    return index[F.col("topic")]


def _headers(encoded: str | None) -> Headers:
    if not encoded:
        return ()
    return tuple((h["key"], b64decode(h["value"]) if "value" in h else b"") for h in orjson.loads(encoded))


def _as_bytes(column: list[Any]) -> list[Any]:
    """The column with every value as bytes or None (pandas and Arrow give bytes already)."""
    if all(v is None or type(v) is bytes for v in column):
        return column
    return [_bytes(v) for v in column]


def _header_column(column: list[Any]) -> list[Headers]:
    if not any(column):
        return [()] * len(column)  # the common case: no record has headers
    return [_headers(h) for h in column]


def add_columns(into: ByPartition, columns: Sequence[list[Any]], topics: Sequence[str]) -> None:
    """Append one chunk of input, given as INPUT_COLUMNS lists, to its partitions' records (`topics`: the
    names of the `topic` column's indexes)."""
    _tasks, indexes, partitions, offsets, stamps, keys, values, headers = columns
    keys, values, kept = _as_bytes(keys), _as_bytes(values), _header_column(headers)
    runs = set(zip(indexes, partitions, strict=True))
    for index, partition in runs:
        if len(runs) == 1:
            rows: Iterable[tuple[Any, ...]] = zip(offsets, stamps, keys, values, kept, strict=True)
        else:
            rows = [(o, t, k, v, h) for i, p, o, t, k, v, h in zip(indexes, partitions, offsets, stamps, keys, values,
                                                                    kept, strict=True)
                    if i == index and p == partition]
        topic = topics[index]
        into.setdefault((topic, partition), []).extend(
            [RawRecord(topic, partition, o, t, k, v, h) for o, t, k, v, h in rows])


def from_frames(frames: Iterable[Any], topics: Sequence[str]) -> ByPartition:
    """The records of pandas frames with INPUT_COLUMNS, per (topic, partition), each sorted by offset
    (Spark does not keep a group's row order)."""
    found: ByPartition = {}
    for frame in frames:
        add_columns(found, [frame[name].tolist() for name in INPUT_COLUMNS], topics)
    for records in found.values():
        records.sort(key=by_offset)
    return found


def from_arrow(batch: Any, topics: Sequence[str]) -> ByPartition:
    """The records of one Arrow record batch with INPUT_COLUMNS (as `mapInArrow` hands them, already in
    offset order: one Kafka partition's run, never reordered)."""
    found: ByPartition = {}
    add_columns(found, [batch.column(name).to_pylist() for name in INPUT_COLUMNS], topics)
    return found
