"""`PartitionPositions`: the partitions this member dispatches now, and where each one's task continues.

Why it exists: every record must reach its task exactly once across rebalances, and two parts move
partitions — the rebalance listener (a new assignment) and the poll loop (a dispatched batch, a task
whose restoration completed). The bookkeeping that makes "never skipped, never handed over twice"
hold is kept here, in one place:

- per partition, the task actor it feeds and the next offset not yet handed to that actor. An entry
  of an actor that is gone (closed, or replaced by a new task) is stale and ignored;
- after every assignment, each partition is sought explicitly: a kept task's partitions to the next
  offset it has not been handed, a new task's to the committed offset (under exactly-once a stable
  one: read once no transaction of the previous owner is pending, see `fenced_offsets`), and a
  partition without a commit to `auto.offset.reset`, resolved as an explicit offset;
- an epoch that every rebalance callback bumps: a batch fetched in an older epoch is dropped and its
  partitions are sought back (`refetch`), so its records come again through the new assignment;
- the fetch state the poll loop keeps per partition: paused because its task's queue is full
  (`buffered.records.per.partition`), or a partition of a task that reads several partitions and
  whose fetch is not yet known to be at the partition's end (such a task idles while one of them is
  empty: PartitionGroup's docstring; with `max.task.idle.ms` = -1 it never does, and none is tracked).
  A new assignment starts with neither.

And what a task commits for a partition (`committable`): as Kafka Streams, the consumer's position once
the task has processed every record the consumer returned for it, so that the commit lies past the
transaction markers after its last record and a caught-up application's lag reads 0; the next offset
after its last processed record while any returned record still waits in its queue or mailbox.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka import TopicPartition

from streamlet.config import StreamsConfig
from streamlet.kafka.fenced_offsets import fetch_stable_commits, fetch_stable_offsets
from streamlet.offset_reset import AutoOffsetReset, NoOffsetResetPolicyError
from streamlet.runtime.task_manager import TaskManager

Partition = tuple[str, int]


def waits_for_fetches(actor: Any) -> bool:
    """True for a task that reads several input partitions (a join's or a merge's co-partitioned inputs) and may
    wait for one of them, i.e. `max.task.idle.ms` is not -1 (`PartitionGroup.waits_for_fetches`)."""
    return bool(actor.task.partition_group.waits_for_fetches)


class PartitionPositions:
    """The current assignment's partitions, the next offset each one's task expects, and the seeks
    that put the consumer there (see the module docstring)."""

    def __init__(self, consumer: Any, tasks: TaskManager, config: StreamsConfig,
                 reset_policies: Mapping[str, AutoOffsetReset] | None = None, group: Any = None) -> None:
        self._consumer = consumer
        # Who answers for the group's committed offsets: the group consumer itself, or the streams
        # group membership when the consumer has no group of its own (`group.protocol=streams`).
        self._group = consumer if group is None else group
        self._tasks = tasks
        self._config = config
        self._default_policy = AutoOffsetReset.parse(config["auto.offset.reset"])
        self._policies = dict(reset_policies or {})  # per source topic (Consumed's offset_reset)
        self.assigned: set[Partition] = set()  # dispatched to their tasks; empty from revocation to assignment
        self.epoch = 0  # bumped by every rebalance callback; a batch fetched in an older epoch is stale
        self._next_offset: dict[Partition, tuple[Any, int]] = {}
        self.awaited: dict[Partition, Any] = {}  # partition -> the actor that waits to learn it is caught up
        self.paused_full: set[Partition] = set()  # paused because the task's queue is full
        # Per partition, the offset after the last record a poll returned (TopicPartition keys: equal to the
        # plain tuples). A position past it went over markers or aborted records only (see `committable`).
        self._returned: dict[Partition, int] = {}
        # Per partition, the task actor that last committed a position past its consumed offset, and that
        # position: a later commit of the same task never goes back below it (a close after the revocation's commit).
        self._past_markers: dict[Partition, tuple[Any, int]] = {}

    # -- the assignment ---------------------------------------------------------------------------
    def new_epoch(self) -> None:
        """A rebalance callback began: whatever was fetched before is stale."""
        self.epoch += 1

    def revoke_all(self) -> None:
        """Every partition is taken away (revocation, or lost tasks): dispatch nothing until the next assignment."""
        self.epoch += 1
        self.assigned = set()

    def drop(self, partitions: Iterable[Partition]) -> None:
        """These partitions' tasks were closed (a failed commit): dispatch nothing more to them."""
        self.assigned -= set(partitions)
        self.epoch += 1

    def assign(self, partitions: set[Partition]) -> None:
        """The assignment was taken over: dispatch to these partitions' tasks (the consumer starts them unpaused).
        What was kept for partitions that left is forgotten: their tasks are closed by now, and an entry would
        keep a closed task actor (its stores and queues) alive; one that comes back gets a new task."""
        self.assigned = partitions
        self.paused_full.clear()
        for kept in (self._next_offset, self._returned, self._past_markers, self.awaited):
            for key in [key for key in kept if key not in partitions]:
                del kept[key]

    # -- positions --------------------------------------------------------------------------------
    def expected_offset(self, key: Partition, actor: Any) -> int | None:
        """The next offset `actor` expects from this partition, or None if it was handed nothing yet."""
        entry = self._next_offset.get(key)
        return entry[1] if entry is not None and actor is not None and entry[0] is actor else None

    def handed(self, key: Partition, actor: Any, next_offset: int) -> None:
        """`actor` was handed this partition's records up to `next_offset` (exclusive)."""
        self._next_offset[key] = (actor, next_offset)

    def next_offsets(self) -> dict[Partition, int]:
        """Per partition, the next offset its (last) task is handed; what the consumer lag is measured from."""
        return {key: offset for key, (_actor, offset) in self._next_offset.items()}

    def returned(self, batches: Mapping[Any, list[Any]]) -> None:
        """A poll returned these batches (TopicPartition -> records); called before anything else awaits."""
        returned = self._returned
        for tp, records in batches.items():
            if records:
                returned[tp] = records[-1].offset + 1

    def committable(self, actor: Any, consumed: Mapping[Partition, int]) -> dict[Partition, int]:
        """The offsets `actor`'s task commits, from the next offsets after the records it processed (`consumed`):
        Kafka Streams' `committableOffsetsAndMetadata`. Where the task has processed everything the consumer
        returned for a partition, the consumer's position, which lies past the transaction markers (and aborted
        records) that follow; otherwise, records returned but still queued, `consumed`. The positions are the
        consumer's local ones, read once per partition and commit, without a request."""
        committable = dict(consumed)
        returned, past_markers = self._returned, self._past_markers
        for key, offset in consumed.items():
            best = offset
            earlier = past_markers.get(key)
            if earlier is not None and earlier[0] is actor and earlier[1] > best:
                best = earlier[1]  # nothing but markers lies between `offset` and it
            entry = self._next_offset.get(key)
            # Everything handed to the task processed, and everything the consumer returned handed to it:
            if entry is not None and entry[0] is actor and entry[1] == offset and returned.get(key, 0) <= offset:
                position = _local_position(self._consumer, key)
                if position is not None and position > best:
                    best = position
            if best != offset:
                committable[key] = best
                past_markers[key] = (actor, best)
        return committable

    async def seek(self, partitions: set[Partition]) -> None:
        """Position every partition of `partitions` where its task continues (see the module docstring)."""
        consumer = self._consumer
        actors = {tp: actor for tp in sorted(partitions) if (actor := self._tasks.actor_for(*tp))}
        committed = await self._committed([tp for tp, a in actors.items() if self.expected_offset(tp, a) is None])
        offsets = {tp: self.expected_offset(tp, actor) for tp, actor in actors.items()}
        offsets = {tp: committed.get(tp) if offset is None else offset for tp, offset in offsets.items()}
        unset = [TopicPartition(*tp) for tp, offset in offsets.items() if offset is None]
        if unset:
            offsets.update(await self._reset_offsets(unset))
        for (topic, partition), actor in actors.items():
            tp = TopicPartition(topic, partition)
            offset = offsets[(topic, partition)]
            assert offset is not None
            self._next_offset[(topic, partition)] = (actor, offset)
            consumer.seek(tp, offset)
            if waits_for_fetches(actor):
                self.awaited[(topic, partition)] = actor
                actor.task.partition_group.expect([(topic, partition)])

    async def _reset_offsets(self, unset: list[TopicPartition]) -> dict[Partition, int]:
        """Where partitions without a commit start: each topic's reset policy (Consumed's, else
        auto.offset.reset), resolved here as explicit offsets (one request per kind), because the
        fetcher may already have moved past the reset point meanwhile."""
        by_kind: dict[str, list[TopicPartition]] = {}
        for tp in unset:
            by_kind.setdefault(self._policy(tp.topic).kind, []).append(tp)
        if "none" in by_kind:
            tp = by_kind["none"][0]
            raise NoOffsetResetPolicyError(
                f"no committed offset for input partition {tp.topic}-{tp.partition} and its reset policy is "
                f"'none': set auto.offset.reset, or give the topic a policy (Consumed(offset_reset=...))")
        consumer = self._consumer
        found: dict[TopicPartition, int] = {}
        if "earliest" in by_kind:
            found.update(await consumer.beginning_offsets(by_kind["earliest"]))
        if "latest" in by_kind:
            found.update(await consumer.end_offsets(by_kind["latest"]))
        if "by_duration" in by_kind:
            now_ms = int(time.time() * 1000)
            since = {tp: max(0, now_ms - self._policy(tp.topic).duration_ms) for tp in by_kind["by_duration"]}
            at = await consumer.offsets_for_times(since)
            missing = [tp for tp, hit in at.items() if hit is None]  # nothing that recent: the end
            ends = await consumer.end_offsets(missing) if missing else {}
            found.update({tp: ends[tp] if hit is None else hit.offset for tp, hit in at.items()})
        return {(tp.topic, tp.partition): offset for tp, offset in found.items()}

    def _policy(self, topic: str) -> AutoOffsetReset:
        return self._policies.get(topic, self._default_policy)

    async def committed_with_metadata(self, partitions: list[Partition]) -> dict[Partition, tuple[int | None, str]]:
        """The group's committed offsets (stable ones) and their metadata: what a task starting reads its
        partition times and processor metadata from (`TaskManager.restore_step`)."""
        return await fetch_stable_commits(self._group, partitions,
                                          int(self._config["transaction.timeout.ms"]) / 1000 + 30)

    async def _committed(self, partitions: list[Partition]) -> dict[Partition, int | None]:
        """The group's committed offsets; under exactly-once only stable ones (see `fenced_offsets`)."""
        if self._config.exactly_once or self._group is not self._consumer:
            return await fetch_stable_offsets(self._group, partitions,
                                              int(self._config["transaction.timeout.ms"]) / 1000 + 30)
        return {tp: await self._consumer.committed(TopicPartition(*tp)) for tp in partitions}

    def refetch(self, batches: dict[Any, list[Any]]) -> None:
        """A rebalance ran while this batch was fetched, or this member is out of the group and about to
        rejoin: drop the batch and seek its partitions back to the next offset their tasks expect, so
        the same records come again through the new assignment."""
        for tp in batches:
            key = (tp.topic, tp.partition)
            offset = self.expected_offset(key, self._tasks.actor_for(*key))
            if offset is not None and key in self.assigned:
                self._consumer.seek(tp, offset)

    # -- fetching ---------------------------------------------------------------------------------
    def pause(self, partitions: Iterable[Partition]) -> None:
        """Fetch nothing of these partitions until `resume` (a restoring task's, a full queue's)."""
        self._consumer.pause(*(TopicPartition(t, p) for t, p in partitions))

    def resume(self, partitions: Iterable[Partition]) -> None:
        """Fetch these partitions again."""
        self._consumer.resume(*(TopicPartition(t, p) for t, p in partitions))


def _local_position(consumer: Any, key: Partition) -> int | None:
    """The consumer's position of an assigned partition as it knows it now (the next offset it fetches, past the
    control records it read), or None when it has none: it neither waits for one nor asks the broker, as
    aiokafka's `position()` would."""
    try:
        state = consumer._subscription.subscription.assignment.state_value(TopicPartition(*key))
    except AttributeError:  # no assignment (or not aiokafka's consumer)
        return None
    if state is None or not state.has_valid_position:
        return None
    return int(state.position)
