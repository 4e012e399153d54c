"""`RecordCollector`: where a task's output waits, serialized and partitioned, until a batch boundary.

Sinks and change-logging stores append here inside the synchronous processing loop; nothing awaits.
At a batch or commit boundary the runtime drains the buffers and hands them to Kafka (or, in the test
driver, to in-memory topics). Keeping serialization and partitioning here, not in the producer,
means the same collector serves every engine, and a transaction only has to wrap the drain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from streamlet.record import Headers

_new = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)


class ProducedRecord(NamedTuple):
    """One serialized output record (a NamedTuple: built in C, once per output record)."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers


TopicPartitionKey = tuple[str, int]
PartitionCount = Callable[[str], int]
"""Returns how many partitions a topic has (the runtime asks Kafka's metadata; the driver says 1)."""


class RecordCollector:
    """Buffers serialized output per (topic, partition), in the order it was produced."""

    def __init__(self, partition_count: PartitionCount) -> None:
        self.partition_count = partition_count
        self._buffers: dict[TopicPartitionKey, list[ProducedRecord]] = {}
        self._pending = 0
        self._round_robin: dict[str, int] = {}

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
        partition: int,
    ) -> None:
        buf = self._buffers.get((topic, partition))
        if buf is None:
            buf = self._buffers[(topic, partition)] = []
        buf.append(_new(ProducedRecord, (key, value, timestamp, headers)))
        self._pending += 1

    def next_round_robin(self, topic: str) -> int:
        """A partition for a null-keyed record: rotate over the topic's partitions."""
        n = self.partition_count(topic)
        p = self._round_robin.get(topic, -1) + 1
        if p >= n:
            p = 0
        self._round_robin[topic] = p
        return p

    def round_robin_positions(self) -> dict[str, int]:
        """The last partition each topic's null-keyed records went to (see `StreamTask.progress`)."""
        return dict(self._round_robin)

    def restore_round_robin(self, positions: dict[str, int]) -> None:
        self._round_robin = dict(positions)

    @property
    def pending(self) -> int:
        """Records buffered since the last drain."""
        return self._pending

    def drain(self) -> dict[TopicPartitionKey, list[ProducedRecord]]:
        """Take everything buffered; the caller now owns delivering it."""
        out = self._buffers
        self._buffers = {}
        self._pending = 0
        return out

    def discard(self) -> int:
        """Drop everything buffered (a dirty close); returns how many records were dropped."""
        n = self._pending
        self._buffers = {}
        self._pending = 0
        return n
