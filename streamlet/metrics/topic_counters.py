"""Records and bytes a task consumed from and produced to each topic (Kafka Streams' `stream-topic-metrics`,
KIP-846), counted at batch boundaries.

Kafka Streams counts a record as consumed when its source node processes it and as produced when the
producer acknowledges it, one sensor call per record. Here the task actor counts whole batches instead: a
batch of consumed records when it is handed to the task, the output of a batch when it is handed to the
producer (changelog records excluded, as Kafka Streams excludes them). The byte size of a record is
Kafka Streams' own reckoning: key and value sizes, 8 bytes of timestamp, 8 of offset, 4 of partition, the
topic name's UTF-8 bytes and every header's key and value. A consumed record's absent key or value counts
-1, the size the Java consumer reports for it; a produced one's counts 0, as Kafka Streams' producer side
does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_FIXED = 8 + 8 + 4
"""Timestamp, offset and partition: the bytes Kafka Streams adds to every record's size."""


def _headers_size(headers: Any) -> int:
    return sum(len(key.encode()) + (0 if value is None else len(value)) for key, value in headers)


def consumed_bytes(topic: str, records: Sequence[Any]) -> int:
    """The size of consumed `records` of `topic`, as Kafka Streams reckons it (see the module docstring)."""
    size = (_FIXED + len(topic.encode())) * len(records)
    for record in records:
        key, value, headers = record.key, record.value, record.headers
        size += (-1 if key is None else len(key)) + (-1 if value is None else len(value))
        if headers:
            size += _headers_size(headers)
    return size


def produced_bytes(topic: str, records: Sequence[Any]) -> int:
    """The size of produced `records` (key, value, timestamp, headers) to `topic` (see the module docstring)."""
    size = (_FIXED + len(topic.encode())) * len(records)
    for key, value, _timestamp, headers in records:
        size += (0 if key is None else len(key)) + (0 if value is None else len(value))
        if headers:
            size += _headers_size(headers)
    return size


class TopicCounters:
    """Per topic, [records, bytes] one task consumed (`consumed`) and produced (`produced`)."""

    __slots__ = ("consumed", "produced")

    def __init__(self) -> None:
        self.consumed: dict[str, list[int]] = {}
        self.produced: dict[str, list[int]] = {}

    def record_consumed(self, topic: str, records: Sequence[Any]) -> None:
        """A batch of `records` of `topic` handed to the task."""
        counts = self.consumed.get(topic)
        if counts is None:
            counts = self.consumed[topic] = [0, 0]
        counts[0] += len(records)
        counts[1] += consumed_bytes(topic, records)

    def record_produced(self, output: Mapping[tuple[str, int], Sequence[Any]]) -> None:
        """The task's output handed to the producer, per (topic, partition); changelogs are not counted."""
        produced = self.produced
        for (topic, _partition), records in output.items():
            if topic.endswith("-changelog"):
                continue
            counts = produced.get(topic)
            if counts is None:
                counts = produced[topic] = [0, 0]
            counts[0] += len(records)
            counts[1] += produced_bytes(topic, records)
