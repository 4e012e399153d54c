"""The KIP-447 requests of `fenced_offsets` against the real broker: a transaction's offsets are
refused for a stale generation, and a stable offset fetch waits for a pending transaction."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaTimeoutError

from streamlet.kafka.fenced_offsets import (
    MemberFencedError,
    consumer_group_metadata,
    fence_offset_commits,
    fetch_stable_offsets,
)
from tests.helpers.kafka import create_topics, joined_consumer

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def _transactional_producer(bootstrap: str, group_metadata: Any) -> Any:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"txn-{uuid.uuid4().hex[:8]}")
    fence_offset_commits(producer, group_metadata)
    await producer.start()
    return producer


async def test_offsets_without_a_membership_are_never_sent(kafka_broker: Any) -> None:
    """Found by `make soak`: an instance cut off from the broker finished a commit on reconnecting, and
    its heartbeat reset the membership between the commit's check and the TxnOffsetCommit. Stamped
    with generation -1 and no member id, which the coordinator does not check, the offsets of a member
    the group had dropped were committed, beside its successor's work on the same input (55 updates
    counted twice). Such a request is refused before it is sent; the transaction aborts cleanly."""
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = f"unfenced-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    await create_topics(bootstrap, {topic: 1})
    consumer = await joined_consumer(bootstrap, group, topic)  # the group has a live member
    try:
        out_of_group = await _transactional_producer(bootstrap, lambda: (-1, "", None))
        try:
            await out_of_group.begin_transaction()
            with pytest.raises(MemberFencedError, match="out of the group"):
                await out_of_group.send_offsets_to_transaction({TopicPartition(topic, 0): 5}, group)
            await out_of_group.abort_transaction()
        finally:
            await out_of_group.stop()
        assert await fetch_stable_offsets(consumer, [(topic, 0)], 5) == {(topic, 0): None}
    finally:
        await consumer.stop()


async def test_offsets_of_the_current_generation_commit_and_a_stale_one_is_refused(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = f"fenced-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    await create_topics(bootstrap, {topic: 1})
    consumer = await joined_consumer(bootstrap, group, topic)
    tp = TopicPartition(topic, 0)
    try:
        generation, member_id, _ = consumer_group_metadata(consumer)
        assert generation >= 1 and member_id

        stale = await _transactional_producer(bootstrap, lambda: (generation - 1, member_id, None))
        try:
            await stale.begin_transaction()
            with pytest.raises(MemberFencedError, match="IllegalGeneration"):
                await stale.send_offsets_to_transaction({tp: 5}, group)
            await stale.abort_transaction()  # the producer stays usable after the refusal
            await stale.begin_transaction()
            await stale.abort_transaction()
        finally:
            await stale.stop()
        assert await fetch_stable_offsets(consumer, [(topic, 0)], 5) == {(topic, 0): None}

        current = await _transactional_producer(bootstrap, lambda: consumer_group_metadata(consumer))
        try:
            await current.begin_transaction()
            await current.send_offsets_to_transaction({tp: 7}, group)
            await current.commit_transaction()
        finally:
            await current.stop()
        assert await fetch_stable_offsets(consumer, [(topic, 0)], 5) == {(topic, 0): 7}
    finally:
        await consumer.stop()


async def test_a_stable_fetch_waits_until_the_pending_transaction_ends(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = f"stable-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    await create_topics(bootstrap, {topic: 2})
    consumer = await joined_consumer(bootstrap, group, topic)
    producer = await _transactional_producer(bootstrap, lambda: consumer_group_metadata(consumer))
    try:
        await producer.begin_transaction()
        await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 11}, group)
        # Pending offsets of partition 0 hold its fetch; partition 1 has none and is stable.
        with pytest.raises(KafkaTimeoutError, match="pending"):
            await fetch_stable_offsets(consumer, [(topic, 0)], 1.0)
        assert await fetch_stable_offsets(consumer, [(topic, 1)], 1.0) == {(topic, 1): None}
        assert (await consumer.committed(TopicPartition(topic, 0))) is None  # a plain fetch does not wait

        async def commit_soon() -> None:
            await anyio.sleep(1.0)
            await producer.commit_transaction()

        async with anyio.create_task_group() as tg:
            tg.start_soon(commit_soon)
            started = anyio.current_time()
            offsets = await fetch_stable_offsets(consumer, [(topic, 0), (topic, 1)], 20)
            waited = anyio.current_time() - started
        assert offsets == {(topic, 0): 11, (topic, 1): None}
        assert waited >= 0.9
    finally:
        await producer.stop()
        await consumer.stop()
