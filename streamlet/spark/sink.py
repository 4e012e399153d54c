"""Where a task's output goes: straight to Kafka from the task, with its timestamps and headers.

Spark's own Kafka sink cannot set record timestamps, which downstream stream time and windows need.
Handing the output to Spark as rows and sending it from a `foreachBatch` stage cost more than the
tasks' own work (rows built, turned into Arrow, pickled through the JVM into a second Python worker:
1-3 s per 4,000-record batch here), so each task sends its own output before its batch ends: an
idempotent aiokafka producer per Python worker process, kept between batches, fed through the asyncio
runtime's `RecordSender`, every record acknowledged before `handleInputRows` returns. Spark commits
the batch's state and offsets only after that, so a batch that fails is replayed from the checkpoint
and sent again: at-least-once.
"""

from __future__ import annotations

import asyncio
import atexit
from collections.abc import Mapping
from typing import Any

from streamlet.actors.error_handlers import skip_failed_productions
from streamlet.actors.record_collector import ProducedRecord
from streamlet.config import StreamsConfig
from streamlet.kafka.client_settings import ClientRole, client_kwargs, start_client
from streamlet.kafka.record_sender import RecordSender
from streamlet.kafka.topic_manager import await_sink_topics
from streamlet.spark.plan import settings_key

Drained = Mapping[tuple[str, int], list[ProducedRecord]]


class _Sender:
    """One producer on its own event loop, driven synchronously (the Python worker has no loop). The
    records go through the asyncio runtime's `RecordSender` (aiokafka's batch API, one await per batch,
    and `production.exception.handler` applied as there)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self._loop = asyncio.new_event_loop()
        self._kwargs = {**client_kwargs(settings, ClientRole.PRODUCER), "acks": "all", "enable_idempotence": True}
        self._skip_failed = skip_failed_productions(StreamsConfig(settings))
        self._producer: Any = None
        self._sender: RecordSender | None = None

    async def _send(self, drained: Drained) -> None:
        from aiokafka import AIOKafkaProducer

        if self._sender is None:
            producer = AIOKafkaProducer(**self._kwargs)
            await start_client(producer, self._kwargs)
            self._producer = producer
            self._sender = RecordSender(producer, self._skip_failed)
        await self._sender.deliver(dict(drained))

    def send(self, drained: Drained) -> None:
        try:
            self._loop.run_until_complete(self._send(drained))
        except BaseException:
            self.close()  # a broken producer is not reused; the batch fails and is replayed
            raise

    def close(self) -> None:
        producer, self._producer, self._sender = self._producer, None, None
        if producer is not None:
            try:
                self._loop.run_until_complete(producer.stop())
            except Exception:  # already failing: the original error is what matters
                pass


_senders: dict[str, _Sender] = {}


def lookup_topics(settings: dict[str, Any], topics: set[str]) -> dict[str, int]:
    """Partition counts of topics a dynamically routed sink named (`to(TopicNameExtractor)`): they must
    exist; waited for up to 60 s as the asyncio runtime waits (see `await_sink_topics`)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(await_sink_topics(client_kwargs(settings, ClientRole.ADMIN), topics, 60.0))
    finally:
        loop.close()


@atexit.register
def _close_senders() -> None:
    """Stop the producers when the Python worker exits (everything sent was acknowledged already)."""
    for sender in _senders.values():
        sender.close()


def send_output(settings: dict[str, Any], drained: Drained) -> int:
    """Send a task's drained output and wait for every acknowledgement; returns the record count."""
    count = sum(len(records) for records in drained.values())
    if count:
        key = settings_key(settings)
        sender = _senders.get(key)
        if sender is None:
            sender = _senders[key] = _Sender(settings)
        sender.send(drained)
    return count


def run_batch(batch: Any, batch_id: int) -> None:
    """`foreachBatch`'s function: runs the batch (the tasks send their own output); one action only, as a
    second would compute the batch's state again."""
    batch.collect()
