"""The exactly-once commit sequence both engines share (`streamlet.kafka.transactions`), against the real
broker: a commit makes the output readable `read_committed` and the offsets, with their metadata, the
group's; the offsets go out while the records are being acknowledged, yet a record the broker refuses
fails the commit and the abort takes the offsets with it, and a refusal of the offsets commits nothing; a
new producer of a transactional id aborts what the old one left open and fences it."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import ProducerFenced
from anyio.abc import TaskGroup

from streamlet.actors.record_collector import ProducedRecord
from streamlet.kafka.fenced_offsets import fetch_stable_commits
from streamlet.kafka.record_sender import ProductionError, RecordSender
from streamlet.kafka.transactions import commit_transaction, start_transactional, with_metadata
from tests.helpers.kafka import create_topics

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def _started(bootstrap: str, transactional_id: str, task_group: TaskGroup) -> RecordSender:
    """A sender over a started transactional producer, its batch pumps in `task_group` (as the asyncio
    runtime binds its member's)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    await start_transactional(producer)
    sender = RecordSender(producer, transactional=True)
    sender.bind(task_group)
    return sender


async def _group_commits(bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> dict[Any, Any]:
    """What the group has committed, read as the Spark engine reads it (a consumer that never joins)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        return await fetch_stable_commits(consumer, partitions, 10)
    finally:
        await consumer.stop()


async def _committed_values(bootstrap: str, topic: str) -> tuple[list[bytes | None], bool]:
    """The values readable `read_committed` in partition 0 of `topic`, and whether a transaction is
    still open there (its last stable offset short of its end)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level="read_committed")
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        stable_end = (await consumer.end_offsets([tp]))[tp]
        values: list[bytes | None] = []
        while await consumer.position(tp) < stable_end:
            for records in (await consumer.getmany(tp, timeout_ms=500)).values():
                values.extend(r.value for r in records)
        plain = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        await plain.start()
        try:
            written_end = (await plain.end_offsets([tp]))[tp]
        finally:
            await plain.stop()
        return values, stable_end < written_end
    finally:
        await consumer.stop()


def _records(*values: bytes) -> list[ProducedRecord]:
    return [ProducedRecord(b"k", v, 1000, ()) for v in values]


async def _setup(bootstrap: str, name: str, task_group: TaskGroup) -> tuple[str, str, str, RecordSender]:
    """An output and an input topic, a group name and a started sender, all named after `name`."""
    suffix = f"{name}-{uuid.uuid4().hex[:8]}"
    out, inp = f"out-{suffix}", f"in-{suffix}"
    await create_topics(bootstrap, {out: 1, inp: 1})
    return out, inp, f"g-{suffix}", await _started(bootstrap, f"txn-{suffix}", task_group)


async def test_a_commit_publishes_the_output_and_the_offsets_with_their_metadata(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    seen_at_offsets: list[dict[tuple[str, int], int]] = []
    async with anyio.create_task_group() as task_group:
        out, inp, group, sender = await _setup(bootstrap, "commit", task_group)
        try:
            await sender.send({(out, 0): _records(b"a", b"b", b"c")})
            acked = await commit_transaction(
                sender, with_metadata({(inp, 0): 7}, {(inp, 0): "progress"}), group,
                before_offsets=lambda: seen_at_offsets.append(dict(sender.acked_offsets)))
        finally:
            await sender.producer.stop()
    assert acked == {(out, 0): 3}
    assert len(seen_at_offsets) == 1  # the hook ran once, right before the offsets went out
    assert await _group_commits(bootstrap, group, [(inp, 0)]) == {(inp, 0): (7, "progress")}
    assert await _committed_values(bootstrap, out) == ([b"a", b"b", b"c"], False)


async def test_a_record_the_broker_refuses_fails_the_commit_and_the_abort_takes_the_offsets(
        kafka_broker: Any) -> None:
    """The offsets are added while the records are still being acknowledged: a record the broker then refuses
    (larger than its topic's `max.message.bytes`) fails the commit before it commits, and the abort throws the
    offsets away with the output."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    out, inp, group = f"small-out-{suffix}", f"small-in-{suffix}", f"small-g-{suffix}"
    await create_topics(bootstrap, {out: 1}, {"max.message.bytes": "200"})
    await create_topics(bootstrap, {inp: 1})
    added: list[bool] = []
    async with anyio.create_task_group() as task_group:
        sender = await _started(bootstrap, f"small-{suffix}", task_group)
        try:
            await sender.send({(out, 0): _records(b"fits", b"x" * 2000)})
            with pytest.raises(ProductionError, match="MessageSizeTooLarge|RecordTooLarge"):
                await commit_transaction(sender, with_metadata({(inp, 0): 5}, {}), group,
                                         before_offsets=lambda: added.append(True))
            await sender.producer.abort_transaction()
        finally:
            await sender.producer.stop()
    assert added == [True]
    assert await _group_commits(bootstrap, group, [(inp, 0)]) == {(inp, 0): (None, "")}
    assert await _committed_values(bootstrap, out) == ([], False)


async def test_offsets_refused_before_they_go_out_commit_nothing(kafka_broker: Any) -> None:
    """The asyncio runtime refuses its offsets there when its member is out of the group; it then aborts."""
    bootstrap = kafka_broker.bootstrap_servers

    def refuse() -> None:
        raise RuntimeError("out of the group")

    async with anyio.create_task_group() as task_group:
        out, inp, group, sender = await _setup(bootstrap, "refused", task_group)
        try:
            await sender.send({(out, 0): _records(b"a")})
            with pytest.raises(RuntimeError, match="out of the group"):
                await commit_transaction(sender, with_metadata({(inp, 0): 3}, {}), group, before_offsets=refuse)
            await sender.producer.abort_transaction()
        finally:
            await sender.producer.stop()
    assert await _group_commits(bootstrap, group, [(inp, 0)]) == {(inp, 0): (None, "")}
    assert await _committed_values(bootstrap, out) == ([], False)


async def test_a_new_producer_of_the_id_aborts_the_open_transaction_and_fences_the_old_one(
        kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    out, group, txn_id = f"fence-out-{suffix}", f"fence-g-{suffix}", f"fence-{suffix}"
    await create_topics(bootstrap, {out: 1})
    async with anyio.create_task_group() as task_group:
        old = await _started(bootstrap, txn_id, task_group)
        try:
            await old.send({(out, 0): _records(b"old")})
            await old.flush()
            assert await _committed_values(bootstrap, out) == ([], True)  # open: the stable end stops before it
            new = await _started(bootstrap, txn_id, task_group)
            try:
                assert await _committed_values(bootstrap, out) == ([], False)  # aborted by the new one's start
                with pytest.raises(ProducerFenced):
                    await commit_transaction(old, {}, group)
                await new.send({(out, 0): _records(b"new")})
                await commit_transaction(new, {}, group)
            finally:
                await new.producer.stop()
        finally:
            await old.producer.stop()
    assert await _committed_values(bootstrap, out) == ([b"new"], False)
