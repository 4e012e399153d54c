"""`HeldOutput`: records a sink could not serialize because a service it needs (the schema registry) cannot be
reached for now (`RetriableError`): no record's fault, so never the production exception handler's.

A record's processing cannot stop half-way without undoing what it already did (a store updated, other sinks
written), so the sink does not fail: it leaves the record here, unserialized, with where it stands among the
task's buffered output (`RecordCollector.buffer_marks`), and the record's processing goes on. The task then
stops taking records (those left of its run go back to their queue), and the task's owner, before it hands
the output on (the runtime's `TaskActor`: before any drain, so before any commit), waits and serializes the
held records again until it succeeds: the wait starts at `schema.registry.retry.backoff.ms` and doubles up to
`schema.registry.retry.backoff.max.ms`, without blocking anything else on the event loop. Each held record then
takes its place in its partition's output, in the order it was produced, and the task goes on. When the
failure has lasted `task.timeout.ms`, the error fails the task. So under exactly-once nothing is committed
that a held record's output does not go with, and nothing is lost or written twice.

While a task holds, the member's commit waits for it, and under exactly-once the open transaction (with
what the task and the others sent before the hold) stays open. Kafka has no way to keep a transaction
alive: the broker aborts it once it is older than `transaction.timeout.ms`, whatever the producer does. So
the hold is not kept that long: under exactly-once the runtime gives up at half the transaction timeout (the
transaction began at most a commit interval before the hold, since every commit waits for it), and the
`RetriableError` stops the task as an outage does (`TaskActor.outage`): the task, with every task sharing its
transaction, is closed dirty (the transaction aborted by the producer itself, the staged store writes
discarded) and revived from the committed offsets after a backoff, where it holds again until the registry
is back; the outage keeps its start across revivals, so it still fails after `task.timeout.ms`. Waiting on
instead would also be exact (the commit after the release fails and its tasks are rebuilt, as after any
failed commit), but it would keep the member's commits, and the other tasks' progress, stalled for the
whole outage, with a transaction known to be lost. Under at-least-once there is no transaction: the hold
lasts up to `task.timeout.ms`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamlet.actors.record_collector import ProducedRecord, RecordCollector
from streamlet.errors import RetriableError, SerializationError
from streamlet.partitioner import default_partition
from streamlet.record import Record
from streamlet.stores.api import RecordContext

if TYPE_CHECKING:
    from streamlet.actors.processor_node import SinkNode

log = logging.getLogger(__name__)


@dataclass(slots=True)
class HeldWrite:
    """One record a sink could not serialize yet, and where its output goes among the buffered output."""

    sink: SinkNode
    topic: str
    record: Record
    context: RecordContext  # the task's record context when the sink got it (the production handler's)
    key: bytes | None
    key_done: bool  # `key` is the key's bytes already (only the value needed the registry)
    marks: dict[tuple[str, int], int]  # the collector's buffer lengths when it was held
    deferred_mark: int  # the collector's deferred records then
    value: bytes | None = None
    done: bool = False
    dropped: bool = False  # the production handler dropped it once it could be judged (a bad value)


class HeldOutput:
    """A task's held records and their retries (see the module docstring)."""

    def __init__(self, error: RetriableError, now: int, backoff_ms: int, backoff_max_ms: int,
                 timeout_ms: int) -> None:
        self.writes: list[HeldWrite] = []
        self.error = error
        self.since = now
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self.timeout_ms = timeout_ms
        self.attempts = 0
        self.retry_at = now + backoff_ms

    def failed_again(self, error: RetriableError, now: int) -> None:
        """A retry failed: wait longer, or raise `error` once the failure has lasted `task.timeout.ms`."""
        self.error = error
        if now - self.since >= self.timeout_ms:
            error.add_note(f"it lasted longer than task.timeout.ms ({self.timeout_ms} ms): raise it to wait longer")
            raise error
        self.attempts += 1
        self.retry_at = now + min(self.backoff_max_ms, self.backoff_ms << min(self.attempts, 30))

    def serialize(self, on_error: Callable[[HeldWrite, Exception], bool]) -> None:
        """Serialize every held record not done yet, in order; raises the first `RetriableError`. Another
        error goes to `on_error` (the production handler): True drops the record, False raised already."""
        for write in self.writes:
            if write.done:
                continue
            sink = write.sink
            try:
                if not write.key_done:
                    write.key = sink.key_serializer.serialize(write.topic, write.record.key)
                    write.key_done = True
                write.value = sink.value_serializer.serialize(write.topic, write.record.value)
            except RetriableError:
                raise
            except Exception as exc:
                write.dropped = on_error(write, exc)
            write.done = True

    def place(self, collector: RecordCollector) -> int:
        """Put every serialized record where it was produced among the buffered output (no drain happened
        since: the marks hold); returns how many were placed."""
        inserted: dict[tuple[str, int], int] = {}
        deferred_inserted = 0
        placed = 0
        for write in self.writes:
            if write.dropped:
                continue
            record, topic, sink = write.record, write.topic, write.sink
            if record.timestamp < 0:
                raise SerializationError(f"sink {sink.name!r}: negative timestamp {record.timestamp}")
            produced = ProducedRecord(write.key, write.value, record.timestamp, record.headers)
            count = collector.known_partition_count(topic)
            if count is None:  # a dynamically routed sink's topic not looked up yet: partitioned at the drain
                collector.insert_deferred(write.deferred_mark + deferred_inserted, topic, produced, record.key,
                                          record.value, sink.partitioner)
                deferred_inserted += 1
                placed += 1
                continue
            partition: int | None = None
            if sink.partitioner is not None:
                partition = sink.partitioner(topic, record.key, record.value, count)
            if partition is None:
                partition = (collector.next_round_robin(topic) if write.key is None
                             else default_partition(write.key, count))
            where = (topic, partition)
            collector.insert(topic, partition, write.marks.get(where, 0) + inserted.get(where, 0), produced)
            inserted[where] = inserted.get(where, 0) + 1
            placed += 1
        return placed


def describe(writes: list[HeldWrite]) -> str:
    """The held records' topics, for the log."""
    topics = sorted({write.topic for write in writes})
    return ", ".join(repr(topic) for topic in topics)
