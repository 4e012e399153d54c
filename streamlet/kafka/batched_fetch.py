"""A fetch result that hands out aiokafka's decoded records a whole record batch at a time.

Why: aiokafka's `FetchResult.getall` pulls one record at a time through three Python frames (its
`PartitionRecords.__next__`, the `_unpack_records` generator, the `_consumer_record` hook) plus the loop
around them. A WordCount worker takes four records per input line from its consumer (the line and its
three repartitioned words), and a cProfile of one worker (`BENCH_PROFILE`, wordcount_eos, 300,000 lines)
had that loop as the largest cost outside the task core. aiokafka's record batches decode in C, so a
batch's records can be taken with one `list(batch)` and handed out by slicing.

`take_batches(result)` gives one buffered `FetchResult` (whose `PartitionRecords` already hands out
decoded records, see `restore_records`) a `getall` of its own, on the instance, that does exactly what
aiokafka's does per batch: the CRC check, skipping aborted transactions' batches under read_committed and
every control batch, dropping records below the fetch position (a compressed or compacted batch), and the
same position bookkeeping (`next_fetch_offset`, `consumed_to`), so the consumer's positions and
commits are unchanged. It reuses aiokafka's own helpers for the aborted-transaction list. It touches only
a result whose record iterator has not started; anything unexpected leaves the result as aiokafka built it.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import aiokafka.errors as kafka_errors

_READ_COMMITTED = 1
"""aiokafka's `isolation_level` value for read_committed (`aiokafka.consumer.fetcher.READ_COMMITTED`)."""

_NEEDED = ("_tp", "_records", "_check_crcs", "_isolation_level", "_aborted_producers", "next_fetch_offset",
           "_records_iterator")


def _batches(records: Any) -> Iterator[tuple[list[Any], int]]:
    """`records`' (a `PartitionRecords`) data batches as (decoded records at or past the fetch position, the
    batch's next offset), with aiokafka's per-batch checks and skips (see the module docstring)."""
    raw = records._records
    read_committed = records._isolation_level == _READ_COMMITTED
    while raw.has_next():
        batch = raw.next_batch()
        if records._check_crcs and not batch.validate_crc():
            raise kafka_errors.CorruptRecordException(f"Invalid CRC - {records._tp}")
        if read_committed and batch.producer_id is not None:
            records._consume_aborted_up_to(batch.base_offset)
            if batch.is_control_batch and records._contains_abort_marker(batch):
                records._aborted_producers.discard(batch.producer_id)
            if batch.is_transactional and batch.producer_id in records._aborted_producers:
                records.next_fetch_offset = batch.next_offset
                continue
        if batch.is_control_batch:
            records.next_fetch_offset = batch.next_offset
            continue
        decoded = list(batch)
        floor = records.next_fetch_offset
        if decoded and decoded[0].offset < floor:
            decoded = [r for r in decoded if r.offset >= floor]
        yield decoded, batch.next_offset


class _BatchedGetall:
    """The `getall(max_records=None)` of one fetch result: aiokafka's contract, taken a batch at a time."""

    __slots__ = ("_batches", "_index", "_next_offset", "_pending", "_records", "_result")

    def __init__(self, result: Any, records: Any) -> None:
        self._result = result
        self._records = records
        self._batches = _batches(records)
        self._pending: list[Any] | None = None  # the batch being handed out, from `_index` on
        self._index = 0
        self._next_offset = 0

    def __call__(self, max_records: int | None = None) -> list[Any]:
        result = self._result
        if not result.check_assignment(result._topic_partition) or not result.has_more():
            return []
        records = self._records
        out: list[Any] = []
        room = -1 if max_records is None else max(max_records, 1)  # aiokafka hands out one record for 0
        while True:
            pending = self._pending
            if pending is not None:
                index = self._index
                left = len(pending) - index
                if 0 <= room < left:  # max_records reached inside this batch
                    end = index + room
                    out += pending[index:end]
                    self._index = end
                    records.next_fetch_offset = pending[end - 1].offset + 1
                    result._update_position()
                    return out
                if left:
                    if out or index:
                        out += pending[index:]
                    else:
                        out = pending  # the whole batch, as it is: the list is ours
                    room -= left
                self._pending, self._index = None, 0
                records.next_fetch_offset = self._next_offset  # the batch is taken whole
                if room == 0:
                    result._update_position()
                    return out
            try:
                self._pending, self._next_offset = next(self._batches)
            except StopIteration:
                result._update_position()
                result._partition_records = None
                return out

    def getone(self) -> Any:
        """aiokafka's `getone`: the next record, or None once the result is used up."""
        taken = self(1)
        return taken[0] if taken else None


def take_batches(result: Any) -> bool:
    """Give `result` (a buffered aiokafka `FetchResult`) the batched `getall` of the module docstring; False
    (left alone) when its records were already being handed out or its internals are not aiokafka 0.14's."""
    records = getattr(result, "_partition_records", None)
    if records is None or "getall" in vars(result) or not all(hasattr(records, a) for a in _NEEDED):
        return False
    iterator = records._records_iterator
    if not inspect.isgenerator(iterator) or inspect.getgeneratorstate(iterator) != inspect.GEN_CREATED:
        return False
    if not all(hasattr(result, a) for a in ("check_assignment", "has_more", "_update_position", "_topic_partition")):
        return False
    getall = _BatchedGetall(result, records)
    result.getall, result.getone = getall, getall.getone
    return True
