"""A transaction whose offsets the group refused must really be aborted on the broker.

Found by the network-cut test (tests/integration/test_network_faults.py): an instance cut off longer
than its session reconnects, produces the work it had buffered, and its TxnOffsetCommit is refused
(unknown member). aiokafka's `error_transaction` then forgets which partitions the transaction holds,
so the following `abort_transaction()` saw an "empty" transaction and ended it locally without
sending EndTxn(ABORT): the broker kept it open, the next transaction of the same producer continued
it, and its commit made the refused work visible (duplicate and stale records under exactly-once).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition

from streamlet.kafka.fenced_offsets import MemberFencedError, consumer_group_metadata, fence_offset_commits
from tests.helpers.kafka import create_topics, joined_consumer, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def test_work_of_a_refused_transaction_never_becomes_visible(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    source, out, group = f"src-{suffix}", f"out-{suffix}", f"g-{suffix}"
    await create_topics(bootstrap, {source: 1, out: 1})
    consumer = await joined_consumer(bootstrap, group, source)
    generation, member_id, _ = consumer_group_metadata(consumer)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"txn-{suffix}")
    fence_offset_commits(producer, lambda: (generation - 1, member_id, None))  # a stale generation
    await producer.start()
    try:
        await producer.begin_transaction()
        await (await producer.send(out, b"refused"))  # on the broker: partition added, record written
        with pytest.raises(MemberFencedError):
            await producer.send_offsets_to_transaction({TopicPartition(source, 0): 1}, group)
        await producer.abort_transaction()
        await producer.begin_transaction()
        await (await producer.send(out, b"committed"))
        await producer.commit_transaction()
    finally:
        await producer.stop()
        await consumer.stop()
    records = await read_until(bootstrap, out, lambda rs: any(r.value == b"committed" for r in rs),
                               timeout=30, isolation_level="read_committed")
    assert [r.value for r in records] == [b"committed"]
