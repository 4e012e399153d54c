"""`RecordSender` fills aiokafka's batch builders: straight into the record-batch builder when the batch is
aiokafka's own `BatchBuilder`, through `BatchBuilder.append` otherwise. Both must give the same batches:
the same records in order, split where a batch is full, counted as aiokafka counts them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from aiokafka.producer.message_accumulator import BatchBuilder
from aiokafka.record.default_records import DefaultRecordBatch

from streamlet.actors.record_collector import ProducedRecord
from streamlet.kafka.record_sender import ProductionError, RecordSender


class _OtherBuilder(BatchBuilder):
    """Not aiokafka's exact class: the sender must go through `append`."""


class _Producer:
    def __init__(self, builder_type: type[BatchBuilder], batch_size: int) -> None:
        self.builder_type, self.batch_size = builder_type, batch_size
        self.sent: list[tuple[str, int, BatchBuilder]] = []

    def create_batch(self) -> BatchBuilder:
        return self.builder_type(self.batch_size, 0)

    async def send_batch(self, builder: BatchBuilder, topic: str, *, partition: int) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(SimpleNamespace(offset=100 * len(self.sent)))
        self.sent.append((topic, partition, builder))
        return fut


def _records(n: int) -> list[ProducedRecord]:
    return [ProducedRecord(f"k{i}".encode(), None if i % 7 == 3 else b"v" * (i % 50), 1_000 + i,
                           (("h", b"x"),) if i % 5 == 0 else ()) for i in range(n)]


def _batches(producer: _Producer) -> list[tuple[str, int, int, list[tuple[Any, ...]]]]:
    out = []
    for topic, partition, builder in producer.sent:
        batch = DefaultRecordBatch(bytes(builder._build()))
        rows = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]
        out.append((topic, partition, builder.record_count(), rows))
    return out


async def _send(builder_type: type[BatchBuilder], drained: dict[tuple[str, int], list[ProducedRecord]],
                batch_size: int = 1024) -> tuple[_Producer, RecordSender, dict[tuple[str, int], int]]:
    producer = _Producer(builder_type, batch_size)
    sender = RecordSender(producer)
    return producer, sender, await sender.deliver(drained)


@pytest.mark.anyio
async def test_direct_and_plain_appends_build_the_same_batches() -> None:
    drained = {("out", 0): _records(300), ("out", 1): _records(3)}
    direct, direct_sender, direct_acked = await _send(BatchBuilder, drained)
    plain, plain_sender, plain_acked = await _send(_OtherBuilder, drained)
    assert len(direct.sent) > 3  # the 300 records fill several batches
    assert _batches(direct) == _batches(plain)
    assert direct_sender.sent == plain_sender.sent == 303
    assert direct_acked == plain_acked
    rows = [row for topic, partition, _n, rows in _batches(direct) if partition == 0 for row in rows]
    assert [(ts, k, v, h) for _o, ts, k, v, h in rows] == [
        (r.timestamp, r.key, r.value, r.headers) for r in drained[("out", 0)]]
    for _t, _p, count, rows in _batches(direct):
        assert count == len(rows) and [o for o, *_ in rows] == list(range(count))


@pytest.mark.anyio
async def test_a_record_larger_than_a_batch_goes_alone_and_an_oversized_one_fails() -> None:
    big = ProducedRecord(b"big", b"x" * 4000, 5, ())
    drained = {("out", 0): [*_records(2), big, *_records(2)]}
    direct, _, _ = await _send(BatchBuilder, drained)
    plain, _, _ = await _send(_OtherBuilder, drained)
    assert _batches(direct) == _batches(plain)
    assert [count for _t, _p, count, _rows in _batches(direct)] == [2, 1, 2]
    huge = ProducedRecord(b"huge", b"x" * (RecordSender.MAX_RECORD_BYTES + 1), 5, ())
    producer = _Producer(BatchBuilder, 1024)
    sender = RecordSender(producer)
    with pytest.raises(ProductionError, match="larger than the batch size"):
        await sender.deliver({("out", 0): [huge]})


@pytest.mark.anyio
async def test_output_of_several_sends_joins_the_open_batch_the_same_way() -> None:
    """Sends that follow each other before the batch pump takes the open batch append to it (the
    batch pump's coalescing); the direct path must then continue at the batch's own count."""
    first, second = _records(5), _records(12)[5:]
    results = []
    for builder_type in (BatchBuilder, _OtherBuilder):
        producer = _Producer(builder_type, 4096)
        sender = RecordSender(producer)
        async with anyio.create_task_group() as tg:  # the member's task group in the runtime
            sender.bind(tg)
            await sender.send({("out", 0): first})
            await sender.send({("out", 0): second})
            await sender.flush()
        results.append(_batches(producer))
    direct, plain = results
    assert direct == plain
    assert [count for _t, _p, count, _rows in direct] == [12]
    assert [o for o, *_ in direct[0][3]] == list(range(12))
