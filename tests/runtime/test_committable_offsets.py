"""`PartitionPositions.committable`: what a task commits, as Kafka Streams' `committableOffsetsAndMetadata`.

The consumer's position where the task has processed everything the consumer returned for the partition
(past the transaction markers that follow), the next offset after its last processed record otherwise. The
consumer is aiokafka's own, never started: its assignment and positions are set as its fetcher sets them.
"""

from __future__ import annotations

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


async def _consumer(*partitions: tuple[str, int]) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(bootstrap_servers="localhost:1")
    consumer.assign([TopicPartition(*tp) for tp in partitions])
    return consumer


def _set_position(consumer: AIOKafkaConsumer, tp: tuple[str, int], offset: int) -> None:
    """Where the fetcher leaves the position once it handed out records, and read the markers after them."""
    consumer._subscription.subscription.assignment.state_value(TopicPartition(*tp)).seek(offset)


def _positions(consumer: AIOKafkaConsumer) -> PartitionPositions:
    return PartitionPositions(consumer, cast(Any, None), StreamsConfig({"application.id": "lag"}))


def _poll(positions: PartitionPositions, actor: object, tp: tuple[str, int], offsets: range) -> None:
    """A poll returned records at `offsets` and they were handed to `actor`."""
    positions.returned({TopicPartition(*tp): [_Record(o) for o in offsets]})
    positions.handed(tp, actor, offsets[-1] + 1)


async def test_a_task_that_processed_everything_commits_the_position_past_the_markers() -> None:
    consumer = await _consumer(TP, OTHER)
    try:
        positions, actor = _positions(consumer), object()
        _poll(positions, actor, TP, range(0, 10))
        _poll(positions, actor, OTHER, range(0, 5))
        _set_position(consumer, TP, 11)  # a marker at 10
        _set_position(consumer, OTHER, 5)  # nothing after the records
        assert positions.committable(actor, {TP: 10, OTHER: 5}) == {TP: 11, OTHER: 5}
    finally:
        await consumer.stop()


async def test_records_handed_but_not_processed_keep_the_consumed_offset() -> None:
    consumer = await _consumer(TP)
    try:
        positions, actor = _positions(consumer), object()
        _poll(positions, actor, TP, range(0, 10))
        _set_position(consumer, TP, 11)
        # The task has processed up to 7: 7..9 wait in its queue or mailbox.
        assert positions.committable(actor, {TP: 7}) == {TP: 7}
    finally:
        await consumer.stop()


async def test_records_returned_but_not_handed_yet_keep_the_consumed_offset() -> None:
    consumer = await _consumer(TP)
    try:
        positions, actor = _positions(consumer), object()
        _poll(positions, actor, TP, range(0, 10))
        positions.returned({TopicPartition(*TP): [_Record(10), _Record(11)]})  # waits for the dispatch lock
        _set_position(consumer, TP, 12)
        assert positions.committable(actor, {TP: 10}) == {TP: 10}
        positions.handed(TP, actor, 12)
        assert positions.committable(actor, {TP: 12}) == {TP: 12}
    finally:
        await consumer.stop()


async def test_a_position_the_consumer_does_not_know_keeps_the_consumed_offset() -> None:
    consumer = await _consumer(TP)
    try:
        positions, actor = _positions(consumer), object()
        _poll(positions, actor, TP, range(0, 10))
        assert positions.committable(actor, {TP: 10}) == {TP: 10}  # assigned, no position yet
        _poll(positions, actor, OTHER, range(0, 3))  # not assigned to the consumer
        assert positions.committable(actor, {OTHER: 3}) == {OTHER: 3}
    finally:
        await consumer.stop()


async def test_another_tasks_positions_are_not_taken() -> None:
    consumer = await _consumer(TP)
    try:
        positions, old, new = _positions(consumer), object(), object()
        _poll(positions, old, TP, range(0, 10))
        _set_position(consumer, TP, 11)
        assert positions.committable(new, {TP: 10}) == {TP: 10}
    finally:
        await consumer.stop()


async def test_a_later_commit_of_the_task_does_not_go_back_below_the_markers() -> None:
    # The revocation commits the position; the close that follows, once the consumer's assignment changed
    # (no position any more), commits the same offset, not the one before the markers.
    consumer = await _consumer(TP)
    try:
        positions, actor = _positions(consumer), object()
        _poll(positions, actor, TP, range(0, 10))
        _set_position(consumer, TP, 11)
        assert positions.committable(actor, {TP: 10}) == {TP: 11}
        consumer.assign([TopicPartition(*OTHER)])
        assert positions.committable(actor, {TP: 10}) == {TP: 11}
        assert positions.committable(object(), {TP: 10}) == {TP: 10}  # a new task of the partition
    finally:
        await consumer.stop()
