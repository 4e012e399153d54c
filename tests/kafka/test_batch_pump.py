"""`RecordSender` with its `BatchPump`: handing output over never waits for the broker, what arrives
while a partition's batch is out joins one next batch, every partition's records reach the broker in
the order they were handed over, and output dropped by `forget()` (an aborted transaction) or by a
failed partition never reaches it.

The producer here is aiokafka's own `MessageAccumulator` (which decides when `send_batch` waits)
behind a stand-in for the network: `answer()` is one produce request, taking each partition's oldest
batch and acknowledging it with the next offsets of that partition's log."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaTimeoutError
from aiokafka.producer.message_accumulator import MessageAccumulator
from aiokafka.record.memory_records import MemoryRecords

from streamlet.actors.record_collector import ProducedRecord
from streamlet.errors import StrayCancellationError
from streamlet.kafka.record_sender import ProductionError, RecordSender

pytestmark = pytest.mark.anyio
TOPIC = "out"


class _Producer:
    def __init__(self, batch_size: int = 1 << 20, failing: frozenset[int] = frozenset(), linger_ms: int = 0) -> None:
        cluster = SimpleNamespace(leader_for_partition=lambda tp: 0)
        self._message_accumulator = MessageAccumulator(cluster, batch_size, 0, 30, linger_ms=linger_ms)
        self.log: dict[int, list[bytes]] = defaultdict(list)  # per partition: values in offset order
        self.requests: list[dict[int, int]] = []  # per produce request: partition -> records in its batch
        self._failing = failing

    def create_batch(self) -> Any:
        return self._message_accumulator.create_builder()

    async def send_batch(self, builder: Any, topic: str, *, partition: int) -> asyncio.Future[Any]:
        if partition in self._failing:
            raise KafkaTimeoutError("partition unavailable")
        return await self._message_accumulator.add_batch(builder, TopicPartition(topic, partition), 30)

    def queued(self, partition: int) -> int:
        return len(self._message_accumulator._batches.get(TopicPartition(TOPIC, partition), ()))

    def answer(self) -> int:
        """One produce request: every partition's oldest queued batch is appended and acknowledged."""
        nodes, _ = self._message_accumulator.drain_by_nodes(ignore_nodes=set())
        request: dict[int, int] = {}
        for tp, batch in nodes.get(0, {}).items():
            values = [r.value for r in MemoryRecords(bytes(batch.get_data_buffer())).next_batch()]
            batch.done(base_offset=len(self.log[tp.partition]))
            self.log[tp.partition] += values
            request[tp.partition] = len(values)
        if request:
            self.requests.append(request)
        return len(request)

    async def answer_until_idle(self) -> None:
        while self.answer():
            await anyio.sleep(0.001)


def _records(*values: str) -> list[ProducedRecord]:
    return [ProducedRecord(None, v.encode(), 1_000 + i, ()) for i, v in enumerate(values)]


@contextlib.asynccontextmanager
async def _pumping(sender: RecordSender) -> AsyncIterator[RecordSender]:
    """`sender` with its batch pumps in a task group of the test, as in the member's in the runtime
    (cancelled at the end, as the member's group is when it ends)."""
    async with anyio.create_task_group() as tg:
        sender.bind(tg)
        yield sender
        tg.cancel_scope.cancel()


async def _answering(producer: _Producer) -> None:
    while True:
        producer.answer()
        await anyio.sleep(0.001)


async def test_output_handed_over_while_a_batch_is_out_joins_one_next_batch() -> None:
    producer = _Producer()
    async with _pumping(RecordSender(producer)) as sender:
        with anyio.fail_after(5):  # nothing answers yet: a send that waited for the broker would hang
            await sender.send({(TOPIC, 0): _records("a")})
            await anyio.sleep(0.01)
            assert producer.queued(0) == 1  # the first batch went out at once
            await sender.send({(TOPIC, 0): _records("b")})
            await sender.send({(TOPIC, 0): _records("c", "d")})
            assert producer.queued(0) == 1  # the rest waits in the pump, not in the caller
            await producer.answer_until_idle()
            assert await sender.flush() == {(TOPIC, 0): 4}
        assert producer.log[0] == [b"a", b"b", b"c", b"d"]
        assert producer.requests == [{0: 1}, {0: 3}]
        assert sender.sent == 4


async def test_every_partition_keeps_its_order_across_full_batches() -> None:
    producer = _Producer(batch_size=200)  # a few records per batch: batches fill and are sealed
    async with _pumping(RecordSender(producer)) as sender:
        expected: dict[int, list[bytes]] = defaultdict(list)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_answering, producer)
            for round_ in range(30):
                drained = {(TOPIC, p): _records(*(f"{p}-{round_}-{i}" for i in range(round_ % 7 + 1)))
                           for p in range(3)}
                for (_, p), records in drained.items():
                    expected[p] += [r.value for r in records if r.value is not None]
                await sender.send(drained)
                if round_ % 4 == 0:
                    await anyio.sleep(0.002)
            with anyio.fail_after(5):
                acked = await sender.flush()
            tg.cancel_scope.cancel()
        assert dict(producer.log) == dict(expected)
        assert acked == {(TOPIC, p): len(expected[p]) for p in range(3)}
        assert max(n for request in producer.requests for n in request.values()) > 1


async def test_forget_drops_output_not_yet_submitted() -> None:
    producer = _Producer()
    async with _pumping(RecordSender(producer)) as sender:
        await sender.send({(TOPIC, 0): _records("kept")})
        await anyio.sleep(0.01)
        await sender.send({(TOPIC, 0): _records("aborted"), (TOPIC, 1): _records("aborted too")})
        sender.forget()  # as before a transaction abort: the pump's batches belong to the aborted transaction
        await producer.answer_until_idle()
        await anyio.sleep(0.01)
        await producer.answer_until_idle()
        assert dict(producer.log) == {0: [b"kept"]}
        await sender.send({(TOPIC, 1): _records("next")})  # the sender works on afterwards
        await anyio.sleep(0.01)
        await producer.answer_until_idle()
        with anyio.fail_after(5):
            assert await sender.flush() == {(TOPIC, 1): 1}
        assert producer.log[1] == [b"next"]


async def test_a_partition_that_cannot_be_submitted_fails_the_flush() -> None:
    producer = _Producer(failing=frozenset({1}))
    async with _pumping(RecordSender(producer)) as sender:
        await sender.send({(TOPIC, 0): _records("a"), (TOPIC, 1): _records("b")})
        await anyio.sleep(0.01)
        await producer.answer_until_idle()
        with anyio.fail_after(5), pytest.raises(ProductionError, match="partition unavailable"):
            await sender.flush()
        assert dict(producer.log) == {0: [b"a"]}


async def test_handing_over_waits_while_too_many_full_batches_queue() -> None:
    producer = _Producer(batch_size=120)
    async with _pumping(RecordSender(producer)) as sender:
        many = {(TOPIC, 0): _records(*(f"value-{i:04}" for i in range(400)))}  # far more than 32 full batches
        with anyio.move_on_after(0.2) as waited:
            await sender.send(many)
        assert waited.cancelled_caught  # nobody answers: the producer is behind, so the caller waits
        async with anyio.create_task_group() as tg:
            tg.start_soon(_answering, producer)
            with anyio.fail_after(10):
                await sender.send({(TOPIC, 0): _records("last")})
                await sender.flush()
            tg.cancel_scope.cancel()
        assert producer.log[0] == [r.value for r in many[(TOPIC, 0)]] + [b"last"]


async def test_a_flush_does_not_wait_out_the_linger() -> None:
    producer = _Producer(linger_ms=60_000)
    async with _pumping(RecordSender(producer)) as sender:
        await sender.send({(TOPIC, 0): _records("a")})
        await anyio.sleep(0.01)
        assert producer.answer() == 0  # lingering: a produce request now would not take it
        await sender.send({(TOPIC, 0): _records("b"), (TOPIC, 1): _records("c")})
        async with anyio.create_task_group() as tg:
            tg.start_soon(_answering, producer)
            with anyio.fail_after(5):  # as the Java producer's flush(): every batch goes out at once
                assert await sender.flush() == {(TOPIC, 0): 2, (TOPIC, 1): 1}
            tg.cancel_scope.cancel()
        assert dict(producer.log) == {0: [b"a", b"b"], 1: [b"c"]}


async def test_the_pumps_end_with_the_task_group_they_run_in() -> None:
    producer = _Producer()  # nobody answers: the second batch's pump waits for the first one
    sender = RecordSender(producer)
    outside = asyncio.all_tasks()
    async with anyio.create_task_group() as tg:
        sender.bind(tg)
        await sender.send({(TOPIC, 0): _records("a"), (TOPIC, 1): _records("b")})
        await anyio.sleep(0.01)
        await sender.send({(TOPIC, 0): _records("c")})
        await anyio.sleep(0.01)
        assert asyncio.all_tasks() - outside  # a pump still waits
        tg.cancel_scope.cancel()  # the owner ends
    assert asyncio.all_tasks() == outside  # and no pump outlives it


async def test_a_stray_cancellation_in_a_pump_fails_the_flush() -> None:
    """A client library that cancels a future the pump awaits must not make the output vanish: the
    partition's output is void, and the flush that waits for it says so."""

    class _Cancelling(_Producer):
        async def send_batch(self, builder: Any, topic: str, *, partition: int) -> asyncio.Future[Any]:
            if partition == 1:
                raise asyncio.CancelledError  # what a cancelled library future delivers to its awaiter
            return await super().send_batch(builder, topic, partition=partition)

    producer = _Cancelling()
    async with _pumping(RecordSender(producer)) as sender:
        await sender.send({(TOPIC, 0): _records("a"), (TOPIC, 1): _records("b")})
        await anyio.sleep(0.01)
        await producer.answer_until_idle()
        with anyio.fail_after(5), pytest.raises(ProductionError, match="unexpected cancellation") as failed:
            await sender.flush()
        assert isinstance(failed.value.__cause__, StrayCancellationError)
        assert dict(producer.log) == {0: [b"a"]}
        await sender.send({(TOPIC, 0): _records("c")})  # the other partitions, and the sender, work on
        await anyio.sleep(0.01)
        await producer.answer_until_idle()
        with anyio.fail_after(5):
            assert await sender.flush() == {(TOPIC, 0): 2}


async def test_a_sender_without_a_task_group_says_so_at_the_flush() -> None:
    sender = RecordSender(_Producer())
    await sender.send({(TOPIC, 0): _records("a")})
    with pytest.raises(ProductionError, match="no task group"):
        await sender.flush()
