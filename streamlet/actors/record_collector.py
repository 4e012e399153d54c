"""`RecordCollector`: where a task's output waits, serialized and partitioned, until a batch boundary.

Sinks and change-logging stores append here inside the synchronous processing loop; nothing awaits.
At a batch or commit boundary the runtime drains the buffers and hands them to Kafka (or, in the test
driver, to in-memory topics). Keeping serialization and partitioning here, not in the producer,
means the same collector serves every engine, and a transaction only has to wrap the drain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

from streamlet.errors import StreamsError
from streamlet.partitioner import default_partition
from streamlet.record import Headers

_new: Final = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)


class ProducedRecord(NamedTuple):
    """One serialized output record (a NamedTuple: built in C, once per output record)."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers


_ProducedRecord: Final = ProducedRecord  # Final: a C static when compiled, not a dict look-up per use

TopicPartitionKey = tuple[str, int]
PartitionCount = Callable[[str], int]
"""Returns how many partitions a topic has (the runtime asks Kafka's metadata; the driver says 1)."""


class UnknownTopicError(StreamsError):
    """A topic's partition count is not known (yet): raised by a runtime's `PartitionCount`."""


class _Deferred(NamedTuple):
    """An output record for a topic whose partition count is not known yet (a dynamically routed sink's
    new topic): partitioned once the runtime has looked the topic up, at the batch boundary."""

    topic: str
    record: ProducedRecord
    key: Any
    value: Any
    partitioner: Callable[[str, Any, Any, int], int | None] | None


class RecordCollector:
    """Buffers serialized output per (topic, partition), in the order it was produced."""

    def __init__(self, partition_count: PartitionCount) -> None:
        self.partition_count = partition_count
        self._buffers: dict[TopicPartitionKey, list[ProducedRecord]] = {}
        self._round_robin: dict[str, int] = {}
        self._deferred: list[_Deferred] = []

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
        buf.append(_new(_ProducedRecord, (key, value, timestamp, headers)))

    def known_partition_count(self, topic: str) -> int | None:
        """The topic's partition count, or None while the runtime does not know the topic."""
        try:
            return self.partition_count(topic)
        except (UnknownTopicError, KeyError):
            return None

    def defer(self, topic: str, record: ProducedRecord, key: Any, value: Any,
              partitioner: Callable[[str, Any, Any, int], int | None] | None) -> None:
        """Buffer a serialized record for a topic not known yet; `place_deferred` partitions it later."""
        self._deferred.append(_Deferred(topic, record, key, value, partitioner))

    def insert(self, topic: str, partition: int, at: int, record: ProducedRecord) -> None:
        """Put a record at position `at` of its partition's buffer (a record held back while its serializer
        could not reach the schema registry, placed where it was produced: see `held_output`)."""
        buf = self._buffers.get((topic, partition))
        if buf is None:
            buf = self._buffers[(topic, partition)] = []
        buf.insert(at, record)

    def insert_deferred(self, at: int, topic: str, record: ProducedRecord, key: Any, value: Any,
                        partitioner: Callable[[str, Any, Any, int], int | None] | None) -> None:
        """As `defer`, at position `at` of the deferred records (see `insert`)."""
        self._deferred.insert(at, _Deferred(topic, record, key, value, partitioner))

    def deferred_count(self) -> int:
        return len(self._deferred)

    def deferred_topics(self) -> set[str]:
        """The topics whose partition counts must be looked up before the next drain."""
        return {d.topic for d in self._deferred}

    def place_deferred(self) -> None:
        """Partition the deferred records, in the order they were produced, now that their topics are known
        (as `SinkNode` would have: the partitioner, else murmur2 of the key, else round robin)."""
        deferred, self._deferred = self._deferred, []
        for d in deferred:
            partition = None
            n = self.partition_count(d.topic)
            if d.partitioner is not None:
                partition = d.partitioner(d.topic, d.key, d.value, n)
            if partition is None:
                key = d.record.key
                partition = self.next_round_robin(d.topic) if key is None else default_partition(key, n)
            buf = self._buffers.get((d.topic, partition))
            if buf is None:
                buf = self._buffers[(d.topic, partition)] = []
            buf.append(d.record)

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
        """Records buffered since the last drain (counted when asked, once per batch, not per record)."""
        return sum(map(len, self._buffers.values())) + len(self._deferred)

    def buffer_marks(self) -> dict[TopicPartitionKey, int]:
        """How many records each buffer holds now (see `rewrite_headers_since`)."""
        return {key: len(buf) for key, buf in self._buffers.items()}

    def rewrite_headers_since(self, marks: dict[TopicPartitionKey, int],
                              rewrite: Callable[[Headers], Headers]) -> None:
        """Apply `rewrite` to the headers of every record buffered after `marks` (taken by `buffer_marks`,
        with no drain in between): e.g. the trace context of the punctuation that produced them."""
        for key, buf in self._buffers.items():
            for i in range(marks.get(key, 0), len(buf)):
                produced = buf[i]
                headers = rewrite(produced.headers)
                if headers is not produced.headers:
                    buf[i] = produced._replace(headers=headers)

    def drain(self) -> dict[TopicPartitionKey, list[ProducedRecord]]:
        """Take everything buffered; the caller now owns delivering it."""
        if self._deferred:
            raise UnknownTopicError(f"output for topics {sorted(self.deferred_topics())} that this runtime does "
                                    "not know: they must exist (a dynamically routed sink's topics are not created)")
        out = self._buffers
        self._buffers = {}
        return out

    def discard(self) -> int:
        """Drop everything buffered (a dirty close); returns how many records were dropped."""
        n = self.pending
        self._buffers = {}
        self._deferred = []
        return n


class ChangelogSender:
    """One store's changelog writes into the task's collector: `ProcessorStateManager.log_change` without its
    frame, for a store that logs every flushed update (a compiled call per write instead of a Python one)."""

    def __init__(self, collector: RecordCollector, topics: dict[str, str], store_name: str, partition: int) -> None:
        self._collector = collector
        self._topics = topics  # the state manager's own map: a store registered after this is still found
        self._store_name = store_name
        self._partition = partition

    def __call__(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self._collector.send(self._topics[self._store_name], key, value, timestamp, (), self._partition)

