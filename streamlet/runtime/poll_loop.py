"""`PollLoop`: the member's poll loop — Kafka Streams' `StreamThread` run loop, on asyncio.

Each round advances restoration and the standby tasks by a slice, polls the main consumer, hands
each partition's records to the actor of its task, and commits when one is due (`Committer`).
Processing itself happens in the task actors, concurrently: the loop only routes.

Everything that touches the tasks runs under the dispatch lock, which the rebalance callbacks take
too, so a rebalance never meets a half-dispatched batch. A batch fetched in an older rebalance epoch,
or while this member is out of the group, is not dispatched: its partitions are sought back and its
records come again through the new assignment (`PartitionPositions.refetch`).

Two fetch rules keep tasks fed without unbounded buffers. A partition whose task holds
`buffered.records.per.partition` records (it idles, waiting for another of its inputs) is paused
until the task has worked it down. And a task that reads several partitions is told when one of
them is fetched to its end, also when the fetch returned nothing: until then it waits for records
of every input before it picks the next by timestamp (PartitionGroup's docstring), unless
`max.task.idle.ms` is -1: such a task never waits and is told nothing.

Why a class of its own: this is the member's hot path, one round per poll; keeping it apart from
wiring and from the rebalance callbacks keeps it short enough to read at once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from aiokafka import TopicPartition
from aiokafka.errors import InconsistentGroupProtocolError

from streamlet.actors.task_actor import TaskActor
from streamlet.config import StreamsConfig
from streamlet.kafka.client_settings import ClientRole, resolved_settings
from streamlet.metrics import latency_trace
from streamlet.metrics.counters import ThreadCounters
from streamlet.runtime.committer import Committer
from streamlet.runtime.foreign_members import RETRY_INTERVAL_S, ForeignMembersWait
from streamlet.runtime.membership import Membership
from streamlet.runtime.positions import PartitionPositions, waits_for_fetches
from streamlet.runtime.standby import StandbyTasks
from streamlet.runtime.task_manager import TaskManager


class PollLoop:
    """Polls, routes each batch to its task actor and commits on schedule, until `stop` is set.

    `before_output()` is awaited before a polled batch is dispatched (sink topics missing at start-up
    must exist first); `on_loop()` is called once a round (metrics sampling); `on_rebalance(True)`
    once restoration has finished. A join the broker refuses because the group still holds members
    of another protocol is waited out (`group_wait`, see `ForeignMembersWait`)."""

    def __init__(self, *, consumer: Any, config: StreamsConfig, tasks: TaskManager, standbys: StandbyTasks | None,
                 positions: PartitionPositions, membership: Membership, committer: Committer,
                 counters: ThreadCounters, dispatch_lock: anyio.Lock, stop: anyio.Event,
                 before_output: Callable[[], Awaitable[None]], on_loop: Callable[[], None],
                 on_rebalance: Callable[[bool], None], group_wait: ForeignMembersWait) -> None:
        self._consumer = consumer
        self._config = config
        self._tasks = tasks
        self._standbys = standbys
        self._positions = positions
        self._membership = membership
        self._committer = committer
        self._counters = counters
        self._lock = dispatch_lock
        self._stop = stop
        self._before_output = before_output
        self._on_loop = on_loop
        self._on_rebalance = on_rebalance
        self._group_wait = group_wait
        self._max_buffered = int(config["buffered.records.per.partition"])
        # Around the poll: aiokafka's getmany waits, without a timeout, for a rebalance in progress to
        # finish; `interrupt()` cancels it so that a close during a rebalance stuck on a frozen member is prompt.
        self._poll_scope: anyio.CancelScope | None = None
        self.full_queue_pauses = 0  # times a partition was paused for its task's full queue

    def interrupt(self) -> None:
        """End a poll in progress at once (the member is stopping)."""
        if self._poll_scope is not None:
            self._poll_scope.cancel()

    async def run(self) -> None:
        """Poll until `stop` is set; what was fetched but not dispatched then stays unconsumed (the
        next owner reads it from the committed offsets)."""
        tasks, positions, consumer = self._tasks, self._positions, self._consumer
        poll_ms = int(self._config["poll.ms"])
        # The main consumer's own value: `main.consumer.max.poll.records` > `consumer.` > unprefixed.
        max_records = int(resolved_settings(self._config, ClientRole.MAIN_CONSUMER)["max.poll.records"])
        self._committer.restart_interval()
        while not self._stop.is_set():
            await self._committer.maybe_recover()  # tasks that stopped on an outage are revived
            if tasks.restoring:
                async with self._lock:
                    await self._restore_step()
            if self._standbys is not None:
                async with self._lock:
                    await self._standbys.step()
            epoch = positions.epoch
            timeout = 0 if tasks.restoring else poll_ms
            if positions.paused_full:
                self._resume_drained()
            polled_at = time.perf_counter_ns()
            batches: dict[Any, list[Any]] = {}
            refused: InconsistentGroupProtocolError | None = None
            with anyio.CancelScope() as self._poll_scope:
                if self._stop.is_set():  # set during the awaits above
                    self._poll_scope.cancel()
                try:
                    batches = await consumer.getmany(timeout_ms=timeout, max_records=max_records)
                    positions.returned(batches)  # before any await: a commit may run while this batch waits
                except InconsistentGroupProtocolError as exc:  # the group still holds another protocol's members
                    refused = exc
            self._poll_scope = None
            if self._stop.is_set():
                break
            if refused is not None:
                with anyio.CancelScope() as self._poll_scope:  # a close during the wait is prompt too
                    await self._group_wait.refused(refused)  # raises once task.timeout.ms has passed
                    with anyio.move_on_after(RETRY_INTERVAL_S):  # the next poll retries the join
                        await self._stop.wait()
                self._poll_scope = None
                continue
            self._group_wait.polled()
            self._counters.record_poll(time.perf_counter_ns() - polled_at, sum(map(len, batches.values())))
            if latency_trace.TRACE is not None:
                latency_trace.TRACE.duration("loop.poll", polled_at)
                dispatched_at = time.perf_counter_ns()
            self._on_loop()
            if batches:
                await self._before_output()
            if batches or positions.awaited:
                async with self._lock:
                    if epoch == positions.epoch and not self._membership.out_of_group():
                        await self._dispatch(batches)
                    else:
                        positions.refetch(batches)
                if latency_trace.TRACE is not None:
                    latency_trace.TRACE.duration("loop.dispatch", dispatched_at)
            await self._committer.maybe_commit()
            self._counters.record_iteration(sum(actor.task.processed for actor in tasks.actors.values()))

    async def _restore_step(self) -> None:
        """Restore a slice; tasks that completed start at their committed offsets (see ChangelogReader)."""
        activated = await self._tasks.restore_step()
        positions = self._positions
        if activated:
            parts = set(activated) & positions.assigned
            await positions.seek(parts)
            positions.resume(sorted(parts))
        if not self._tasks.restoring and positions.assigned:
            self._on_rebalance(True)

    async def _dispatch(self, batches: dict[Any, list[Any]]) -> None:
        """Hand each partition's records to its task, exactly from the offset the task expects."""
        positions = self._positions
        for tp, records in batches.items():
            key = (tp.topic, tp.partition)
            actor = self._tasks.actor_for(tp.topic, tp.partition)
            if actor is None or key not in positions.assigned or not records or actor.outage is not None:
                continue  # (an actor stopped on an outage is closed and revived: its partitions are sought again)
            expected = positions.expected_offset(key, actor)
            if expected is not None and records[0].offset != expected:
                # Never skip or repeat: only a batch that starts where the task left off is handed over.
                records = [r for r in records if r.offset >= expected]
                if not records:
                    continue
            positions.handed(key, actor, records[-1].offset + 1)
            if latency_trace.TRACE is not None:
                sub = latency_trace.sub_topology_of(actor.task_id)
                latency_trace.TRACE.record(f"{sub}.1-fetched", (r.timestamp for r in records))
                self._committer.trace_handed(sub, (r.timestamp for r in records))
            caught_up = None
            if key in positions.awaited or waits_for_fetches(actor):
                await self._await_siblings(actor, key, batches)
                caught_up = await self._caught_up(tp)
                if caught_up:
                    positions.awaited.pop(key, None)
                else:
                    positions.awaited[key] = actor
            await actor.post_records(tp.topic, tp.partition, records, caught_up)
            if actor.task.partition_group.buffered_in(*key) >= self._max_buffered:
                # The task is not keeping up with this partition (it idles, waiting for another one):
                # stop fetching it rather than buffer without bound. Resumed by _resume_drained.
                positions.pause([key])
                positions.paused_full.add(key)
                self.full_queue_pauses += 1
        for key, awaiting in list(positions.awaited.items()):
            # A partition that returns nothing may be empty: tell its task once the fetch reached the end.
            actor = self._tasks.actor_for(*key)
            if actor is None or actor is not awaiting or actor.outage is not None:
                del positions.awaited[key]
            elif await self._caught_up(TopicPartition(*key)):
                del positions.awaited[key]
                await actor.post_records(key[0], key[1], (), True)

    async def _await_siblings(self, actor: TaskActor, key: tuple[str, int], batches: dict[Any, list[Any]]) -> None:
        """Before records of `key` reach a task that reads several partitions: each of its other partitions
        known caught up so far is awaited again when this poll returned records for it too (they are handed
        over after `key`'s, and the actor may run in between) or when its end moved past its fetch position
        (the fetch response told of records not fetched yet, e.g. one transaction over both topics), so that
        the task waits for those records and merges by timestamp instead of taking `key`'s first. Kafka Streams
        checks every empty partition's fetched lag before it processes (`PartitionGroup.readyToProcess`)."""
        positions = self._positions
        for sibling in positions.assigned:
            if sibling == key or sibling in positions.awaited or self._tasks.actor_for(*sibling) is not actor:
                continue
            tp = TopicPartition(*sibling)
            if not batches.get(tp) and await self._caught_up(tp):
                continue
            positions.awaited[sibling] = actor
            await actor.post_records(sibling[0], sibling[1], (), False)

    def _resume_drained(self) -> None:
        """Resume the partitions paused for a full queue once their task has worked it down below the
        limit (or the partition moved: the new assignment starts unpaused)."""
        positions = self._positions
        for key in list(positions.paused_full):
            actor = self._tasks.actor_for(*key)
            if actor is None or key not in positions.assigned:
                positions.paused_full.discard(key)
            elif actor.task.partition_group.buffered_in(*key) < self._max_buffered:
                positions.paused_full.discard(key)
                positions.resume([key])

    async def _caught_up(self, tp: TopicPartition) -> bool:
        """True when this partition's fetch position is at its end (last stable offset under read_committed)."""
        consumer = self._consumer
        end = consumer.last_stable_offset(tp) if self._config.exactly_once else consumer.highwater(tp)
        if end is None:
            return False
        try:
            return bool(await consumer.position(tp) >= end)
        except Exception:  # not assigned any more: the next assignment decides
            return False
