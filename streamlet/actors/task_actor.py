"""`TaskActor`: a `StreamTask` as an async actor with its own mailbox and punctuation timer.

The supervisor never touches a task's state directly: it posts messages (a consumed batch, a commit
request, a close) and, where it needs an answer, waits for the reply. The mailbox is FIFO, except
that a commit request goes ahead of the batches still waiting in it: like Kafka Streams, which
commits what it processed and leaves records it polled but did not process yet buffered, the commit
should not wait for a full mailbox to be worked off (that wait was most of an at-least-once commit's
duration, and so of its latency). The reply names the offsets the task actually processed, so it is
safe to commit whatever was still queued. Between two messages the actor wakes on its own to fire
wall-clock punctuations. Each message is handled in one synchronous stretch; the await
on the mailbox is the batch boundary where other actors, heartbeats and I/O get their turn.

A `RetriableError` that escapes the task (a state store's value serde cannot reach the schema registry to
register its changelog subject, or output held longer than `hold_limit_ms`) does not fail the member when
the runtime asked for revival (`revive_on_outage`): the actor stops, keeping the error in `outage`, and the
runtime closes the task dirty and revives it from its last commit (`TaskManager.corrupted_tasks`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from streamlet.actors.partition_group import ConsumedRecord
from streamlet.actors.processor_node import DynamicSinkNode, SinkNode
from streamlet.actors.record_collector import ProducedRecord
from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_progress import CommitTimes
from streamlet.errors import RetriableError, StrayCancellationError, StreamsError
from streamlet.metrics import latency_trace
from streamlet.metrics.counters import TaskCounters
from streamlet.metrics.topic_counters import TopicCounters

log = logging.getLogger(__name__)

Drained = dict[tuple[str, int], list[ProducedRecord]]
OutputSink = Callable[[Drained], Awaitable[None]]
"""Where an actor delivers its drained output at a batch boundary (the runtime's producer)."""
TopicResolver = Callable[[set[str]], Awaitable[None]]
"""Makes the partition counts of these topics known to the tasks' collectors (or raises if they do not exist)."""


class TaskStoppedError(StreamsError):
    """A request reached a task actor that had already stopped: a consequence, never the cause."""


class Reply:
    """A one-shot answer to a request posted in a mailbox."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def set(self, value: Any) -> None:
        self._value = value
        self._event.set()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._event.set()

    @property
    def answered(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> Any:
        await self._event.wait()
        if self._error is not None:
            raise self._error
        return self._value


@dataclass(slots=True)
class Records:
    topic: str
    partition: int
    records: Sequence[ConsumedRecord]
    caught_up: bool | None = None  # the fetch reached the partition's end (None: not tracked)


@dataclass(slots=True)
class Commit:
    """Flush stores and output; reply with the offsets that are safe to commit (and set `times`, what is
    committed with them, taken at the same point)."""

    reply: Reply = field(default_factory=Reply)
    posted_ns: int = field(default_factory=time.perf_counter_ns)
    times: CommitTimes | None = None
    generation: int = 0
    """Set with the reply: the transaction generation the task's stores sealed (see `Committed`)."""


@dataclass(slots=True)
class Committed:
    """The commit succeeded; write the checkpoint from the acknowledged changelog offsets."""

    changelog_offsets: dict[tuple[str, int], int]
    generation: int | None = None
    """Exactly-once: the generation of the task's `Commit` whose transaction committed; the stores write
    the writes staged up to it."""


@dataclass(slots=True)
class Close:
    clean: bool
    reply: Reply = field(default_factory=Reply)
    keep_stores_open: bool = False
    """A clean close under exactly-once: the stores are closed by the runtime after the close's commit."""
    times: CommitTimes | None = None
    """Set by a clean close: what is committed with the offsets of the reply."""


Message = Records | Commit | Committed | Close


class TaskActor:
    """Runs one task: `run()` is started in the supervisor's task group."""

    def __init__(self, task: StreamTask, deliver: OutputSink, mailbox_size: int = 8,
                 wall_clock: Callable[[], int] | None = None,
                 push_out: Callable[[], Awaitable[None]] | None = None) -> None:
        self.task = task
        self._deliver = deliver
        self._push_out = push_out
        """Waits until what `deliver` took has left for the broker (for a failing task's dead letters)."""
        self._wall = wall_clock or (lambda: int(time.time() * 1000))
        self.resolve_topics: TopicResolver | None = None
        """Looks up topics a dynamically routed sink named for the first time (the runtime's metadata)."""
        send: MemoryObjectSendStream[Message]
        receive: MemoryObjectReceiveStream[Message]
        send, receive = anyio.create_memory_object_stream(mailbox_size)
        self._send = send
        self._receive = receive
        self.closed = anyio.Event()
        self.error: BaseException | None = None
        self._urgent: list[Commit] = []  # commit requests handled before the next queued message
        self.counters = TaskCounters()  # per-batch measurements behind the task metrics
        self.topics = TopicCounters()  # per-batch records and bytes behind the topic metrics
        self._released = False  # held output was just released: the task takes its buffered records again
        self.revive_on_outage = False
        """A `RetriableError` escaping the task stops the actor without failing (see `outage`) instead of
        failing it: the runtime closes the task dirty and revives it (the test driver leaves it off)."""
        self.outage: RetriableError | None = None
        """The error the actor stopped on when `revive_on_outage`; None while it runs (or when it failed)."""
        self.outage_since = 0
        """Wall-clock ms when the outage began (a hold's start, else when the error escaped)."""
        self.hold_limit_ms: int | None = None
        """Output held this long (ms) gives up: its `RetriableError` escapes (None: held until
        task.timeout.ms). Under exactly-once the runtime sets half the transaction timeout (see
        `streamlet.actors.held_output`)."""
        self.start_delay_ms = 0
        """Wait this long before taking any message (a task revived after an outage backs off first)."""
        task.hold_unavailable_writes()

    @property
    def task_id(self) -> str:
        return self.task.task_id

    def sink_names(self) -> dict[str | None, str]:
        """The task's sink node names by topic (the topic metrics name the sink that produced); under None,
        the one dynamically routed sink's (when there is one), which owns every topic no static sink names."""
        names: dict[str | None, str] = {}
        nodes = self.task.nodes.values()
        dynamic = [node.name for node in nodes if isinstance(node, DynamicSinkNode)]
        for node in nodes:
            if isinstance(node, SinkNode) and not isinstance(node, DynamicSinkNode):
                names[node.topic] = node.name  # resolved already (an internal topic's full name)
        if len(dynamic) == 1:
            names[None] = dynamic[0]
        return names

    async def post(self, message: Message) -> None:
        """Enqueue a message; waits while the mailbox is full (back-pressure on the poll loop)."""
        await self._send.send(message)

    async def post_records(self, topic: str, partition: int, records: Sequence[ConsumedRecord],
                           caught_up: bool | None = None) -> None:
        await self.post(Records(topic, partition, records, caught_up))

    async def request(self, message: Commit | Close) -> Any:
        """Post a request and wait for its reply (or for the actor's failure)."""
        if self.closed.is_set():
            raise TaskStoppedError(f"task {self.task_id} is no longer running") from self.error
        try:
            if isinstance(message, Commit):
                # Ahead of the queue: the actor takes it before its next message. Also posted, when
                # there is room, to wake an idle actor (the copy it dequeues later is already answered);
                # a full mailbox means the actor is busy and will look here first anyway.
                self._urgent.append(message)
                try:
                    self._send.send_nowait(message)
                except anyio.WouldBlock:
                    pass
            else:
                await self.post(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise TaskStoppedError(f"task {self.task_id} is no longer running") from exc
        return await message.reply.wait()

    async def run(self) -> None:
        task = self.task
        try:
            if self.start_delay_ms > 0:
                await anyio.sleep(self.start_delay_ms / 1000)
            # A task that starts with a stream time restored from its committed offsets' metadata
            # punctuates on it before taking any record, as Kafka Streams' first loop after the task
            # turns running does (a stream-time schedule starts at 0, so one is due at once).
            if task.maybe_punctuate_stream_time():
                await self._flush_output()
            while True:
                group = task.partition_group
                dues = [d for d in (task.next_wall_clock_due(), group.idle_deadline(), group.held_deadline())
                        if d is not None]
                timeout = max(0.0, (min(dues) - self._wall()) / 1000) if dues else math.inf
                message: Message | None = None
                with anyio.move_on_after(timeout):
                    message = await self._receive.receive()
                while self._urgent:
                    await self._handle(self._urgent.pop(0))
                if message is None:
                    group.retry_held()  # records waiting for a retriable failure to pass (RetriableError)
                    task.process()  # an idle clock (max.task.idle.ms) may have run out: records may go on
                    task.maybe_punctuate_wall_clock(self._wall())
                    await self._flush_output()
                    await self._go_on_after_hold()
                    continue
                if isinstance(message, Commit) and message.reply.answered:
                    continue  # the wake-up copy of a commit taken ahead of the queue
                if await self._handle(message):
                    return
        except anyio.EndOfStream:
            return
        except RetriableError as exc:
            if not self.revive_on_outage:
                self.error = exc
                raise
            held = task.held_output
            self.outage_since = held.since if held is not None else task.partition_group.now_ms()
            self.outage = exc  # set before any await: a request failed with `exc` finds it set
            log.warning("task %s stopped: %s: %s; it is closed dirty and revived from its last commit",
                        self.task_id, type(exc).__name__, exc)
            await self._deliver_output_of_outage()
            return
        except BaseException as exc:
            self.error = exc
            StrayCancellationError.check(exc, f"task {self.task_id}")
            await self._deliver_dead_letters_of_failure()
            raise
        finally:
            self.closed.set()
            self._fail_pending()
            self._receive.close()

    async def _deliver_dead_letters_of_failure(self) -> None:
        """Under at-least-once, deliver the output (dead-letter records among it) of a task that a handler
        failed: Kafka Streams' producer has such records already and sends them as it closes. Under
        exactly-once they belong to the transaction the failure aborts."""
        task = self.task
        if not task.errors.failed_with_dead_letters or task.config.exactly_once:
            return
        try:
            with anyio.CancelScope(shield=True), anyio.fail_after(30):
                await self._flush_output()
                if self._push_out is not None:
                    await self._push_out()
        except Exception as exc:
            log.warning("task %s could not deliver its dead-letter records before failing: %s: %s",
                        self.task_id, type(exc).__name__, exc)

    async def _deliver_output_of_outage(self) -> None:
        """Under at-least-once, deliver what the task produced before it stopped on an outage, as Kafka Streams'
        producer sends what it was handed before a task is closed dirty (the revived task may produce it
        again: at-least-once). Under exactly-once it belongs to the transaction the dirty close aborts."""
        if self.task.config.exactly_once or self.task.held_output is not None:
            return
        try:
            with anyio.CancelScope(shield=True), anyio.fail_after(30):
                await self._flush_output()
        except Exception as exc:
            log.warning("task %s could not deliver its output before it is closed dirty: %s: %s",
                        self.task_id, type(exc).__name__, exc)

    def _fail_pending(self) -> None:
        """Answer requests still queued when the actor stops, so no caller waits forever."""
        error = TaskStoppedError(f"task {self.task_id} stopped before answering")
        for commit in self._urgent:
            commit.reply.fail(error)
        self._urgent.clear()
        while True:
            try:
                message = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            if isinstance(message, Commit | Close) and not message.reply.answered:
                message.reply.fail(error)

    async def _handle(self, message: Message) -> bool:
        """Handle one message; True when the actor is done (closed)."""
        task = self.task
        if isinstance(message, Records):
            task.partition_group.retry_held()  # when due: records keep coming while some are held
            if message.records:
                task.add_records(message.topic, message.partition, message.records)
                self.topics.record_consumed(message.topic, message.records)
            if message.caught_up is not None:
                task.partition_group.set_caught_up(message.topic, message.partition, message.caught_up)
            records = message.records
            started = time.perf_counter_ns()
            processed = task.process()
            if latency_trace.TRACE is not None and records:
                latency_trace.TRACE.record(f"{latency_trace.sub_topology_of(self.task_id)}.2-processed",
                                           (r.timestamp for r in records))
            self.counters.record_batch(time.perf_counter_ns() - started, processed,
                                       records[0].timestamp if records else None,
                                       records[-1].timestamp if records else 0, self._wall())
            task.maybe_punctuate_wall_clock(self._wall())
            if latency_trace.TRACE is None:
                await self._flush_output()
            else:
                latency_trace.TRACE.duration("task.process", started)
                step = time.perf_counter_ns()
                await self._flush_output()
                latency_trace.TRACE.duration("task.deliver", step)
            await self._go_on_after_hold()
            return False
        if isinstance(message, Commit):
            trace = latency_trace.TRACE
            try:
                if trace is None:
                    offsets = task.prepare_commit()
                    await self._flush_output()
                else:
                    trace.duration("commit.task-mailbox-wait", message.posted_ns)
                    step = time.perf_counter_ns()
                    offsets = task.prepare_commit()
                    trace.duration("commit.task-prepare", step)
                    step = time.perf_counter_ns()
                    await self._flush_output()
                    trace.duration("commit.task-deliver", step)
            except BaseException as exc:
                message.reply.fail(exc)
                raise
            message.times = task.commit_times()
            message.generation = task.state.generation
            message.reply.set(offsets)
            await self._go_on_after_hold()
            return False
        if isinstance(message, Committed):
            task.post_commit(message.changelog_offsets, generation=message.generation)
            return False
        # Close
        try:
            if message.clean:
                task.prepare_commit()
                await self._flush_output()
                message.times = task.commit_times()
            else:
                dropped = task.collector.discard()
                if dropped:
                    log.info("task %s closed dirty: dropped %d unsent records", task.task_id, dropped)
            task.close(clean=message.clean, keep_stores_open=message.clean and message.keep_stores_open)
        except BaseException as exc:
            message.reply.fail(exc)
            raise
        message.reply.set(dict(task.consumed_offsets))
        return True

    async def _flush_output(self) -> None:
        if self.task.held_output is not None:
            await self._release_held_output()
        collector = self.task.collector
        if collector.pending:
            unknown = collector.deferred_topics()
            if unknown:  # a dynamically routed sink wrote to topics not seen before: look them up first
                if self.resolve_topics is None:
                    raise StreamsError(f"task {self.task.task_id} wrote to unknown topics {sorted(unknown)}")
                await self.resolve_topics(unknown)
                collector.place_deferred()
            output = collector.drain()
            self.topics.record_produced(output)
            await self._deliver(output)

    async def _release_held_output(self) -> None:
        """Wait for the schema registry and serialize the records a sink held for want of it, before any of
        the output goes on (`streamlet.actors.held_output`): waits without blocking the event loop, raises
        once the failure has lasted `task.timeout.ms`."""
        task = self.task
        while (held := task.held_output) is not None:
            wait_ms = held.retry_at - task.partition_group.now_ms()
            if wait_ms > 0:
                await anyio.sleep(wait_ms / 1000)
            if task.release_held_output():
                self._released = True
            elif self.hold_limit_ms is not None and task.partition_group.now_ms() - held.since >= self.hold_limit_ms:
                error = held.error
                error.add_note(f"output held {self.hold_limit_ms} ms: the open transaction would time out; "
                               "the task's work since its last commit is thrown away and redone")
                raise error

    async def _go_on_after_hold(self) -> None:
        """After held output was released: process the records the task stopped before (they are not in
        any message to come)."""
        task = self.task
        while self._released:
            self._released = False
            if task.buffered:
                task.process()
                task.maybe_punctuate_wall_clock(self._wall())
                await self._flush_output()

    async def stop(self) -> None:
        """Close the mailbox without a Close message (used when the actor already failed)."""
        await self._send.aclose()
