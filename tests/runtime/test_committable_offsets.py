"""`PartitionPositions.committable`: what a task commits, as Kafka Streams' `committableOffsetsAndMetadata`.

The consumer's position where the task has processed everything the consumer returned for the partition
(past the transaction markers that follow), the next offset after its last processed record otherwise. The
consumer is aiokafka's own, never started: its assignment and positions are set as its fetcher sets them.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from streamlet.config import StreamsConfig
from streamlet.runtime.positions import PartitionPositions

pytestmark = pytest.mark.anyio

TP = ("in", 0)
OTHER = ("in", 1)


class _Record:
    def __init__(self, offset: int) -> None:
        self.offset = offset


@pytest.fixture
async def consumer() -> AsyncIterator[AIOKafkaConsumer]:
    """aiokafka's consumer, never started, assigned partition `TP` (not `OTHER`)."""
    consumer = AIOKafkaConsumer(bootstrap_servers="localhost:1")
    consumer.assign([TopicPartition(*TP)])
    try:
        yield consumer
    finally:
        await consumer.stop()


def _set_position(positions: PartitionPositions, tp: tuple[str, int], offset: int) -> None:
    """The consumer's position, as its fetcher sets it."""
    positions._consumer._subscription.subscription.assignment.state_value(TopicPartition(*tp)).seek(offset)


def _positions(consumer: AIOKafkaConsumer) -> PartitionPositions:
    return PartitionPositions(consumer, cast(Any, None), StreamsConfig({"application.id": "lag"}))


def _poll(positions: PartitionPositions, actor: object, tp: tuple[str, int], offsets: range,
          position: int | None = None) -> None:
    """A poll returned records at `offsets` and they were handed to `actor`; the consumer's position is then
    `position` (the fetcher read markers after them), or unknown."""
    positions.returned({TopicPartition(*tp): [_Record(o) for o in offsets]})
    positions.handed(tp, actor, offsets[-1] + 1)
    if position is not None:
        _set_position(positions, tp, position)


async def test_a_task_that_processed_everything_commits_the_position_past_markers(consumer: AIOKafkaConsumer) -> None:
    consumer.assign([TopicPartition(*TP), TopicPartition(*OTHER)])
    positions, actor = _positions(consumer), object()
    _poll(positions, actor, TP, range(0, 10))
    _poll(positions, actor, OTHER, range(0, 5))
    _set_position(positions, TP, 11)  # a marker at 10
    _set_position(positions, OTHER, 5)  # nothing after the records
    assert positions.committable(actor, {TP: 10, OTHER: 5}) == {TP: 11, OTHER: 5}


async def test_records_handed_but_not_processed_keep_the_consumed_offset(consumer: AIOKafkaConsumer) -> None:
    positions, actor = _positions(consumer), object()
    _poll(positions, actor, TP, range(0, 10), 11)
    # The task has processed up to 7: 7..9 wait in its queue or mailbox.
    assert positions.committable(actor, {TP: 7}) == {TP: 7}


async def test_records_returned_but_not_handed_yet_keep_the_consumed_offset(consumer: AIOKafkaConsumer) -> None:
    positions, actor = _positions(consumer), object()
    _poll(positions, actor, TP, range(0, 10))
    positions.returned({TopicPartition(*TP): [_Record(10), _Record(11)]})  # waits for the dispatch lock
    _set_position(positions, TP, 12)
    assert positions.committable(actor, {TP: 10}) == {TP: 10}
    positions.handed(TP, actor, 12)
    assert positions.committable(actor, {TP: 12}) == {TP: 12}


async def test_a_position_the_consumer_does_not_know_keeps_the_consumed_offset(consumer: AIOKafkaConsumer) -> None:
    positions, actor = _positions(consumer), object()
    _poll(positions, actor, TP, range(0, 10))
    assert positions.committable(actor, {TP: 10}) == {TP: 10}  # assigned, no position yet
    _poll(positions, actor, OTHER, range(0, 3))  # not assigned to the consumer
    assert positions.committable(actor, {OTHER: 3}) == {OTHER: 3}


async def test_another_tasks_positions_are_not_taken(consumer: AIOKafkaConsumer) -> None:
    positions, old, new = _positions(consumer), object(), object()
    _poll(positions, old, TP, range(0, 10), 11)
    assert positions.committable(new, {TP: 10}) == {TP: 10}


async def test_a_later_commit_of_the_task_does_not_go_back_below_the_markers(consumer: AIOKafkaConsumer) -> None:
    # The revocation commits the position; the close that follows, once the consumer's assignment changed
    # (no position any more), commits the same offset, not the one before the markers.
    positions, actor = _positions(consumer), object()
    _poll(positions, actor, TP, range(0, 10), 11)
    assert positions.committable(actor, {TP: 10}) == {TP: 11}
    consumer.assign([TopicPartition(*OTHER)])
    assert positions.committable(actor, {TP: 10}) == {TP: 11}
    assert positions.committable(object(), {TP: 10}) == {TP: 10}  # a new task of the partition


async def test_a_new_assignment_forgets_the_partitions_that_left(consumer: AIOKafkaConsumer) -> None:
    """A partition that left has its task closed: nothing of it is kept (an entry would keep the closed actor
    alive), and when it comes back, its new task is handed nothing yet and commits what it consumed."""
    consumer.assign([TopicPartition(*TP), TopicPartition(*OTHER)])
    positions = _positions(consumer)

    class _Actor:
        pass

    leaving, staying = _Actor(), _Actor()
    _poll(positions, leaving, OTHER, range(0, 5), 7)
    _poll(positions, staying, TP, range(0, 10), 11)
    assert positions.committable(leaving, {OTHER: 5}) == {OTHER: 7}
    positions.awaited[OTHER] = leaving
    gone = weakref.ref(leaving)
    positions.assign({TP})
    del leaving
    gc.collect()
    assert gone() is None
    assert positions.expected_offset(TP, staying) == 10
    assert positions.next_offsets() == {TP: 10}
    assert positions.committable(staying, {TP: 10}) == {TP: 11}
    back = _Actor()
    assert positions.expected_offset(OTHER, back) is None
    assert positions.committable(back, {OTHER: 5}) == {OTHER: 5}
