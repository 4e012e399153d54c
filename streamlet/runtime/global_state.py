"""The global stores of one instance and what keeps them current (Kafka Streams' global thread).

A global store holds every partition of its topic. Kafka Streams keeps it with one
`GlobalStateUpdateTask` per instance, apart from the stream tasks: its records go through the global
store's source and processor (`KTableSource` for a `GlobalKTable`, the user's processor for
`add_global_store`), never through the stream tasks' partition groups, and nothing is change-logged —
the topic is the changelog. The stream tasks only read the stores.

`GlobalStateUpdater` is that task, synchronous like `StreamTask` (it *is* a `StreamTask` over the
global node groups, named "global"): the test driver feeds it each record piped into a global topic
at once; the asyncio runtime feeds it from `GlobalStreamThread` (below), which restores every global
topic to its end before the stream tasks start and then keeps polling.

The background loop runs in a task group that `GlobalStreamThread` enters at the end of `start()`
and leaves in `close()`, so it cannot outlive the thread, and an error in it (an unexpected
cancellation included) reaches the member through `on_failure` as before.

The position reached is checkpointed in `<state.dir>/<application.id>/global/.checkpoint` after each
flush, so a restart with persistent stores continues from there; in-memory stores (or a missing
checkpoint) are rebuilt from the beginning of the topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
from aiokafka import AIOKafkaConsumer

from streamlet.actors.partition_group import ConsumedRecord
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.config import StreamsConfig
from streamlet.errors import StrayCancellationError
from streamlet.kafka.topic_manager import MissingSourceTopicError, admin_client, describe_partition_counts
from streamlet.stores.api import StateStore
from streamlet.stores.cache import SharedCacheBudget
from streamlet.topology import Topology

log = logging.getLogger(__name__)

GLOBAL_TASK_ID = "global"


class GlobalStateUpdater:
    """The global stores of one instance and the task that applies global-topic records to them."""

    def __init__(self, topology: Topology, config: StreamsConfig, state_root: Path, clock: Callable[[], int],
                 cache_bytes: int = 0, shared_cache: SharedCacheBudget | None = None) -> None:
        sub = topology.global_sub_topology()
        if sub is None:
            raise ValueError("the topology has no global store")
        self.topics = list(sub.source_topics)
        # a collector nothing is sent to: global processors forward nothing, global stores log nothing
        self._task = StreamTask(topology, sub, 0, config, RecordCollector(lambda _topic: 1), state_root, clock,
                                resolve_topic=lambda t: t, cache_bytes=cache_bytes, task_id=GLOBAL_TASK_ID,
                                shared_cache=shared_cache)
        if self._task.state.task_dir.exists() and not self._task.state.read_checkpoint():
            log.info("global stores: local state without a checkpoint is not trusted; wiping it")
            self._task.state.wipe_local_state()
        self._task.initialize_stores()
        self._task.initialize_processors()
        self._task.global_stores = self._task.stores
        self.offsets: dict[tuple[str, int], int] = {}
        """(topic, partition) -> next offset to read, from the checkpoint and then from processing."""
        if all(store.persistent for store in self._task.stores.values()):
            for tp, offset in self._task.state.read_checkpoint().items():
                topic, _, partition = tp.rpartition(":")
                self.offsets[(topic, int(partition))] = offset
        else:  # an in-memory store starts empty: the whole topic again
            self._task.state.delete_checkpoint()

    @property
    def stores(self) -> Mapping[str, StateStore]:
        """Global store name -> store, for the stream tasks (`StreamTask.global_stores`) and queries."""
        return self._task.stores

    def update(self, topic: str, partition: int, records: Iterable[ConsumedRecord]) -> int:
        """Apply records of one global-topic partition, in order; returns how many were processed."""
        batch = list(records)
        if not batch:
            return 0
        self._task.add_records(topic, partition, batch)
        done = self._task.process()
        self.offsets[(topic, partition)] = batch[-1].offset + 1
        return done

    def flush(self) -> None:
        """Flush the stores (their caches too) and checkpoint the position reached."""
        self._task.prepare_commit()
        if self.offsets:
            self._task.state.write_checkpoint({f"{t}:{p}": o for (t, p), o in self.offsets.items()})

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.flush()
        self._task.close(clean=True)


class GlobalStreamThread:
    """Keeps a `GlobalStateUpdater` current from the broker: a group-less consumer assigned every partition
    of every global topic. `start()` returns once each partition is read up to the end offset it had at
    start-up (the stream tasks must not run before), then a background loop goes on polling.

    The loop runs in a task group entered by `start()` and left by `close()`: both must be called by
    the same task, and any cancel scope that task entered in between must be left before `close()`
    (anyio's rule for nesting scopes). The member's exit stack does exactly that; anyio raises
    otherwise."""

    def __init__(self, updater: GlobalStateUpdater, consumer: Any, commit_interval_ms: int,
                 on_failure: Callable[[BaseException], None] = lambda _exc: None) -> None:
        self._updater = updater
        self._on_failure = on_failure
        self._consumer = consumer
        self._commit_interval_s = max(commit_interval_ms, 1) / 1000
        self._running: contextlib.AsyncExitStack | None = None  # holds the loop's task group
        self._failure: BaseException | None = None

    @property
    def stores(self) -> Mapping[str, StateStore]:
        """The global stores it keeps."""
        return self._updater.stores

    @property
    def failure(self) -> BaseException | None:
        """The error that stopped the background loop, if one did."""
        return self._failure

    async def start(self, partition_counts: Mapping[str, int]) -> None:
        """Assign every partition of the global topics (`partition_counts`: topic -> count), restore them
        to their current end, then start the background loop."""
        from aiokafka import TopicPartition

        consumer = self._consumer
        await consumer.start()
        partitions = [TopicPartition(t, p) for t in self._updater.topics for p in range(partition_counts[t])]
        consumer.assign(partitions)
        for tp in partitions:
            offset = self._updater.offsets.get((tp.topic, tp.partition))
            if offset is None:
                await consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, offset)
        ends = await consumer.end_offsets(partitions)
        await self._restore(ends)
        running = contextlib.AsyncExitStack()
        task_group = await running.enter_async_context(anyio.create_task_group())
        task_group.start_soon(self._run, name="streamlet-global-stream-thread")
        running.callback(task_group.cancel_scope.cancel)  # close() stops the loop, then leaves the group
        self._running = running

    async def _restore(self, ends: Mapping[Any, int]) -> None:
        """Read every partition up to its end offset of now (Kafka Streams' global state restoration)."""
        pending = {tp for tp, end in ends.items() if await self._consumer.position(tp) < end}
        while pending:
            await self._poll_once(timeout_ms=500)
            for tp in list(pending):
                if await self._consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
        self._updater.flush()
        log.info("global stores restored: %s", sorted(self._updater.stores))

    async def _poll_once(self, timeout_ms: int) -> int:
        batches = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=1000)
        n = 0
        for tp, records in batches.items():
            n += self._updater.update(tp.topic, tp.partition, records)
        return n

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_flush = loop.time() + self._commit_interval_s
        try:
            while True:
                await self._poll_once(timeout_ms=100)
                if loop.time() >= next_flush:
                    self._updater.flush()
                    next_flush = loop.time() + self._commit_interval_s
        except asyncio.CancelledError as exc:
            # close() cancels the loop; any other cancellation is a client library's stray one, which
            # would otherwise stop the global stores' updates in silence.
            stray = StrayCancellationError.of(exc, "the global stream thread")
            if stray is None:
                raise
            self._fail(stray)
        except BaseException as exc:  # surfaced by the supervisor
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        log.error("the global stream thread failed", exc_info=exc)
        self._failure = exc
        self._on_failure(exc)

    async def close(self) -> None:
        """Stop the background loop and wait for it, then stop the consumer and close the stores."""
        running, self._running = self._running, None
        try:
            if running is not None:
                await running.aclose()
        finally:
            try:
                await self._consumer.stop()
            finally:
                self._updater.close()


async def start_global_thread(topology: Topology, config: StreamsConfig, state_root: Path,
                              consumer_kwargs: Mapping[str, Any], admin_kwargs: Mapping[str, Any],
                              on_failure: Callable[[BaseException], None]) -> GlobalStreamThread | None:
    """The instance's global thread, its stores restored, or None when the topology has no global store.
    `on_failure` hears of an error that stops it later (the member then fails, as Kafka Streams does)."""
    if not topology.global_stores:
        return None
    topics = set(topology.global_stores.values())
    async with admin_client(admin_kwargs) as admin:
        counts = await describe_partition_counts(admin, topics)
    if topics - counts.keys():
        raise MissingSourceTopicError(topics - counts.keys())

    updater = GlobalStateUpdater(topology, config, state_root, clock=lambda: int(time.time() * 1000),
                                 cache_bytes=int(config["statestore.cache.max.bytes"]))
    consumer = AIOKafkaConsumer(
        **{"fetch_max_wait_ms": 100, **consumer_kwargs}, group_id=None, enable_auto_commit=False,
        auto_offset_reset="earliest", isolation_level="read_committed" if config.exactly_once else "read_uncommitted",
    )
    thread = GlobalStreamThread(updater, consumer, int(config["commit.interval.ms"]), on_failure)
    try:
        await thread.start(counts)
    except BaseException:
        await thread.close()
        raise
    return thread
