"""Per-task Kafka transactions for the Spark engine under `processing.guarantee=exactly_once_v2`.

Spark's own Kafka sink is at-least-once, and Spark commits a micro-batch (its state, its offsets log)
only after every task of it returned. Under exactly-once each task therefore makes its batch durable
in Kafka itself, before it returns: one transaction holding its sink, repartition and changelog
records and its consumed input offsets, committed to the group `application.id` as the asyncio
runtime commits them. Kafka's committed offsets are then the truth: a batch Spark replays (the driver
died after the transaction but before Spark's commit) finds its input already committed and skips it.

One transactional producer per task and batch, with
`transactional.id = <application.id>-spark-<subtopology>_<partition>`. Python workers are not pinned
to tasks, and any of them may run a task's next batch or a retry of it, so each batch starts its own
producer (InitProducerId): the epoch bump aborts whatever an older attempt
left open and fences an older producer still alive elsewhere (a straggler, a speculative copy), which
then cannot commit after the newer one; and only after that are the committed offsets read (waiting
until none is pending), so a retry of a batch that did commit sees it. Keeping one producer per worker
instead made two workers that took turns at a task fence each other's producer at every turn (a failed
task each time), and let a retry in the same worker read offsets before its own commit had settled.
A producer that failed in any way is dropped without aborting; the next one's start aborts what it left.

The commit sequence is the asyncio runtime's (`kafka.transactions`: start and begin, acknowledgements,
offsets with their metadata, commit); `TaskTransactions` says where and why it differs from the runtime's.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streamlet.actors.record_collector import ProducedRecord
from streamlet.kafka.client_settings import ClientRole, client_kwargs, start_client, stop_client
from streamlet.kafka.fenced_offsets import fetch_stable_commits
from streamlet.kafka.record_sender import RecordSender
from streamlet.kafka.transactions import commit_transaction, start_transactional, with_metadata
from streamlet.spark.plan import settings_key

log = logging.getLogger(__name__)

Offsets = dict[tuple[str, int], int]
Drained = Mapping[tuple[str, int], list[ProducedRecord]]


def transactional_id(application_id: str, subtopology: int, partition: int) -> str:
    return f"{application_id}-spark-{subtopology}_{partition}"


@dataclass(frozen=True)
class Committed:
    """What Kafka holds for a task's input partitions: the group's committed offsets (None: nothing
    committed) and the metadata committed with them (see `commit_progress`)."""

    offsets: dict[tuple[str, int], int | None]
    metadata: dict[tuple[str, int], str]


class _Group:
    """A consumer of the group `application.id` that never joins it: only reads its committed offsets."""

    def __init__(self, settings: dict[str, Any], loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._kwargs = {**client_kwargs(settings, ClientRole.MAIN_CONSUMER), "group_id": settings["application.id"],
                        "enable_auto_commit": False}
        self._consumer: Any = None

    async def committed(self, partitions: list[tuple[str, int]], wait_stable_s: float) -> Committed:
        """The committed offsets and their metadata, read once no transaction holds pending offsets for
        them (waiting at most `wait_stable_s`)."""
        from aiokafka import AIOKafkaConsumer

        if self._consumer is None:
            consumer = AIOKafkaConsumer(**self._kwargs)
            await start_client(consumer, self._kwargs)
            self._consumer = consumer
        found = await fetch_stable_commits(self._consumer, partitions, wait_stable_s)
        offsets: dict[tuple[str, int], int | None] = {}
        metadata: dict[tuple[str, int], str] = {}
        for tp in partitions:
            offset, text = found.get(tp, (None, ""))
            offsets[tp] = offset
            if offset is not None:
                metadata[tp] = text
        return Committed(offsets, metadata)

    async def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await stop_client(consumer)


class TaskTransactions:
    """One task's transactional producer, on its own event loop, driven synchronously (the Python
    worker has no loop). Use: `begin` (returns what Kafka has committed), `send`, then `commit` or `drop`.

    It runs the Kafka layer's commit sequence (`kafka.transactions`) as the asyncio runtime does, and
    differs where a producer per task and batch must (see the module docstring): the producer is closed
    after the commit instead of beginning the next transaction; a failure drops it without aborting,
    since any worker may run the task's next attempt and the next producer's start aborts what this one
    left; and the offsets carry no group membership, since Spark's tasks never join the group (the
    producer's epoch, bumped by every batch's new producer, is what fences an older attempt)."""

    def __init__(self, settings: dict[str, Any], txn_id: str, group: _Group, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._app_id = str(settings["application.id"])
        self._txn_id = txn_id
        self._timeout_ms = int(settings.get("transaction.timeout.ms") or 10000)
        self._kwargs = {**client_kwargs(settings, ClientRole.PRODUCER), "acks": "all", "enable_idempotence": True,
                        "transactional_id": txn_id, "transaction_timeout_ms": self._timeout_ms}
        self._group = group
        self._producer: Any = None
        self._sender: RecordSender | None = None

    def _run(self, step: Any) -> Any:
        try:
            return self._loop.run_until_complete(step)
        except BaseException:
            self.drop()
            raise

    async def _begin(self, partitions: list[tuple[str, int]]) -> Committed:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(**self._kwargs)
        # Waits for the producer id: the epoch bump aborts an older attempt's open transaction and
        # fences any older producer of this id, wherever it runs.
        await start_transactional(producer, lambda: start_client(producer, self._kwargs))
        self._producer = producer
        self._sender = RecordSender(producer, transactional=True)
        return await self._group.committed(partitions, self._timeout_ms / 1000 + 30)

    def begin(self, partitions: Iterable[tuple[str, int]]) -> Committed:
        """Start the batch's transaction with a new producer; returns the group's committed offsets (and
        their metadata) for the task's input partitions, read once no transaction can still change them."""
        self.drop()  # a producer left over by a batch that ended without commit or abort
        return self._run(self._begin(sorted(partitions)))

    async def _send(self, drained: Drained) -> Offsets:
        assert self._sender is not None
        return await self._sender.deliver(dict(drained))

    def send(self, drained: Drained) -> Offsets:
        """Send records in the open transaction and wait for their acknowledgements; returns, per
        partition written so far by this producer, the offset after its last acknowledged record."""
        if not any(drained.values()):
            return dict(self._sender.acked_offsets) if self._sender is not None else {}
        return self._run(self._send(drained))

    async def _commit(self, offsets: Offsets, metadata: Mapping[tuple[str, int], str]) -> None:
        assert self._sender is not None
        # `send` has had everything acknowledged already: the sequence's wait for acknowledgements is a no-op.
        await commit_transaction(self._sender, with_metadata(offsets, metadata), self._app_id)

    def commit(self, offsets: Offsets, metadata: Mapping[tuple[str, int], str]) -> None:
        """Add the task's next input offsets (each with its `metadata`), commit, and close the producer
        (the next batch starts a new one)."""
        self._run(self._commit(offsets, metadata))
        self.drop()

    def drop(self) -> None:
        """Forget the producer without aborting (after any failure): the next `begin` starts a new one,
        whose start aborts the open transaction and fences this one if it still lives."""
        producer, self._producer, self._sender = self._producer, None, None
        if producer is not None:
            try:
                self._loop.run_until_complete(stop_client(producer))
            except Exception as exc:  # already failing: the original error is what matters
                log.debug("closing a failed transactional producer %s: %s", self._txn_id, exc)


class _Worker:
    """The transactions of one Python worker process, per application settings."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.loop = asyncio.new_event_loop()
        self.settings = settings
        self.group = _Group(settings, self.loop)
        self.tasks: dict[str, TaskTransactions] = {}

    def close(self) -> None:
        for txn in self.tasks.values():
            txn.drop()
        try:
            self.loop.run_until_complete(self.group.close())
        except Exception:  # the worker is exiting
            pass


_workers: dict[str, _Worker] = {}


def task_transactions(settings: dict[str, Any], subtopology: int, partition: int) -> TaskTransactions:
    """This worker process's transactions of task `subtopology_partition` (made on first use)."""
    key = settings_key(settings)
    worker = _workers.get(key)
    if worker is None:
        worker = _workers[key] = _Worker(settings)
    txn_id = transactional_id(str(settings["application.id"]), subtopology, partition)
    txn = worker.tasks.get(txn_id)
    if txn is None:
        txn = worker.tasks[txn_id] = TaskTransactions(settings, txn_id, worker.group, worker.loop)
    return txn


@atexit.register
def _close_workers() -> None:
    for worker in _workers.values():
        worker.close()
