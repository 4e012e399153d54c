"""`RecordSender`: delivers drained task output to Kafka with aiokafka's batch API.

Records arrive already serialized and partitioned (see `RecordCollector`), grouped per partition,
so they go straight into `BatchBuilder`s, never one call per record; a `BatchPump` hands the batches
to the producer behind the caller's back, so delivering never waits for the broker. Delivery
futures are kept until `flush()`, which a commit awaits before committing offsets: a record's input
offset is committed only once the record is acknowledged. `flush()` also returns, per partition,
the next offset after our last acknowledged record, which the tasks write into their checkpoints.

The pump's tasks run in a task group the owner binds (`bind`): the asyncio runtime binds the group
member's, whose scope covers every send and flush. `deliver()` (send, then flush) brings a group of
its own, for a caller that drives its event loop one call at a time (the Spark engine).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

import anyio
from aiokafka.producer.message_accumulator import BatchBuilder as _BatchBuilder
from anyio.abc import TaskGroup

from streamlet.actors.record_collector import ProducedRecord
from streamlet.error_remedies import production_remedy
from streamlet.errors import StreamsError
from streamlet.kafka.batch_pump import BatchPump

log = logging.getLogger(__name__)


class ProductionError(StreamsError):
    """The producer could not deliver records to a topic partition."""


class RecordSender:
    """`skip_failed`: `production.exception.handler = continue` — a record that cannot be
    produced (larger than a batch, or in a batch the broker refused) is logged and counted in
    `dropped` instead of failing the commit. Under exactly-once a refused batch still fails the
    transaction (the producer cannot commit after it), so there only oversized records are skipped."""

    MAX_RECORD_BYTES = 1_000_000
    """Records above this never leave: the broker's default `message.max.bytes` (about 1 MB) would refuse
    them, and a refused batch breaks an idempotent producer's sequence for the batches behind it."""

    def __init__(self, producer: Any, skip_failed: bool = False, transactional: bool = False) -> None:
        self.producer = producer
        self.skip_failed = skip_failed
        self.transactional = transactional
        self.dropped = 0
        self._error: BaseException | None = None
        self._inflight: list[tuple[str, int, int, asyncio.Future[Any]]] = []
        self.acked_offsets: dict[tuple[str, int], int] = {}
        self.sent = 0  # records handed over (queued in the pump or submitted to the producer)
        self._pump = BatchPump(self._submitted, self._failed)

    def bind(self, task_group: TaskGroup | None) -> None:
        """Run the batch pumps, which hand output to the producer after `send()` returned, in
        `task_group`; its scope must outlast every `send()` and `flush()` (see `BatchPump.bind`)."""
        self._pump.bind(task_group)

    async def deliver(self, drained: dict[tuple[str, int], list[ProducedRecord]]) -> dict[tuple[str, int], int]:
        """`send()` then `flush()`, the pumps in a task group of this call (they have all ended once
        `flush()` returns). For callers without a task group that outlives their sends."""
        error: Exception | None = None
        acked: dict[tuple[str, int], int] = {}
        async with anyio.create_task_group() as task_group:
            self.bind(task_group)
            try:
                await self.send(drained)
                acked = await self.flush()
            except Exception as exc:  # raised as it is below, not inside the group's exception group
                error = exc
                task_group.cancel_scope.cancel()  # no pump outlives the failed delivery
            finally:
                self.bind(None)
        if error is not None:
            raise error
        return acked

    async def send(self, drained: dict[tuple[str, int], list[ProducedRecord]]) -> None:
        """Hand records to the producer. A failure is kept for `flush()` to raise: the commit path,
        not the task that happened to produce, decides what a failed delivery means."""
        if self._error is not None:
            return
        try:
            await self._send(drained)
        except Exception as exc:  # re-raised by flush()
            self._error = exc

    async def _send(self, drained: dict[tuple[str, int], list[ProducedRecord]]) -> None:
        producer = self.producer
        pump = self._pump
        limit = self.MAX_RECORD_BYTES
        no_headers = _NO_HEADERS
        for (topic, partition), records in drained.items():
            builder, count = pump.open_batch(producer, topic, partition)
            direct = _direct_append(builder, count)
            before = count
            try:
                for r in records:
                    key, value, timestamp, headers = r
                    if (len(value) if value else 0) + (len(key) if key else 0) > limit:
                        self._oversized(topic, partition, r)
                        continue
                    # The common case inline: straight into the record-batch builder (see `_direct_append`).
                    if direct is not None:
                        appended = direct(count, timestamp, key, value, list(headers) if headers else no_headers)
                        if appended is None:
                            builder.close()
                    else:
                        appended = _append(builder, r)
                    if appended is None:  # the batch is full: seal it and start the next one with `r`
                        if count:
                            self.sent += count - before
                            _settle(builder, count)
                            builder = pump.seal(producer, topic, partition, count)
                            direct = _direct_append(builder, 0)
                            count = before = 0
                        if _append(builder, r) is None:  # alone in an empty batch and still too large
                            self._oversized(topic, partition, r)
                            continue
                    count += 1
            finally:  # what the open batch holds, also when a record was refused half-way
                self.sent += count - before
                _settle(builder, count)
                pump.release(producer, topic, partition, count)
        await pump.backpressure()

    def _oversized(self, topic: str, partition: int, r: ProducedRecord) -> None:
        size = len(r.key or b"") + len(r.value or b"")
        if not self.skip_failed:
            raise ProductionError(f"a record for {topic}-{partition} ({size} bytes) is larger than the batch size; "
                                  f"{production_remedy(self.skip_failed, self.transactional)}")
        self.dropped += 1
        log.warning("skipped a record for %s-%d that is larger than the batch size (%d bytes; "
                    "production.exception.handler=continue)", topic, partition, size)

    def _submitted(self, topic: str, partition: int, count: int, fut: asyncio.Future[Any]) -> None:
        self._inflight.append((topic, partition, count, fut))

    def _failed(self, exc: BaseException) -> None:
        self._error = self._error or exc

    async def flush(self) -> dict[tuple[str, int], int]:
        """Wait until everything sent so far is acknowledged; raise if anything failed."""
        await self._pump.drain(self.producer)
        inflight, self._inflight = self._inflight, []
        if self._error is not None:
            error, self._error = self._error, None
            _retrieve_quietly(f for _, _, _, f in inflight)
            raise ProductionError(f"failed to produce records: {type(error).__name__}: {error}") from error
        if inflight:
            results = await asyncio.gather(*(f for _, _, _, f in inflight), return_exceptions=True)
            errors = []
            first: BaseException | None = None
            for (topic, partition, count, _), res in zip(inflight, results, strict=True):
                if isinstance(res, BaseException):
                    if self.skip_failed and not self.transactional:
                        self.dropped += count
                        log.warning("dropped %d records the broker refused for %s-%d "
                                    "(production.exception.handler=continue): %s: %s",
                                    count, topic, partition, type(res).__name__, res)
                        continue
                    errors.append(f"{topic}-{partition}: {type(res).__name__}: {res}")
                    first = first or res
                    continue
                nxt = res.offset + count
                key = (topic, partition)
                if nxt > self.acked_offsets.get(key, -1):
                    self.acked_offsets[key] = nxt
            if errors:
                raise ProductionError("failed to produce records: " + "; ".join(errors[:5])
                                      + f"; {production_remedy(self.skip_failed, self.transactional)}") from first
        return dict(self.acked_offsets)

    async def push_out(self) -> None:
        """Hand everything sent so far to the producer and wait until the producer has sent it, without
        settling the deliveries (`flush()` does that for a commit): for a task that fails after a handler
        sent dead-letter records (see `TaskActor`)."""
        await self._pump.drain(self.producer)
        await self.producer.flush()

    def forget(self) -> None:
        """Drop in-flight futures without waiting, and output not yet submitted (after the producer itself
        failed or was closed, or before its transaction is aborted)."""
        self._pump.discard()
        _retrieve_quietly(f for _, _, _, f in self._inflight)
        self._inflight = []
        self._error = None


_NO_HEADERS: list[tuple[str, bytes]] = []  # only read by the batch builder, never kept or changed


def _append(builder: Any, r: ProducedRecord) -> Any:
    """Append through aiokafka's `BatchBuilder.append` (None when the batch is full). Also the direct path's
    retry of a record that did not fit a full batch: it counts the batch's records itself."""
    return builder.append(key=r[0], value=r[1], timestamp=r[2], headers=list(r[3]))


def _direct_append(builder: Any, count: int) -> Callable[[int, int, Any, Any, Any], Any] | None:
    """The `append(offset, timestamp, key, value, headers)` of the record-batch builder under aiokafka's
    own `BatchBuilder`, when that builder has no serializers and holds `count` records; else None (go
    through `_append`).

    `BatchBuilder.append` only applies the producer's serializers (streamlet's records are bytes already,
    and streamlet's producers have none) and counts the records; the sender passes its own count as the
    offset instead, and `_settle` writes it back whenever the batch leaves the sender's hands. That saves
    two Python calls per record; `_send` makes this call inline, the one per record left (a full batch
    returns None, and is then closed as `BatchBuilder.append` would close it)."""
    if (type(builder) is _BatchBuilder and getattr(builder, "_key_serializer", 0) is None
            and getattr(builder, "_value_serializer", 0) is None
            and getattr(builder, "_relative_offset", -1) == count and hasattr(builder, "_builder")):
        append: Callable[[int, int, Any, Any, Any], Any] = builder._builder.append
        return append
    return None


def _settle(builder: Any, count: int) -> None:
    """Make the batch's own record count right (the direct path does not keep it) before the batch
    goes to the pump, which may hand it to the producer at any time after."""
    if getattr(builder, "_relative_offset", count) != count:
        builder._relative_offset = count


def _retrieve_quietly(futures: Iterable[asyncio.Future[Any]]) -> None:
    """Mark the outcome of abandoned delivery futures as seen: the failure is already being handled."""
    for fut in futures:
        fut.add_done_callback(lambda f: None if f.cancelled() else f.exception())
