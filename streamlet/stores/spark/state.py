"""`SparkStoreState`: what the Spark engine hands a store for one task: its slice of Spark's state.

The stores here see only this protocol, never pyspark: the engine implements it over a
`transformWithState` MapState (keyed by the task, the grouping key) plus a small ValueState for the
store's own bookkeeping. Every call is a round trip to the JVM, so the stores call `get` at most once
per map entry and batch (an entry is a page of a key-value store, a record key's windows in a window
store), and `write` once per batch with only what changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol


class SparkStoreState(Protocol):
    def get(self, key: bytes) -> bytes | None:
        """The stored value of `key`, or None."""

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        """Every stored entry, in no particular order."""

    def write(self, changes: Mapping[bytes, bytes | None]) -> None:
        """Store each value; None removes the key."""

    def meta(self) -> bytes | None:
        """The store's own bookkeeping (a window store's retention clock), or None before any."""

    def set_meta(self, data: bytes) -> None: ...
