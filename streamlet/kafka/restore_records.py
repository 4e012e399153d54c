"""Restoration takes aiokafka's decoded records as they are, not a `ConsumerRecord` built from each.

Why: a restore is one loop over millions of changelog records, and the profile of restoring a
1,000,000-record changelog (`python -m benchmarks.restore`) showed aiokafka building `ConsumerRecord`s
(11 fields, sizes, a headers tuple) as the largest share of the restore's CPU, more than the stores'
writes. The `ChangelogReader` needs only each record's key, value, timestamp and offset, which the
decoded record objects (aiokafka's `DefaultRecord`, C or pure Python) carry already.

aiokafka has no option for that, so `hand_out_as_decoded(consumer)` sets an attribute on each fetch
result waiting in that consumer's buffer (its `PartitionRecords` instances, never the class, so no
other consumer is touched): they then hand out the decoded records unchanged. Everything else, the
CRC checks, skipping aborted transactions and control batches, positions, stays aiokafka's. Results
fetched after the call are handed out as `ConsumerRecord`s, which have the same attributes; with an
aiokafka whose internals differ nothing is marked and every record is a `ConsumerRecord`. A marked result
not yet started also hands its records out a whole record batch at a time (`batched_fetch`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from streamlet.kafka.batched_fetch import take_batches


def _as_decoded(_tp: Any, record: Any) -> Any:
    return record


def _mark(result: Any) -> bool:
    records = getattr(result, "_partition_records", None)
    if records is None or not hasattr(records, "_consumer_record"):
        return False
    if vars(records).get("_consumer_record") is _as_decoded:
        return False
    records._consumer_record = _as_decoded  # looked up on the instance for every record
    take_batches(result)  # and, when its records are not being handed out yet, a batch at a time
    return True


class _MarkingResults(OrderedDict[Any, Any]):
    """A fetcher's buffer of fetch results that marks each result as it is buffered."""

    def __setitem__(self, key: Any, value: Any) -> None:
        _mark(value)
        super().__setitem__(key, value)


def always_hand_out_as_decoded(consumer: Any) -> bool:
    """From now on, every fetch result of `consumer` hands out decoded records (see the module docstring):
    the fetcher's result buffer (one `OrderedDict` for the fetcher's lifetime) is swapped for one that
    marks each result as the fetcher buffers it. Call after `start()`. False (nothing changed, records stay
    `ConsumerRecord`s) with an aiokafka whose internals differ.

    For the main consumer: the tasks read only a record's offset, timestamp, key, value and headers, and
    build a record with its topic and partition only for an error handler (`partition_group.with_origin`).
    WordCount's profile showed aiokafka building `ConsumerRecord`s at about 5% of a worker's time: four per
    input line, the line and its three repartitioned words."""
    fetcher: Any = getattr(consumer, "_fetcher", None)
    buffered = getattr(fetcher, "_records", None)
    if type(buffered) is _MarkingResults:
        return True
    if type(buffered) is not OrderedDict:
        return False
    for result in buffered.values():
        _mark(result)
    fetcher._records = _MarkingResults(buffered)
    return True


def hand_out_as_decoded(consumer: Any) -> int:
    """Mark the fetch results buffered in `consumer` (see the module docstring); returns how many
    were newly marked."""
    buffered = getattr(getattr(consumer, "_fetcher", None), "_records", None)
    if not isinstance(buffered, dict):
        return 0
    return sum(_mark(result) for result in list(buffered.values()))


def restore_entries(records: list[Any], with_headers: bool) -> list[Any]:
    """A store's restore batch from changelog records (decoded or `ConsumerRecord`s): `ChangelogEntry`s, or
    `HeadedChangelogEntry`s for a store registered `with_headers` (see `StateStoreContext.register`)."""
    if with_headers:
        return [(r.key, r.value, r.timestamp, tuple(r.headers or ())) for r in records]
    return [(r.key, r.value, r.timestamp) for r in records]
