"""Column-wise grouping of `transformWithStateInPandas` input, in place of pyspark's per-row one.

pyspark 4.2.0's `TransformWithStateInPandasSerializer.load_stream` turns each Arrow batch into pandas,
then walks it row by row (`itertuples`), groups the rows by key with `itertools.groupby` and builds a
new `DataFrame` from each group's row tuples: per-record Python work that took 5.0-5.7 s of a
counting task's 300,000 words, more than the task's own processing. The rows of one grouping key
arrive contiguously (pyspark's serializer relies on it too), so the same groups can be cut out of
each batch's frame by finding where the key changes and slicing.

`install()` replaces that one method (on that class only; its init-state subclass has its own) when
streamlet's Spark task processor is imported in a Python worker, which happens while the worker
unpickles the processor, before it reads any input. The replacement keeps pyspark's contract:

* the same `(PROCESS_DATA, key, frames)` triples, then `(PROCESS_TIMER, None, None)` and
  `(COMPLETE, None, None)`; `key` and each frame's first item are the key tuple of the group's first
  row, with the values as pandas iterates them (Python scalars), as `itertuples` gives them;
* a group's rows split into frames at the same rows as pyspark does (`arrow_max_records_per_batch`,
  and `arrow_max_bytes_per_batch` against the running average row size), across Arrow batches;
* frames equal to pyspark's (`pandas.testing.assert_frame_equal`: same columns as `itertuples` names
  them, same dtypes, a fresh `RangeIndex`). Slices are only handed out as they are where building a
  frame from row tuples would give back the same dtypes (see `_slices_keep_dtypes`); elsewhere the
  group's frames are built from row tuples exactly as pyspark builds them, only without the per-row
  grouping.

The module is tied to pyspark 4.2.0's serializer (pinned in pyproject): `install()` refuses any other
version, and tests/spark/test_group_frames.py compares it with pyspark's own method on the same input.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterator
from itertools import groupby
from operator import itemgetter
from typing import Any

PYSPARK_VERSION = "4.2.0"
"""The pyspark version whose serializer this replaces."""

_NUMPY_WIDENED = {"int8": "int64", "int16": "int64", "int32": "int64", "int64": "int64",
                  "uint8": "int64", "uint16": "int64", "uint32": "int64",
                  "float16": "float64", "float32": "float64", "float64": "float64", "bool": "bool"}
"""numpy dtypes a column keeps, or widens to, when pandas builds a frame from its values as Python
scalars (what `itertuples` hands out): ints come back as int64, floats as float64."""

_OBJECT_KINDS_KEPT = frozenset({"string", "bytes", "mixed", "empty"})
"""`infer_dtype(skipna=True)` results of an object column that a frame built from row tuples leaves as
object (values of one numeric, boolean or time type would be converted)."""

_Slice = tuple[Any, int, int]
"""(frame of one Arrow batch, first row, end row) of one group."""


def _slices_keep_dtypes(frame: Any) -> tuple[tuple[str, str], ...] | None:
    """Per column of `frame`: its dtype and the one a frame built from its row tuples would give it,
    if slicing (and widening) can stand for that; None when it cannot (an extension dtype, a time
    zone, an object column whose values pandas would convert)."""
    import pandas as pd

    dtypes: list[tuple[str, str]] = []
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        name = str(column.dtype)
        if name == "object":
            if pd.api.types.infer_dtype(column, skipna=True) not in _OBJECT_KINDS_KEPT:
                return None
            dtypes.append((name, name))
        elif name in _NUMPY_WIDENED:
            dtypes.append((name, _NUMPY_WIDENED[name]))
        else:
            return None
    return tuple(dtypes)


def _row_frame(slices: list[_Slice]) -> Any:
    """A frame built from the slices' row tuples, as pyspark builds each group's frames."""
    import pandas as pd

    return pd.DataFrame([row for frame, start, end in slices
                         for row in frame.iloc[start:end].itertuples(index=False)])


def _sliced_frame(slices: list[_Slice], columns: list[str], dtypes: tuple[tuple[str, str], ...]) -> Any:
    import pandas as pd

    parts = [frame.iloc[start:end] for frame, start, end in slices]
    out = parts[0].reset_index(drop=True) if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    out.columns = columns
    widen = {columns[i]: target for i, (dtype, target) in enumerate(dtypes) if dtype != target}
    return out.astype(widen) if widen else out


def _row_columns(frame: Any) -> list[str]:
    """The columns of a frame built from `frame.itertuples()` rows: its names as the rows' namedtuple
    fields (invalid or repeated names renamed `_<position>`)."""
    row_type: Any = collections.namedtuple("Pandas", list(frame.columns), rename=True)  # type: ignore[misc]
    return list(row_type._fields)


class _Batch:
    """One Arrow batch as pyspark's serializer sees it: its frame, its key runs, how frames of it are built."""

    def __init__(self, frame: Any, keys: list[tuple[Any, ...]], average_row_size: float) -> None:
        self.frame = frame
        self.keys = keys
        self.average_row_size = average_row_size
        self.dtypes = _slices_keep_dtypes(frame)
        self.columns = _row_columns(frame)

    def runs(self) -> Iterator[tuple[tuple[Any, ...], int, int]]:
        """(key, start, end) of each run of equal keys, compared as `itertools.groupby` does."""
        keys = self.keys
        start = 0
        for position in range(1, len(keys)):
            if keys[position] != keys[start]:
                yield keys[start], start, position
                start = position
        if keys:
            yield keys[start], start, len(keys)


class _GroupFrames:
    """Cuts the batches of one `load_stream` call into pyspark's (key, frame) pairs."""

    def __init__(self, serializer: Any) -> None:
        self._ser = serializer
        self._max_records = serializer.arrow_max_records_per_batch
        self._max_bytes = serializer.arrow_max_bytes_per_batch

    def _rows_until_full(self, held: int, average: float) -> int:
        """How many more rows make a frame of `held` rows full: pyspark emits a frame once
        `rows >= max records` or `rows * average row size >= max bytes`, checked after each row."""
        full = self._max_records
        if self._max_bytes <= 0:
            full = 1
        elif average > 0:
            by_bytes = max(1, math.ceil(self._max_bytes / average))
            while by_bytes > 1 and (by_bytes - 1) * average >= self._max_bytes:
                by_bytes -= 1
            while by_bytes * average < self._max_bytes:
                by_bytes += 1
            full = min(full, by_bytes)
        return max(full, held + 1) - held

    def _frame(self, slices: list[_Slice], batches: list[_Batch]) -> Any:
        first = batches[0]
        if first.dtypes is not None and all(b.dtypes == first.dtypes and b.columns == first.columns
                                             for b in batches[1:]):
            return _sliced_frame(slices, first.columns, first.dtypes)
        return _row_frame(slices)

    def pairs(self, batches: Iterator[Any]) -> Iterator[tuple[tuple[Any, ...], Any]]:
        """(group key, frame) for each frame pyspark would hand out, in the same order."""
        key: tuple[Any, ...] | None = None
        held: list[_Slice] = []
        held_batches: list[_Batch] = []
        count = 0
        for batch in self._batches(batches):
            for run_key, start, end in batch.runs():
                if held and run_key != key:
                    yield key, self._frame(held, held_batches)  # type: ignore[misc]
                    held, held_batches, count = [], [], 0
                if not held:
                    key = run_key
                position = start
                while position < end:
                    take = self._rows_until_full(count, batch.average_row_size)
                    if take > end - position:
                        held.append((batch.frame, position, end))
                        held_batches.append(batch)
                        count += end - position
                        break
                    held.append((batch.frame, position, position + take))
                    held_batches.append(batch)
                    yield key, self._frame(held, held_batches)  # type: ignore[misc]
                    held, held_batches, count = [], [], 0
                    position += take
        if held:
            yield key, self._frame(held, held_batches)  # type: ignore[misc]

    def _batches(self, batches: Iterator[Any]) -> Iterator[_Batch]:
        import pandas as pd
        from pyspark.sql.conversion import ArrowBatchTransformer

        ser = self._ser
        for arrow_batch in batches:
            ser._update_batch_size_stats(arrow_batch)
            series = ArrowBatchTransformer.to_pandas(
                arrow_batch, timezone=ser._timezone, schema=ser._input_type,
                struct_in_pandas=ser._struct_in_pandas, ndarray_as_list=ser._ndarray_as_list,
                prefer_int_ext_dtype=ser._prefer_int_ext_dtype, df_for_struct=ser._df_for_struct)
            frame = pd.concat(series, axis=1)
            if len(frame) == 0:
                continue
            # Key values as pandas iterates a column, which is what `itertuples` hands out.
            keys = list(zip(*(frame.iloc[:, offset] for offset in ser.key_offsets), strict=True))
            yield _Batch(frame, keys, ser.average_arrow_row_size)


def load_stream(self: Any, stream: Any) -> Iterator[tuple[Any, Any, Any]]:
    """`TransformWithStateInPandasSerializer.load_stream`, column-wise (see the module docstring)."""
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.streaming.stateful_processor_util import TransformWithStateInPandasFuncMode as Mode

    pairs = _GroupFrames(self).pairs(ArrowStreamSerializer.load_stream(self, stream))
    for key, frames in groupby(pairs, key=itemgetter(0)):
        yield Mode.PROCESS_DATA, key, frames
    yield Mode.PROCESS_TIMER, None, None
    yield Mode.COMPLETE, None, None


_replaced: list[Any] = []
"""pyspark's own method, once `install` has replaced it."""


def pyspark_load_stream() -> Any:
    """pyspark's own `TransformWithStateInPandasSerializer.load_stream`, installed or not (for tests)."""
    from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer as Serializer

    return _replaced[0] if _replaced else Serializer.load_stream


def install() -> bool:
    """Put `load_stream` in place of pyspark's on `TransformWithStateInPandasSerializer` (idempotent);
    False, and nothing changed, under a pyspark other than `PYSPARK_VERSION`."""
    import pyspark
    from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer as Serializer

    if pyspark.__version__ != PYSPARK_VERSION:
        return False
    if not _replaced:
        _replaced.append(Serializer.load_stream)
        Serializer.load_stream = load_stream  # type: ignore[method-assign]
    return True
