"""`hand_out_as_decoded` (and `always_hand_out_as_decoded`, for the main consumer): the restore
consumer's buffered fetch results hand out aiokafka's decoded
records, with the same key, value, timestamp and offset a `ConsumerRecord` would carry, and no
other consumer's results change (the mark is on the instance, not the class)."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

from aiokafka import TopicPartition
from aiokafka.consumer.fetcher import PartitionRecords
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import ConsumerRecord

from streamlet.kafka.restore_records import always_hand_out_as_decoded, hand_out_as_decoded

TP = TopicPartition("app-store-changelog", 0)
WRITES = [(b"a", b"1", 1000), (b"b", None, 1001), (b"a", b"3", 1002)]  # a duplicate key and a tombstone


def _partition_records(base_offset: int = 40) -> PartitionRecords:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (key, value, timestamp) in enumerate(WRITES):
        builder.append(i, timestamp=timestamp, key=key, value=value, headers=[])
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big")  # the batch's base offset, as the broker assigns it
    return PartitionRecords(TP, MemoryRecords(bytes(data)), [], base_offset, None, None, True, 0)


def _consumer(result: PartitionRecords) -> Any:
    return SimpleNamespace(_fetcher=SimpleNamespace(_records={TP: SimpleNamespace(_partition_records=result)}))


def test_marked_results_hand_out_decoded_records_with_the_same_fields() -> None:
    marked, untouched = _partition_records(), _partition_records()
    assert hand_out_as_decoded(_consumer(marked)) == 1
    assert hand_out_as_decoded(_consumer(marked)) == 0  # marked once
    decoded, built = list(marked), list(untouched)
    assert not any(isinstance(r, ConsumerRecord) for r in decoded)
    assert all(isinstance(r, ConsumerRecord) for r in built)  # another consumer's results are unchanged
    fields = [[(r.key, r.value, r.timestamp, r.offset) for r in rs] for rs in (decoded, built)]
    assert fields[0] == fields[1] == [(k, v, t, 40 + i) for i, (k, v, t) in enumerate(WRITES)]
    assert marked.next_fetch_offset == untouched.next_fetch_offset == 43  # positions move as before


def test_a_consumer_without_those_internals_is_left_alone() -> None:
    assert hand_out_as_decoded(SimpleNamespace()) == 0
    assert hand_out_as_decoded(SimpleNamespace(_fetcher=SimpleNamespace(_records={TP: object()}))) == 0


def _fetcher_consumer(buffered: Any) -> Any:
    return SimpleNamespace(_fetcher=SimpleNamespace(_records=buffered))


def test_always_marks_results_buffered_before_and_after() -> None:
    before, after, other = _partition_records(), _partition_records(), _partition_records()
    consumer = _fetcher_consumer(OrderedDict([(TP, SimpleNamespace(_partition_records=before))]))
    assert always_hand_out_as_decoded(consumer)
    assert always_hand_out_as_decoded(consumer)  # a second call keeps the marking buffer
    consumer._fetcher._records[TP] = SimpleNamespace(_partition_records=after)  # as the fetcher buffers one
    assert list(consumer._fetcher._records) == [TP]
    for marked in (before, after):
        records = list(marked)
        assert not any(isinstance(r, ConsumerRecord) for r in records)
        assert [(r.key, r.value, r.timestamp, r.offset) for r in records] == [
            (k, v, t, 40 + i) for i, (k, v, t) in enumerate(WRITES)]
    assert all(isinstance(r, ConsumerRecord) for r in other)  # results of other consumers are unchanged


def test_always_leaves_a_fetcher_with_other_internals_alone() -> None:
    assert not always_hand_out_as_decoded(SimpleNamespace())
    plain: dict[Any, Any] = {}
    consumer = _fetcher_consumer(plain)
    assert not always_hand_out_as_decoded(consumer)
    assert consumer._fetcher._records is plain
