"""Packing a Kafka source's Arrow batches into one row per task and reading them back (no SparkSession):
every record comes back once, with its fields and headers, per partition in offset order."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.actors.partition_group import RawRecord
from streamlet.spark.packing import pack, unpack_frames

_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
_SCHEMA = pa.schema([("task", pa.int32()), ("topic", pa.string()), ("partition", pa.int32()),
                     ("offset", pa.int64()), ("timestamp", pa.int64()), ("key", pa.binary()),
                     ("value", pa.binary()), ("headers", _HEADERS)])

_rows = st.lists(st.tuples(st.sampled_from([(7, 0), (9, 1)]), st.integers(0, 10**6), st.integers(0, 10**12),
                           st.none() | st.binary(max_size=5), st.none() | st.binary(max_size=5),
                           st.lists(st.tuples(st.text(max_size=3), st.binary(max_size=3)), max_size=2)),
                 max_size=30, unique_by=lambda r: (r[0], r[1]))


def _batch(rows: list[Any]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{"task": task, "topic": "t", "partition": partition, "offset": offset, "timestamp": ts, "key": k,
          "value": v, "headers": [{"key": hk, "value": hv} for hk, hv in headers]}
         for (task, partition), offset, ts, k, v, headers in rows], schema=_SCHEMA)


@settings(max_examples=50, deadline=None)
@given(_rows, st.integers(1, 4))
def test_packed_rows_come_back_per_partition_in_offset_order(rows: list[Any], chunks: int) -> None:
    size = max(1, len(rows) // chunks)
    batches = [_batch(rows[i:i + size]) for i in range(0, len(rows), size)]
    packed = list(pack(iter(batches)))
    tasks = [t for b in packed for t in b.column("task").to_pylist()]
    assert sorted(tasks) == sorted(t for b in batches for t in set(b.column("task").to_pylist()))
    frames = [pd.DataFrame({"task": b.column("task").to_pylist(), "rows": b.column("rows").to_pylist()})
              for b in packed]
    expected: dict[tuple[str, int], list[RawRecord]] = {}
    for (_task, partition), offset, ts, k, v, headers in sorted(rows, key=lambda r: (r[0], r[1])):
        expected.setdefault(("t", partition), []).append(RawRecord("t", partition, offset, ts, k, v, tuple(headers)))
    assert unpack_frames(frames) == expected


def test_empty_batches_pack_to_nothing() -> None:
    assert list(pack(iter([_batch([])]))) == []
