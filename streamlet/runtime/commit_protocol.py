"""How a task's output and its consumed offsets become durable: the one place a commit happens.

Two protocols behind one interface, chosen by `processing.guarantee`:

`AtLeastOnceCommits` — one idempotent producer shared by every task. A commit waits until everything
produced is acknowledged, then commits the consumed offsets through the consumer. A crash between the
two replays input (duplicates, never loss).

`ExactlyOnceCommits` — exactly_once_v2: one transactional producer for all of the member's tasks,
`transactional.id = <application.id>-<instance id>` (see `instance_id`). Each commit puts every
task's sink, repartition and changelog records and every task's consumed offsets into one
transaction: one transaction per member and commit interval, where one per task cost the broker
four times the CPU of at-least-once. A member that lost its partitions while alive (a stalled event
loop is enough) is fenced by the group, not by the producer: its offsets go out as TxnOffsetCommit v3
stamped with its group generation, which the coordinator refuses once the group has moved on, and
a new owner reads committed offsets only once they are stable (see `fenced_offsets`).

Because the transaction is shared, so is its fate: a task closed dirty while others run aborts the
others' uncommitted work too, and they fail their next commit (Kafka Streams closes all tasks of
an aborted EOS-v2 transaction dirty for the same reason).

A failed exactly-once commit is never retried: the caller closes the named tasks dirty and rejoins the group.

Both commit each offset with its metadata: Kafka Streams' encoding of the partition time and the task's
processor metadata (`streamlet.kafka.commit_metadata`), which a task starting reads back.

The commit sequence itself (start and begin, acknowledgements, offsets, commit) is the Kafka layer's
(`kafka.transactions`), shared with the Spark engine; what `ExactlyOnceCommits` adds is what a producer
kept for a whole member needs and the Spark engine's producer per task and batch does not (see its
docstring).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anyio
from aiokafka import AIOKafkaProducer
from aiokafka.errors import (
    CommitFailedError,
    InvalidProducerEpoch,
    KafkaConnectionError,
    KafkaTimeoutError,
    OutOfOrderSequenceNumber,
    UnknownProducerId,
)
from anyio.abc import TaskGroup

from streamlet.kafka.client_settings import stop_client
from streamlet.kafka.fenced_offsets import (
    GroupMetadata,
    MemberFencedError,
    consumer_group_metadata,
    fence_offset_commits,
    fetch_stable_offsets,
)
from streamlet.kafka.record_sender import RecordSender
from streamlet.kafka.transactions import Metadata, Offsets, commit_transaction, start_transactional, with_metadata
from streamlet.metrics import latency_trace

log = logging.getLogger(__name__)

class CommitFailed(Exception):
    """A commit did not happen; under exactly-once the tasks' uncommitted work must be thrown away."""

    def __init__(self, message: str, task_ids: list[str]) -> None:
        super().__init__(message)
        self.task_ids = task_ids


_PRODUCER_STATE_ERRORS = (OutOfOrderSequenceNumber, UnknownProducerId, InvalidProducerEpoch)
"""Errors after which a producer's sequence numbers or epoch no longer match the broker's: an abort does
not reset them (the Java client bumps the epoch there), so every later transaction would fail the same way."""


def breaks_producer_state(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from, is one of `_PRODUCER_STATE_ERRORS`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, _PRODUCER_STATE_ERRORS):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _merged(offsets_by_task: Mapping[str, Offsets]) -> Offsets:
    """All tasks' consumed offsets in one mapping (tasks never share an input partition)."""
    merged: Offsets = {}
    for offsets in offsets_by_task.values():
        merged.update(offsets)
    return merged


class CommitProtocol(Protocol):
    def bind(self, task_group: TaskGroup) -> None:
        """The task group the sender's batch pumps run in: the member's, entered before any task
        opens and left after the last one closed (see `RecordSender.bind`)."""

    async def open_task(self, task_id: str, partitions: list[tuple[str, int]]) -> RecordSender:
        """The sender a new task writes through; under exactly-once it returns once no transaction of
        the task's previous owner is pending on the task's input partitions."""

    async def commit(self, offsets_by_task: Mapping[str, Offsets], metadata: Metadata) -> Offsets:
        """Make every task's output and offsets (with their `metadata`) durable; returns acknowledged
        output offsets."""

    async def close_task(self, task_id: str, clean: bool) -> Offsets:
        """Release the task's sender; a clean close has committed first, a dirty one aborts."""

    async def stop(self) -> None:
        """Release everything (after every task was closed)."""

    @property
    def records_sent(self) -> int: ...

    @property
    def records_dropped(self) -> int: ...


class AtLeastOnceCommits:
    def __init__(self, producer: Any, commit_offsets: Callable[[Offsets, Metadata], Any],
                 skip_failed: bool = False) -> None:
        self._sender = RecordSender(producer, skip_failed)
        self._commit_offsets = commit_offsets

    def bind(self, task_group: TaskGroup) -> None:
        self._sender.bind(task_group)

    async def open_task(self, task_id: str, partitions: list[tuple[str, int]]) -> RecordSender:
        return self._sender

    async def commit(self, offsets_by_task: Mapping[str, Offsets], metadata: Metadata) -> Offsets:
        acked = await self._sender.flush()
        offsets = _merged(offsets_by_task)
        if offsets:
            try:
                await self._commit_offsets(offsets, metadata)
            except CommitFailedError as exc:
                # The group is rebalancing (or moved on without us). Not a failure of the application:
                # the revocation that follows commits these offsets again, and if the partitions are
                # gone, their new owner replays from the last commit, which at-least-once allows.
                log.warning("offsets not committed, the group is rebalancing: %s", exc.args[-1] if exc.args else exc)
        return acked

    async def close_task(self, task_id: str, clean: bool) -> Offsets:
        if clean:
            return await self._sender.flush()
        return {}

    async def stop(self) -> None:
        return None

    @property
    def records_sent(self) -> int:
        return self._sender.sent

    @property
    def records_dropped(self) -> int:
        return self._sender.dropped


class ExactlyOnceCommits:
    """One transactional producer for every task of this member (see the module docstring).

    It runs the Kafka layer's commit sequence (`kafka.transactions`) as the Spark engine does, and differs
    where a producer kept for a whole member must: the next transaction begins right after a commit (the
    producer lives on); a failure aborts the shared transaction and fails every task in it, and a producer
    that cannot abort is replaced (the Spark engine leaves that to its next producer's start); the offsets
    are stamped with the member's group membership (`fence_offset_commits`), since the group, not the
    producer's epoch, fences a member that lost its partitions while alive."""

    def __init__(self, application_id: str, transactional_id: str, producer_config: dict[str, Any],
                 transaction_timeout_ms: int, consumer: Any, skip_failed: bool = False) -> None:
        self._app_id = application_id
        self._transactional_id = transactional_id
        self._producer_config = producer_config
        self._txn_timeout_ms = transaction_timeout_ms
        self._consumer = consumer
        self._sender = RecordSender(None, skip_failed, transactional=True)
        self._open: set[str] = set()
        self._tainted: set[str] = set()  # open tasks whose uncommitted work an abort threw away
        self._committed: Offsets = {}
        self._sent_at_commit = 0
        # The membership the running commit was decided under, which its offsets are stamped with: if
        # the group drops this member meanwhile, the coordinator refuses them (see fence_offset_commits).
        self._membership: GroupMetadata = (-1, "", None)

    @property
    def transactional_id(self) -> str:
        return self._transactional_id

    def bind(self, task_group: TaskGroup) -> None:
        self._sender.bind(task_group)

    async def _start_producer(self) -> None:
        producer = AIOKafkaProducer(**self._producer_config, transactional_id=self._transactional_id,
                                    transaction_timeout_ms=self._txn_timeout_ms)
        fence_offset_commits(producer, lambda: self._membership)
        # Waits for the producer id: InitProducerId bumps the epoch of this transactional id, which
        # aborts whatever an earlier incarnation of this instance left open.
        await start_transactional(producer)
        self._sender.producer = producer
        self._sent_at_commit = self._sender.sent

    async def open_task(self, task_id: str, partitions: list[tuple[str, int]]) -> RecordSender:
        if self._sender.producer is None:
            await self._start_producer()
        # The previous owner's last transaction may still hold offsets (and changelog records) of
        # this task: wait until it is committed or aborted before the task restores or reads anything.
        await fetch_stable_offsets(self._consumer, partitions, self._txn_timeout_ms / 1000 + 30)
        self._open.add(task_id)
        return self._sender

    async def commit(self, offsets_by_task: Mapping[str, Offsets], metadata: Metadata) -> Offsets:
        if self._tainted:
            tainted, self._tainted = sorted(self._tainted), set()
            raise CommitFailed("an aborted transaction took these tasks' uncommitted work with it", tainted)
        sender = self._sender
        producer = sender.producer
        offsets = _merged(offsets_by_task)
        changed = any(self._committed.get(tp) != o for tp, o in offsets.items())
        if producer is None and (changed or sender.sent != self._sent_at_commit):
            # The producer could not be replaced after an abort (the cluster was away): what the tasks
            # did since is in no transaction. Fail them; they are reopened, and the producer restarted,
            # with the next assignment.
            sender.forget()
            self._sent_at_commit = sender.sent
            raise CommitFailed("the transactional producer is down (it could not be restarted after an "
                               "abort)", sorted(self._open | set(offsets_by_task)))
        if producer is None or (not changed and sender.sent == self._sent_at_commit):
            return {}  # nothing since the last commit: keep the (empty) transaction open
        trace = latency_trace.TRACE
        try:
            acked = await commit_transaction(sender, with_metadata(offsets, metadata), self._app_id,
                                             before_offsets=self._stamp_membership, trace=trace)
        except Exception as exc:  # every failure means the same: throw the work away
            failed = sorted(self._open | set(offsets_by_task))
            await self._abort(renew=breaks_producer_state(exc))
            raise CommitFailed(f"transactional commit failed: {type(exc).__name__}: {exc}", failed) from exc
        self._committed.update(offsets)
        self._sent_at_commit = sender.sent
        step = time.perf_counter_ns()
        await producer.begin_transaction()
        if trace is not None:
            trace.duration("commit.begin", step)
        return acked

    def _stamp_membership(self) -> None:
        """The membership this commit's offsets are stamped with (see `fence_offset_commits`), taken right
        before they go out; refused here when the member is out of the group."""
        self._membership = consumer_group_metadata(self._consumer)
        generation, member_id, _ = self._membership
        if generation < 0 or not member_id:
            # Offsets without a generation are not checked by the coordinator at all.
            raise MemberFencedError(f"this member is out of the group (generation {generation}); "
                                    "its partitions may be another member's now")

    async def _abort(self, renew: bool = False) -> None:
        """Abort the open transaction and start the next one; a producer that cannot abort (fenced,
        or failed for good), or whose sequence state broke (`renew`: see `_PRODUCER_STATE_ERRORS`), is
        replaced: the new one's InitProducerId aborts the open transaction and starts a new epoch."""
        sender = self._sender
        producer = sender.producer
        sender.forget()
        self._sent_at_commit = sender.sent
        if producer is None:
            return
        if renew:
            log.info("transactional producer %s replaced: its sequence numbers no longer match the broker's",
                     self._transactional_id)
        else:
            try:
                with anyio.fail_after(10):
                    await producer.abort_transaction()
                    await producer.begin_transaction()
                return
            except Exception as exc:
                log.info("transactional producer %s replaced after %s: %s", self._transactional_id,
                         type(exc).__name__, exc)
        sender.producer = None
        with anyio.move_on_after(10, shield=True):
            await stop_client(producer)
        try:
            await self._start_producer()
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            # The cluster is away. This must not fail the member (the commit that called this is
            # failing its tasks already): the producer starts again when the next task opens, after
            # the rejoin, where the group consumer waits for the cluster too.
            log.warning("transactional producer %s cannot be restarted while the cluster is unreachable "
                        "(%s); it restarts with the next assignment", self._transactional_id, exc)

    async def close_task(self, task_id: str, clean: bool) -> Offsets:
        self._open.discard(task_id)
        self._tainted.discard(task_id)
        if clean:
            return await self._sender.flush()
        if self._sender.sent != self._sent_at_commit:
            # The task's output is somewhere in the open transaction, mixed with its neighbours':
            # only aborting all of it removes the task's share, so the neighbours lose theirs too.
            await self._abort()
            self._tainted |= self._open
        return {}

    async def stop(self) -> None:
        producer, self._sender.producer = self._sender.producer, None
        self._open.clear()
        if producer is None:
            return
        try:
            self._sender.forget()
            with anyio.move_on_after(10):
                await producer.abort_transaction()
        except Exception as exc:  # a fenced or failed producer has nothing left to abort
            log.info("producer %s closed after %s: %s", self._transactional_id, type(exc).__name__, exc)
        finally:
            with anyio.move_on_after(10, shield=True):
                await stop_client(producer)

    @property
    def records_sent(self) -> int:
        return self._sender.sent

    @property
    def records_dropped(self) -> int:
        return self._sender.dropped
