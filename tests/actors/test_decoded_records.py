"""The main consumer hands the tasks aiokafka's decoded records (no `topic`, no `partition`): the tasks
queue them like `ConsumerRecord`s, and an error handler still sees where a bad record came from."""

from __future__ import annotations

from typing import Any

from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from streamlet.actors.partition_group import PartitionGroup, RawRecord, with_origin
from streamlet.actors.processor_node import SourceNode
from streamlet.serdes import Serdes

TOPIC, PARTITION = "lines", 3


def _decoded(writes: list[tuple[bytes | None, bytes | None, int, list[tuple[str, bytes]]]]) -> list[Any]:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (key, value, timestamp, headers) in enumerate(writes):
        builder.append(i, timestamp=timestamp, key=key, value=value, headers=headers)
    data = bytearray(builder.build())
    data[0:8] = (70).to_bytes(8, "big")
    return list(DefaultRecordBatch(bytes(data)))


def test_decoded_records_queue_like_consumer_records_and_errors_name_their_origin() -> None:
    records = _decoded([(b"k1", b"one", 1000, []), (b"k2", b"\xff", 1001, [("h", b"v")]), (None, b"two", 1002, [])])
    assert not hasattr(records[0], "topic")  # what the main consumer hands over
    source = SourceNode("src", [TOPIC], Serdes.Bytes().deserializer, Serdes.String().deserializer, None)
    seen: list[Any] = []

    def skip(raw: Any, exc: BaseException) -> bool:
        seen.append(raw)
        return True

    group = PartitionGroup({TOPIC: source}, skip)
    assert group.add_records(TOPIC, PARTITION, records) == 2
    queue, run = group.next_run(10) or (None, [])
    assert queue is not None and (queue.topic, queue.partition) == (TOPIC, PARTITION)
    assert [(r.key, r.value, r.timestamp, r.headers, offset) for r, offset, _raw in run] == [
        (b"k1", "one", 1000, (), 70), (None, "two", 1002, (), 72)]
    (bad,) = seen  # the undecodable value, with its topic and partition for the handler (and a DLQ)
    assert (bad.topic, bad.partition, bad.offset, bad.timestamp, bad.key, bad.value, tuple(bad.headers)) == (
        TOPIC, PARTITION, 71, 1001, b"k2", b"\xff", (("h", b"v"),))


def test_with_origin_keeps_a_record_that_has_one() -> None:
    raw = RawRecord("other", 1, 5, 10, b"k", b"v")
    assert with_origin(raw, TOPIC, PARTITION) is raw
    (decoded,) = _decoded([(b"k", b"v", 10, [])])
    rebuilt = with_origin(decoded, TOPIC, PARTITION)
    assert (rebuilt.topic, rebuilt.partition, rebuilt.offset, rebuilt.key, rebuilt.value, rebuilt.headers) == (
        TOPIC, PARTITION, 70, b"k", b"v", ())
