"""How a task's output and its consumed offsets become durable: the one place a commit happens.

Two protocols behind one interface, chosen by `processing.guarantee`:

`AtLeastOnceCommits` — one idempotent producer shared by every task. A commit waits until everything
produced is acknowledged, then commits the consumed offsets through the consumer. A crash between the
two replays input (duplicates, never loss).

`ExactlyOnceCommits` — one transactional producer per task, `transactional.id = <application.id>-<task
id>`, as Kafka Streams' original `exactly_once` did. Why not one producer per process, as EOS v2 does:
aiokafka speaks only v0 of TxnOffsetCommit, which carries no group generation, so a process that lost
its partitions while alive (a stalled event loop is enough) could still commit. With a producer per
task, the task's next owner starts a producer with the same transactional id, which bumps the epoch
and fences the old owner: its open transaction is aborted and its next commit fails. Each commit puts
the task's sink, repartition and changelog records and its consumed offsets into one transaction.

A failed exactly-once commit is never retried: the caller closes the tasks dirty and rejoins the group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anyio
from aiokafka import AIOKafkaProducer, TopicPartition

from streamlet.runtime.record_sender import RecordSender

log = logging.getLogger(__name__)

Offsets = dict[tuple[str, int], int]


class CommitFailed(Exception):
    """A commit did not happen; under exactly-once the tasks' uncommitted work must be thrown away."""

    def __init__(self, message: str, task_ids: list[str]) -> None:
        super().__init__(message)
        self.task_ids = task_ids


class CommitProtocol(Protocol):
    async def open_task(self, task_id: str) -> RecordSender:
        """The sender a new task writes through (under exactly-once this fences the task's old owner)."""

    async def commit(self, offsets_by_task: Mapping[str, Offsets]) -> Offsets:
        """Make every task's output and offsets durable; returns acknowledged output offsets."""

    async def close_task(self, task_id: str, clean: bool) -> Offsets:
        """Release the task's sender; a clean close has committed first, a dirty one aborts."""

    async def stop(self) -> None:
        """Release everything (after every task was closed)."""

    @property
    def records_sent(self) -> int: ...

    @property
    def records_dropped(self) -> int: ...


class AtLeastOnceCommits:
    def __init__(self, producer: Any, commit_offsets: Callable[[Offsets], Any], skip_failed: bool = False) -> None:
        self._sender = RecordSender(producer, skip_failed)
        self._commit_offsets = commit_offsets

    async def open_task(self, task_id: str) -> RecordSender:
        return self._sender

    async def commit(self, offsets_by_task: Mapping[str, Offsets]) -> Offsets:
        acked = await self._sender.flush()
        offsets: Offsets = {}
        for o in offsets_by_task.values():
            offsets.update(o)
        if offsets:
            await self._commit_offsets(offsets)
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
    def __init__(self, application_id: str, producer_config: dict[str, Any], transaction_timeout_ms: int,
                 skip_failed: bool = False) -> None:
        self._app_id = application_id
        self._skip_failed = skip_failed
        self._producer_config = producer_config
        self._txn_timeout_ms = transaction_timeout_ms
        self._senders: dict[str, RecordSender] = {}
        self._committed: dict[str, Offsets] = {}
        self._sent_at_commit: dict[str, int] = {}
        self._closed_sent = 0
        self._closed_dropped = 0

    def transactional_id(self, task_id: str) -> str:
        return f"{self._app_id}-{task_id}"

    async def open_task(self, task_id: str) -> RecordSender:
        if task_id in self._senders:
            await self.close_task(task_id, clean=False)
        producer = AIOKafkaProducer(**self._producer_config, transactional_id=self.transactional_id(task_id),
                                    transaction_timeout_ms=self._txn_timeout_ms)
        await producer.start()
        try:
            # Waits for the producer id: InitProducerId has bumped the epoch, so the previous owner of
            # this transactional id is fenced and its open transaction aborted before we read anything.
            await producer.begin_transaction()
        except BaseException:
            await producer.stop()
            raise
        sender = RecordSender(producer, self._skip_failed, transactional=True)
        self._senders[task_id] = sender
        self._committed[task_id] = {}
        self._sent_at_commit[task_id] = 0
        return sender

    async def commit(self, offsets_by_task: Mapping[str, Offsets]) -> Offsets:
        acked: Offsets = {}
        errors: list[str] = []
        failed: list[str] = []

        async def one(task_id: str, offsets: Offsets) -> None:
            try:
                acked.update(await self._commit_one(task_id, offsets))
            except Exception as exc:  # every failure means the same: throw the work away
                errors.append(f"task {task_id}: {type(exc).__name__}: {exc}")
                failed.append(task_id)

        async with anyio.create_task_group() as tg:
            for task_id, offsets in offsets_by_task.items():
                tg.start_soon(one, task_id, offsets)
        if errors:
            raise CommitFailed("transactional commit failed: " + "; ".join(errors[:5]), sorted(failed))
        return acked

    async def _commit_one(self, task_id: str, offsets: Offsets) -> Offsets:
        sender = self._senders[task_id]
        new_offsets = {tp: o for tp, o in offsets.items() if self._committed[task_id].get(tp) != o}
        if not new_offsets and sender.sent == self._sent_at_commit[task_id]:
            return {}  # nothing since the last commit: keep the (empty) transaction open
        acked = await sender.flush()
        producer = sender.producer
        if new_offsets:
            await producer.send_offsets_to_transaction(
                {TopicPartition(t, p): o for (t, p), o in new_offsets.items()}, self._app_id)
        await producer.commit_transaction()
        self._committed[task_id].update(new_offsets)
        self._sent_at_commit[task_id] = sender.sent
        await producer.begin_transaction()
        return acked

    async def close_task(self, task_id: str, clean: bool) -> Offsets:
        sender = self._senders.pop(task_id, None)
        self._committed.pop(task_id, None)
        self._sent_at_commit.pop(task_id, None)
        if sender is None:
            return {}
        self._closed_sent += sender.sent
        self._closed_dropped += sender.dropped
        acked: Offsets = {}
        try:
            if clean:
                acked = await sender.flush()
            else:
                sender.forget()
                with anyio.move_on_after(10):
                    await sender.producer.abort_transaction()
        except Exception as exc:  # a fenced or failed producer has nothing left to abort
            log.info("task %s: producer closed after %s: %s", task_id, type(exc).__name__, exc)
        finally:
            with anyio.move_on_after(10, shield=True):
                await sender.producer.stop()
        return acked

    async def stop(self) -> None:
        for task_id in list(self._senders):
            await self.close_task(task_id, clean=False)

    @property
    def records_sent(self) -> int:
        return self._closed_sent + sum(s.sent for s in self._senders.values())

    @property
    def records_dropped(self) -> int:
        return self._closed_dropped + sum(s.dropped for s in self._senders.values())
