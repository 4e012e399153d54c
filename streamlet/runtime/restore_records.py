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
aiokafka whose internals differ nothing is marked and every record is a `ConsumerRecord`.
"""

from __future__ import annotations

from typing import Any


def _as_decoded(_tp: Any, record: Any) -> Any:
    return record


def hand_out_as_decoded(consumer: Any) -> int:
    """Mark the fetch results buffered in `consumer` (see the module docstring); returns how many
    were newly marked."""
    buffered = getattr(getattr(consumer, "_fetcher", None), "_records", None)
    if not isinstance(buffered, dict):
        return 0
    marked = 0
    for result in list(buffered.values()):
        records = getattr(result, "_partition_records", None)
        if records is None or not hasattr(records, "_consumer_record"):
            continue
        if vars(records).get("_consumer_record") is not _as_decoded:
            records._consumer_record = _as_decoded  # looked up on the instance for every record
            marked += 1
    return marked
