"""`ChangelogReader.restore`, as the Spark engine drives it, against the real broker: from the positions
its Spark state holds, up to each changelog's stable end as it was when the restore began, without
waiting for a transaction open on it, returning where each store now stands.

The changelog is written by hand: `z` = 1 (offset 0, before the position given), `b` = 2 and `a` = 5
(offsets 1 and 2), then a transaction that stays open (`a` = 99 at offset 3, the stable end) and a
later one that commits `c` = 3 behind it. The store must hold `a` = 5 and `b` = 2 only, and the
restore must say offset 3; a position past the log's end is kept as it is (the state is ahead).
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from streamlet.actors.stream_task import StreamTask
from streamlet.config import StreamsConfig
from streamlet.kafka.changelog_reader import ChangelogReader
from streamlet.runtime.task_manager import new_runtime_task
from tests.helpers.kafka import create_topics, produce, transactional_producer
from tests.integration.topologies import count_topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


def _task(app_id: str, state_root: Path) -> StreamTask:
    topology = count_topology("in", "out")
    config = StreamsConfig({"application.id": app_id, "bootstrap.servers": "unused:9092",
                            "state.dir": str(state_root), "processing.guarantee": "exactly_once_v2"})
    (sub,) = topology.sub_topologies()
    task = new_runtime_task(topology, sub, 0, config, state_root, lambda name: name, lambda _topic: 1, 0)
    task.initialize_stores()
    return task


async def _restore(bootstrap: str, task: StreamTask, positions: dict[str, int]) -> dict[str, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                isolation_level="read_committed")
    await consumer.start()
    try:
        reader = ChangelogReader(consumer, read_committed=True, wait_for_open_transactions=False)
        with anyio.fail_after(30):  # the open transaction is never waited for
            return await reader.restore(task, positions)
    finally:
        await consumer.stop()


async def test_restore_from_positions_to_the_stable_end_as_it_began(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    app_id = f"positions-{uuid.uuid4().hex[:8]}"
    changelog = f"{app_id}-counts-changelog"
    await create_topics(bootstrap, {changelog: 1})
    await produce(bootstrap, changelog, [(b"z", struct.pack(">q", 1)), (b"b", struct.pack(">q", 2)),
                                         (b"a", struct.pack(">q", 5))])
    zombie = await transactional_producer(bootstrap, "zombie")
    try:
        await zombie.begin_transaction()
        await (await zombie.send(changelog, key=b"a", value=struct.pack(">q", 99)))  # left open
        later = await transactional_producer(bootstrap, "later")
        async with later.transaction():
            await (await later.send(changelog, key=b"c", value=struct.pack(">q", 3)))
        await later.stop()

        task = _task(app_id, tmp_path / "state")
        try:
            assert await _restore(bootstrap, task, {f"{changelog}:0": 1}) == {f"{changelog}:0": 3}
            store = task.state.registered["counts"].store
            assert {kv.key: kv.value.value for kv in store.all()} == {"a": 5, "b": 2}
        finally:
            task.close(clean=False)

        ahead = _task(app_id, tmp_path / "ahead")
        try:
            assert await _restore(bootstrap, ahead, {f"{changelog}:0": 50}) == {f"{changelog}:0": 50}
            assert list(ahead.state.registered["counts"].store.all()) == []
        finally:
            ahead.close(clean=False)
    finally:
        await zombie.abort_transaction()
        await zombie.stop()


async def test_a_transaction_ending_before_its_records_are_read_is_restored(kafka_broker: Any,
                                                                          tmp_path: Path) -> None:
    """Waiting for an open transaction, the reader learns that it ended from the fetcher (the stable end
    reaches the high watermark) possibly before it reads the records that fetch brought. The store is
    complete only once those are read: it must restore `a` = 7, not stop with nothing."""
    bootstrap = kafka_broker.bootstrap_servers
    app_id = f"ended-{uuid.uuid4().hex[:8]}"
    changelog = f"{app_id}-counts-changelog"
    tp = TopicPartition(changelog, 0)
    await create_topics(bootstrap, {changelog: 1})
    zombie = await transactional_producer(bootstrap, "zombie")
    await zombie.begin_transaction()
    await (await zombie.send(changelog, key=b"a", value=struct.pack(">q", 5)))  # left open, then aborted
    owner = await transactional_producer(bootstrap, "owner")
    async with owner.transaction():
        await (await owner.send(changelog, key=b"a", value=struct.pack(">q", 7)))
    await owner.stop()
    task = _task(app_id, tmp_path / "state")
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                isolation_level="read_committed")
    await consumer.start()
    try:
        reader = ChangelogReader(consumer, read_committed=True, wait_for_open_transactions=True)
        reader.begin(task)
        with anyio.fail_after(30):  # until the reader has fetched and waits on the open transaction
            while True:
                assert await reader.step(0.2) == []
                lso, high = consumer.last_stable_offset(tp), consumer.highwater(tp)
                if lso is not None and high is not None and 0 <= lso < high:
                    break
        await zombie.abort_transaction()
        with anyio.fail_after(30):  # the background fetch brings the new stable end (and the records)
            while consumer.last_stable_offset(tp) != consumer.highwater(tp):
                await anyio.sleep(0.05)
        with anyio.fail_after(30):
            while not await reader.step(0.2):
                pass
        store = task.state.registered["counts"].store
        assert {kv.key: kv.value.value for kv in store.all()} == {"a": 7}
    finally:
        task.close(clean=False)
        await consumer.stop()
        await zombie.stop()


async def test_restore_refuses_a_reader_that_has_other_tasks_queued(tmp_path: Path) -> None:
    """`restore` drives the reader until its task is done; another task's completion would be lost."""
    app_id = f"queued-{uuid.uuid4().hex[:8]}"
    first, second = _task(app_id, tmp_path / "first"), _task(app_id, tmp_path / "second")
    try:
        reader = ChangelogReader(consumer=None)  # refused before the consumer is used
        reader.begin(first)
        with pytest.raises(RuntimeError, match="nothing else to restore"):
            await reader.restore(second, {})
    finally:
        first.close(clean=False)
        second.close(clean=False)
