"""`BatchPump`: output handed to aiokafka without waiting on the partition's previous batch.

aiokafka's `send_batch` waits while the partition still has a batch queued, and its sender takes one
batch per partition into each produce request, with one request in flight per broker. A task that
submitted each flush straight away therefore waited, for every partition it wrote to, a linger plus
a produce round trip; meanwhile its mailbox filled, the poll loop waited on the mailbox and a
commit waited behind it (issue #14 measured p90 127 ms, p99 275 ms per delivery under exactly-once).

Here a partition's output goes into its open batch at once; one pump per partition submits the open
batch as soon as the partition has nothing queued in aiokafka, so whatever arrives while a request
is out joins a single next batch: the Java producer's accumulator behaves the same way. Per
partition, batches are submitted in the order their records arrived, one pump at a time.

Linger (`linger.ms`) counts from a batch's first record, as in the Java producer: aiokafka counts it
from the submission, so a batch that already gathered records for that long while the previous one
was out is closed before submission (aiokafka sends a closed batch at once). While `drain()` runs (a
commit waits for its output) every batch goes out at once, the ones already queued in aiokafka
included, as the Java producer's `flush()` makes every batch ready.

The pumps run in a task group their owner binds (`BatchPump.bind`), never as loose tasks: a pump
submits after the `send()` that started it returned, so it must not outlive the producer it submits
to. The asyncio runtime binds the group member's task group (the pumps end with the member); a
caller without a long-lived group runs one around its send and flush (`RecordSender.deliver`).
Starting a pump is rare (once a partition's queue ran empty, so about once per partition and
commit), and a pump reports every failure, an unexpected cancellation included, to the next flush.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from aiokafka import TopicPartition
from anyio.abc import TaskGroup

from streamlet.errors import StrayCancellationError

Submitted = Callable[[str, int, int, "asyncio.Future[Any]"], None]
"""Told of every batch handed to the producer: topic, partition, record count, delivery future."""


class _Pump:
    """A running pump: `done` resolves when it ended (`drain` waits for it); `discard` sets `discarded`
    and cancels `task`, the pump's task once it started."""

    __slots__ = ("discarded", "done", "task")

    def __init__(self) -> None:
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.task: asyncio.Task[Any] | None = None
        self.discarded = False

    def discard(self) -> None:
        """Stop the pump where it waits. A cancellation of its task, not of an anyio scope: anyio
        delays a scope's cancellation while the task's awaited future is done but the task has not
        resumed yet, and a pump resuming there would still submit a batch of the void output."""
        self.discarded = True
        if self.task is not None:
            self.task.cancel()


class _Partition:
    """One partition's batches not yet handed to the producer."""

    __slots__ = ("builder", "count", "opened", "pump", "sealed")

    def __init__(self) -> None:
        self.builder: Any = None  # the open batch, still taking records
        self.count = 0  # records in it
        self.opened = 0.0  # when it was created (monotonic seconds)
        self.sealed: deque[tuple[Any, int]] = deque()  # full batches, oldest first
        self.pump: _Pump | None = None


class BatchPump:
    """Open and sealed batches per partition, and the pumps that submit them (see the module docstring).

    `max_sealed`: how many full batches may wait in all before `backpressure()` makes the caller wait
    for the producer (each holds up to the producer's `batch.size`)."""

    def __init__(self, on_submitted: Submitted, on_error: Callable[[BaseException], None],
                 max_sealed: int = 32) -> None:
        self._on_submitted = on_submitted
        self._on_error = on_error
        self._partitions: dict[tuple[str, int], _Partition] = {}
        self._max_sealed = max_sealed
        self._sealed = 0
        self._progress = asyncio.Event()
        self._hurry = False  # drain() is waiting: no batch lingers
        self._task_group: TaskGroup | None = None

    def bind(self, task_group: TaskGroup | None) -> None:
        """Run the pumps in `task_group` from now on (None: no group; starting a pump then fails).
        Its scope must outlast every `release()` and `drain()`: the pumps end with it."""
        self._task_group = task_group

    def open_batch(self, producer: Any, topic: str, partition: int) -> tuple[Any, int]:
        """The partition's open batch (created if there is none) and how many records it holds."""
        entry = self._partitions.get((topic, partition))
        if entry is None:
            entry = self._partitions[(topic, partition)] = _Partition()
        if entry.builder is None:
            entry.builder, entry.count, entry.opened = producer.create_batch(), 0, time.monotonic()
        return entry.builder, entry.count

    def seal(self, producer: Any, topic: str, partition: int, count: int) -> Any:
        """The open batch is full with `count` records: queue it and return a new open batch."""
        entry = self._partitions[(topic, partition)]
        entry.sealed.append((entry.builder, count))
        self._sealed += 1
        entry.builder, entry.count, entry.opened = producer.create_batch(), 0, time.monotonic()
        return entry.builder

    def release(self, producer: Any, topic: str, partition: int, count: int) -> None:
        """The caller is done appending: the open batch holds `count` records. Starts the partition's
        pump unless it runs already."""
        entry = self._partitions[(topic, partition)]
        entry.count = count
        if entry.pump is None and (count or entry.sealed):
            if self._task_group is None:
                raise RuntimeError("the batch pump has no task group to run in: bind() one first")
            pump = _Pump()
            self._task_group.start_soon(self._pump, producer, topic, partition, entry, pump,
                                        name=f"streamlet-batch-pump-{topic}-{partition}")
            entry.pump = pump

    async def backpressure(self) -> None:
        """Wait while too many full batches are queued (the producer is behind)."""
        while self._sealed > self._max_sealed:
            self._progress.clear()
            await self._progress.wait()

    async def drain(self, producer: Any) -> None:
        """Wait until every batch is handed to the producer (or failed), none of them lingering."""
        self._hurry = True
        try:
            while True:
                _send_queued_now(producer)  # a pump may be waiting for a lingering batch to go out
                pumps = [p.pump.done for p in self._partitions.values() if p.pump is not None]
                if not pumps:
                    return
                await asyncio.wait(pumps)
        finally:
            self._hurry = False

    def discard(self) -> None:
        """Drop every batch not yet handed to the producer and stop the pumps (the output is void:
        its transaction is being aborted, or its producer failed)."""
        for entry in self._partitions.values():
            if entry.pump is not None:
                entry.pump.discard()
                entry.pump = None
        self._partitions.clear()
        self._sealed = 0
        self._progress.set()

    async def _pump(self, producer: Any, topic: str, partition: int, entry: _Partition, pump: _Pump) -> None:
        pump.task = task = asyncio.current_task()
        try:
            if not pump.discarded:  # else discarded before it started
                await self._submit(producer, topic, partition, entry)
        except asyncio.CancelledError:
            if not pump.discarded:
                raise  # the owner's task group is cancelled
            if task is not None:
                task.uncancel()  # discard() cancelled it: the pump just ends, and so does its task
        finally:
            if entry.pump is pump:
                entry.pump = None
            pump.done.set_result(None)

    async def _submit(self, producer: Any, topic: str, partition: int, entry: _Partition) -> None:
        """Hand the partition's batches to the producer, oldest first, until none is left."""
        try:
            while True:
                await _drained(producer, topic, partition)
                if entry.sealed:
                    builder, count = entry.sealed.popleft()
                    self._sealed -= 1
                    self._progress.set()
                elif entry.count:
                    builder, count = entry.builder, entry.count
                    entry.builder, entry.count = None, 0
                    if self._hurry or time.monotonic() - entry.opened >= _linger_s(producer):
                        builder.close()  # it lingered already (or a commit waits): aiokafka sends it at once
                else:
                    return
                self._on_submitted(topic, partition, count, await producer.send_batch(builder, topic,
                                                                                       partition=partition))
        except Exception as exc:  # reported by the next flush; this partition's queued output is void
            self._void(entry, exc)
        except asyncio.CancelledError as exc:
            # Nobody stopped the pump: a client library cancelled a future it awaited. A failure like
            # any other, so that the flush waiting for this output fails instead of missing it.
            stray = StrayCancellationError.of(exc, f"the batch pump of {topic}-{partition}")
            if stray is None:
                raise
            self._void(entry, stray)

    def _void(self, entry: _Partition, exc: BaseException) -> None:
        """The partition's queued output cannot be submitted: drop it and report `exc`."""
        self._sealed -= len(entry.sealed)
        entry.sealed.clear()
        entry.builder, entry.count = None, 0
        self._progress.set()
        self._on_error(exc)


async def _drained(producer: Any, topic: str, partition: int) -> None:
    """Wait until aiokafka has no batch of this partition queued. `send_batch` would wait for that too,
    but the open batch is taken only after this wait, so that what arrives meanwhile still joins it.
    Reads private aiokafka state; without it, `send_batch` does the waiting."""
    batches = getattr(getattr(producer, "_message_accumulator", None), "_batches", None)
    if batches is None:
        return
    tp = TopicPartition(topic, partition)
    while pending := batches.get(tp):
        batch = pending[-1]
        try:
            await batch.wait_drain()
        except Exception:  # that batch failed: its own delivery future reports it at the next flush
            pass
        if (after := batches.get(tp)) and after[-1] is batch:
            return  # still queued although its wait ended: send_batch waits (and times out) itself


def _linger_s(producer: Any) -> float:
    return float(getattr(getattr(producer, "_message_accumulator", None), "_linger_time", 0.0))


def _send_queued_now(producer: Any) -> None:
    """End the linger of every batch queued in aiokafka and wake its sender (what aiokafka's own
    `flush_for_commit` does before a transaction ends). Private aiokafka state: without it, the
    batches linger out."""
    accumulator = getattr(producer, "_message_accumulator", None)
    batches = getattr(accumulator, "_batches", None)
    waiter = getattr(accumulator, "_waiter_future", None)
    if batches is None or waiter is None:
        return
    for queued in batches.values():
        for batch in queued:
            batch._builder.close()
    if not waiter.done():
        waiter.set_result(None)
