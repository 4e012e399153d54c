"""`group_frames.load_stream` against pyspark's own `TransformWithStateInPandasSerializer.load_stream`
on the same Arrow stream: the same triples, keys and frames (values, dtypes, columns, index).

No SparkSession: the serializer reads an Arrow IPC stream, built here in memory.
"""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pandas.testing import assert_frame_equal
from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer

from streamlet.spark import group_frames

HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
INPUT_SCHEMA = pa.schema([("task", pa.int32()), ("topic", pa.int32()), ("partition", pa.int32()),
                          ("offset", pa.int64()), ("timestamp", pa.int64()), ("key", pa.binary()),
                          ("value", pa.binary()), ("headers", pa.list_(HEADER))])
"""The engine's input rows (`streamlet.spark.rows.INPUT_COLUMNS`) as the query selects them."""


def _serializer(max_records: int, max_bytes: int, key_offsets: list[int]) -> Any:
    ser = TransformWithStateInPandasSerializer(
        timezone="UTC", safecheck=True, assign_cols_by_name=True, prefer_int_ext_dtype=False,
        arrow_max_records_per_batch=max_records, arrow_max_bytes_per_batch=max_bytes,
        int_to_decimal_coercion_enabled=False)
    ser.key_offsets = key_offsets
    return ser


def _stream(schema: pa.Schema, batches: list[dict[str, list[Any]]]) -> io.BytesIO:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, schema) as writer:
        for columns in batches:
            writer.write_batch(pa.record_batch(columns, schema=schema))
    return io.BytesIO(sink.getvalue())


def _collect(load: Any, ser: Any, stream: io.BytesIO) -> list[tuple[Any, Any, list[tuple[Any, Any]]]]:
    return [(mode, key, list(frames) if frames is not None else None) for mode, key, frames in load(ser, stream)]


def _assert_same(schema: pa.Schema, batches: list[dict[str, list[Any]]], *, key_offsets: list[int],
                 max_records: int, max_bytes: int = 2**31 - 1) -> list[tuple[Any, Any, Any]]:
    expected = _collect(group_frames.pyspark_load_stream(), _serializer(max_records, max_bytes, key_offsets),
                        _stream(schema, batches))
    got = _collect(group_frames.load_stream, _serializer(max_records, max_bytes, key_offsets),
                   _stream(schema, batches))
    # repr: NaN keys compare unequal (and are separate groups on both sides).
    assert [(mode, repr(key)) for mode, key, _ in got] == [(mode, repr(key)) for mode, key, _ in expected]
    for (_, key, frames), (_, _, want) in zip(got, expected, strict=True):
        if want is None:
            assert frames is None
            continue
        assert [repr(k) for k, _ in frames] == [repr(k) for k, _ in want] == [repr(key)] * len(want)
        assert [type(v) for v in key] == [type(v) for v in want[0][0]]
        assert len(frames) == len(want)
        for (_, frame), (_, pyspark_frame) in zip(frames, want, strict=True):
            assert_frame_equal(frame, pyspark_frame, check_exact=True)
    return got


def _input_rows(tasks: list[int], offset: int = 0, headers: bool = False) -> dict[str, list[Any]]:
    n = len(tasks)
    return {"task": tasks, "topic": [0] * n, "partition": [t % 3 for t in tasks],
            "offset": list(range(offset, offset + n)), "timestamp": [1_000 + i for i in range(n)],
            "key": [None if i % 7 == 0 else f"k{i}".encode() for i in range(n)],
            "value": [f"v{i}".encode() for i in range(n)],
            "headers": [[{"key": "h", "value": b"x"}] if headers and i % 2 else [] for i in range(n)]}


def test_the_engines_input_grouped_as_pyspark_groups_it() -> None:
    batches = [_input_rows([0, 0, 0, 1, 1], headers=True), _input_rows([1, 1, 2], 5), _input_rows([2], 8),
               _input_rows([0, 0], 9)]
    got = _assert_same(INPUT_SCHEMA, batches, key_offsets=[0], max_records=10_000)
    # Task 1 runs across the first two batches: one group, one frame; task 0 comes back later: a new group.
    assert [(key, [len(f) for _, f in frames]) for _, key, frames in got[:-2]] == [
        ((0,), [3]), ((1,), [4]), ((2,), [2]), ((0,), [2])]


def test_a_group_is_split_at_max_records_across_batches() -> None:
    batches = [_input_rows([3] * 5), _input_rows([3] * 4 + [4] * 7, 5)]
    got = _assert_same(INPUT_SCHEMA, batches, key_offsets=[0], max_records=3)
    assert [[len(f) for _, f in frames] for _, _, frames in got[:-2]] == [[3, 3, 3], [3, 3, 1]]


def test_a_group_is_split_by_bytes_with_the_running_average() -> None:
    batches = [_input_rows([5] * 6), _input_rows([5] * 9, 6, headers=True), _input_rows([6] * 4, 15)]
    _assert_same(INPUT_SCHEMA, batches, key_offsets=[0], max_records=100, max_bytes=400)


def test_no_rows_gives_only_the_timer_and_complete_calls() -> None:
    got = _assert_same(INPUT_SCHEMA, [], key_offsets=[0], max_records=10)
    assert [key for _, key, _ in got] == [None, None]


def test_columns_pandas_would_convert_are_built_from_rows_as_pyspark_does() -> None:
    schema = pa.schema([("g", pa.string()), ("h", pa.int64()), ("flag", pa.bool_()), ("ratio", pa.float32()),
                        ("when", pa.timestamp("us")), ("n", pa.int64()), ("from", pa.string())])
    batches = [{"g": ["a", "a", "b", "b"], "h": [1, 1, 1, 2], "flag": [True, None, False, True],
                "ratio": [0.5, None, 1.25, 2.0], "when": [1, None, 3, 4], "n": [1, None, 3, 4],
                "from": ["x", None, "y", "z"]},
               {"g": ["b", None, None], "h": [2, 7, 7], "flag": [None, True, False], "ratio": [1.0, 2.0, 3.0],
                "when": [5, 6, 7], "n": [5, 6, 7], "from": [None, None, "w"]}]
    _assert_same(schema, batches, key_offsets=[0, 1], max_records=2)


def test_float_keys_with_nan_and_widened_columns() -> None:
    schema = pa.schema([("x", pa.int8()), ("k", pa.float64()), ("u", pa.int16()), ("f", pa.float32())])
    batches = [{"x": [1, 2, 3, 4], "k": [1.5, 1.5, float("nan"), float("nan")], "u": [1, 2, 3, 4],
                "f": [0.1, 0.2, 0.3, 0.4]}]
    _assert_same(schema, batches, key_offsets=[1], max_records=10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 9)), max_size=12),
       cuts=st.lists(st.integers(1, 15), min_size=1, max_size=6),
       max_records=st.integers(1, 12), max_bytes=st.sampled_from([2**31 - 1, 150, 600]),
       headers=st.booleans())
def test_random_runs_batches_and_limits(runs: list[tuple[int, int]], cuts: list[int], max_records: int,
                                        max_bytes: int, headers: bool) -> None:
    tasks = [task for task, length in runs for _ in range(length)]
    batches, start, i = [], 0, 0
    while start < len(tasks):
        end = start + cuts[i % len(cuts)]
        batches.append(_input_rows(tasks[start:end], start, headers))
        start, i = end, i + 1
    _assert_same(INPUT_SCHEMA, batches, key_offsets=[0], max_records=max_records, max_bytes=max_bytes)


def test_install_replaces_the_method_once_and_keeps_pyspark_s() -> None:
    original = group_frames.pyspark_load_stream()
    assert original is not group_frames.load_stream
    assert group_frames.install() is True
    assert group_frames.install() is True
    assert TransformWithStateInPandasSerializer.load_stream is group_frames.load_stream
    assert group_frames.pyspark_load_stream() is original


@pytest.fixture(autouse=True)
def _pyspark_version() -> None:
    import pyspark

    assert pyspark.__version__ == group_frames.PYSPARK_VERSION
