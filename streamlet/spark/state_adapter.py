"""Spark's per-task state as streamlet sees it: a `SparkStoreState` per store and the task's progress.

All state is declared in the processor's `init` (Spark only allows it there) and is scoped by Spark to
the grouping key, i.e. to one task. Names: `s.<store>` (entries) and `m.<store>` (the store's meta
entry), `task` (the `TaskProgress`), `eos` (under exactly-once, what the state reflects of Kafka: see
`exactly_once.SparkPosition`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.types import BinaryType, StructField, StructType

_KEY = StructType([StructField("k", BinaryType(), False)])
_VALUE = StructType([StructField("v", BinaryType(), False)])


def _bytes(data: Any) -> bytes:
    return data if type(data) is bytes else bytes(data)


class _StoreState:
    """One store's MapState and meta ValueState behind the `SparkStoreState` protocol."""

    def __init__(self, entries: Any, meta: Any) -> None:
        self._entries = entries
        self._meta = meta

    def get(self, key: bytes) -> bytes | None:
        row = self._entries.getValue((key,))
        return None if row is None else _bytes(row[0])

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        for key, value in self._entries.iterator():
            yield _bytes(key[0]), _bytes(value[0])

    def write(self, changes: Mapping[bytes, bytes | None]) -> None:
        entries = self._entries
        for key, value in changes.items():
            if value is None:
                entries.removeKey((key,))
            else:
                entries.updateValue((key,), (value,))

    def meta(self) -> bytes | None:
        row = self._meta.get()
        return None if row is None else _bytes(row[0])

    def set_meta(self, data: bytes) -> None:
        self._meta.update((data,))


class TaskState:
    """The state handles of one sub-topology's processor (one instance per Spark partition)."""

    def __init__(self, handle: Any, store_names: list[str]) -> None:
        self.stores = {name: _StoreState(handle.getMapState(f"s.{name}", _KEY, _VALUE),
                                         handle.getValueState(f"m.{name}", _VALUE))
                       for name in store_names}
        self._progress = handle.getValueState("task", _VALUE)
        self._position = handle.getValueState("eos", _VALUE)

    def progress(self) -> bytes | None:
        row = self._progress.get()
        return None if row is None else _bytes(row[0])

    def set_progress(self, data: bytes) -> None:
        self._progress.update((data,))

    def position(self) -> bytes | None:
        row = self._position.get()
        return None if row is None else _bytes(row[0])

    def set_position(self, data: bytes) -> None:
        self._position.update((data,))
