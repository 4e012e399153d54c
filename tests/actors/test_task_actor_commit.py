"""A commit request goes ahead of the batches still queued in a task actor's mailbox.

Kafka Streams commits what it has processed and leaves polled records buffered; a streamlet commit
used to wait until the actor had worked off its whole mailbox (at-least-once, most of the commit's
duration). The reply must still name exactly the offsets the task processed: never a queued batch's.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from streamlet.actors.partition_group import RawRecord
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_actor import Commit, Drained, TaskActor, TaskStoppedError
from streamlet.config import StreamsConfig
from tests.integration.wordcount_app import topology as wordcount_topology

TOPIC = "streams-plaintext-input"


def _split_task(state_root: Path) -> StreamTask:
    """WordCount's first sub-topology (split, repartition by word) for partition 0: no stores."""
    topology = wordcount_topology()
    sub = next(s for s in topology.sub_topologies() if not s.stores)
    config = StreamsConfig({"application.id": "actor-test", "default.key.serde": "String",
                            "default.value.serde": "String"})
    task = StreamTask(topology, sub, 0, config, RecordCollector(lambda _t: 1), state_root, clock=lambda: 0,
                      resolve_topic=lambda t: t, cache_bytes=0)
    task.initialize_stores()
    task.initialize_processors()
    return task


def _batch(first: int, n: int) -> list[RawRecord]:
    return [RawRecord(TOPIC, 0, offset, 1_000 + offset, None, b"a b") for offset in range(first, first + n)]


@pytest.mark.anyio
async def test_a_commit_is_answered_before_queued_batches_with_only_processed_offsets(tmp_path: Path) -> None:
    release = anyio.Event()
    delivered: list[int] = []

    async def slow_sink(drained: Drained) -> None:
        delivered.append(sum(map(len, drained.values())))
        await release.wait()  # the producer is slow: the actor is stuck in its first batch's delivery

    actor = TaskActor(_split_task(tmp_path), slow_sink, mailbox_size=2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        await actor.post_records(TOPIC, 0, _batch(0, 10))
        await anyio.wait_all_tasks_blocked()
        assert delivered == [20], "the first batch was processed and its delivery is waiting"
        await actor.post_records(TOPIC, 0, _batch(10, 10))
        await actor.post_records(TOPIC, 0, _batch(20, 10))  # the mailbox is full now

        answered: dict[tuple[str, int], int] = {}

        async def commit() -> None:
            answered.update(await actor.request(Commit()))

        tg.start_soon(commit)
        await anyio.wait_all_tasks_blocked()
        release.set()
        with anyio.fail_after(5):
            while not answered:
                await anyio.sleep(0.01)
        assert answered == {(TOPIC, 0): 10}, "only the processed batch, not the two queued behind the commit"

        with anyio.fail_after(5):
            while actor.task.consumed_offsets.get((TOPIC, 0)) != 30:
                await anyio.sleep(0.01)
        assert await actor.request(Commit()) == {(TOPIC, 0): 30}, "the queued batches were processed after it"
        await actor.stop()
    assert delivered[0] == 20 and sum(delivered) == 60


@pytest.mark.anyio
async def test_a_commit_taken_ahead_of_the_queue_fails_if_the_actor_stops_first(tmp_path: Path) -> None:
    never = anyio.Event()

    async def stuck_sink(drained: Drained) -> None:
        await never.wait()

    actor = TaskActor(_split_task(tmp_path), stuck_sink, mailbox_size=1)
    outcome: list[BaseException] = []

    async def commit() -> None:
        try:
            await actor.request(Commit())
        except TaskStoppedError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as outer, anyio.create_task_group() as inner:
        inner.start_soon(actor.run)
        await actor.post_records(TOPIC, 0, _batch(0, 5))
        await anyio.wait_all_tasks_blocked()
        await actor.post_records(TOPIC, 0, _batch(5, 5))  # fills the mailbox: the commit is not posted
        outer.start_soon(commit)
        await anyio.wait_all_tasks_blocked()
        inner.cancel_scope.cancel()  # the actor stops without reaching the commit
    assert len(outcome) == 1, "the waiting commit must be failed, not left hanging"
