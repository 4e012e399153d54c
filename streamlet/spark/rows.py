"""Input rows, as Spark hands them to Python, turned into the `RawRecord`s a task consumes.

Column-wise on purpose: the row-based `transformWithState` builds each row from Arrow one cell at a
time (`as_py()` per cell: about 30 µs per record here, as much as the topology's own work), while a
column turned into a Python list at once costs well under a microsecond per value. Both the pandas
frames of `transformWithStateInPandas` and the Arrow batches of `mapInArrow` come through here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

from streamlet.actors.partition_group import RawRecord
from streamlet.record import Headers

INPUT_COLUMNS = ("task", "topic", "partition", "offset", "timestamp", "key", "value", "headers")
"""The input rows' columns, in this order (the query selects them so)."""

ByPartition = dict[tuple[str, int], list[RawRecord]]
by_offset = attrgetter("offset")
"""Sort key of a partition's records."""


def _bytes(data: Any) -> bytes | None:
    return data if data is None or type(data) is bytes else bytes(data)


def _header(header: Any) -> tuple[str, bytes]:
    # A struct is a dict in pandas and in Arrow's to_pylist, a tuple-like Row elsewhere.
    key, value = (header["key"], header["value"]) if isinstance(header, dict) else header
    return key, _bytes(value) or b""


def _headers(headers: Any) -> Headers:
    return tuple(_header(h) for h in headers) if headers is not None and len(headers) else ()


def _as_bytes(column: list[Any]) -> list[Any]:
    """The column with every value as bytes or None (pandas and Arrow give bytes already)."""
    if all(v is None or type(v) is bytes for v in column):
        return column
    return [_bytes(v) for v in column]


def _header_column(column: list[Any]) -> list[Headers]:
    if not any(h is not None and len(h) for h in column):
        return [()] * len(column)  # the common case: no record has headers
    return [_headers(h) for h in column]


def add_columns(into: ByPartition, columns: Sequence[list[Any]]) -> None:
    """Append one chunk of input, given as INPUT_COLUMNS lists, to its partitions' records."""
    _tasks, topics, partitions, offsets, stamps, keys, values, headers = columns
    keys, values, kept = _as_bytes(keys), _as_bytes(values), _header_column(headers)
    runs = set(zip(topics, partitions, strict=True))
    for topic, partition in runs:
        if len(runs) == 1:
            rows: Iterable[tuple[Any, ...]] = zip(offsets, stamps, keys, values, kept, strict=True)
        else:
            rows = [(o, t, k, v, h) for tp, p, o, t, k, v, h in zip(topics, partitions, offsets, stamps, keys, values,
                                                                     kept, strict=True)
                    if tp == topic and p == partition]
        into.setdefault((topic, partition), []).extend(
            [RawRecord(topic, partition, o, t, k, v, h) for o, t, k, v, h in rows])


def from_frames(frames: Iterable[Any]) -> ByPartition:
    """The records of pandas frames with INPUT_COLUMNS, per (topic, partition), each sorted by offset
    (Spark does not keep a group's row order)."""
    found: ByPartition = {}
    for frame in frames:
        add_columns(found, [frame[name].tolist() for name in INPUT_COLUMNS])
    for records in found.values():
        records.sort(key=by_offset)
    return found


def from_arrow(batch: Any) -> ByPartition:
    """The records of one Arrow record batch with INPUT_COLUMNS (as `mapInArrow` hands them, already in
    offset order: one Kafka partition's run, never reordered)."""
    found: ByPartition = {}
    add_columns(found, [batch.column(name).to_pylist() for name in INPUT_COLUMNS])
    return found
