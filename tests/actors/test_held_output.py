"""A record a sink cannot serialize because the schema registry cannot be reached (a `RetriableError`, no
record's fault) is held where it was produced, never handed to the production handler; the task stops taking
records, its owner (`TaskActor`) waits with a growing backoff and serializes it again before any output goes
on or any commit is answered, then the task goes on: every output once, in order; after `task.timeout.ms`
the error fails the task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.actors.partition_group import RawRecord
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_actor import Commit, Drained, TaskActor
from streamlet.config import StreamsConfig
from streamlet.error_handling import Response
from streamlet.errors import SchemaRegistryUnavailableError
from streamlet.serdes import Serde, Serializer

pytestmark = pytest.mark.anyio

IN, OUT, COUNTS = "in", "out", "counts"


class NeedsRegistry(Serializer[str]):
    """Serializes text; a value starting with "new" needs the registry, which is down while `down`."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.attempts = 0

    def serialize(self, topic: str | None, data: str | None) -> bytes | None:
        if data is not None and data.startswith("new"):
            self.attempts += 1
            if self.down:
                raise SchemaRegistryUnavailableError("the schema registry at http://127.0.0.1:1 cannot be reached")
        return None if data is None else data.encode()


def _topology(serializer: NeedsRegistry) -> Topology:
    """Each record to `out` through `serializer`, and counted per key (a store, its changelog, `counts`)."""
    builder = StreamsBuilder()
    stream = builder.stream(IN, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
    stream.to(OUT, Produced(key_serde=Serdes.String(),
                            value_serde=Serde(serializer, Serdes.String().deserializer)))
    (stream.group_by_key().count(Materialized("counted"))
        .to_stream().to(COUNTS, Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    return builder.build()


def _task(tmp_path: Path, serializer: NeedsRegistry, handled: list[Any], timeout_ms: int = 60_000) -> StreamTask:
    topology = _topology(serializer)
    sub = topology.sub_topologies()[0]
    config = StreamsConfig({
        "application.id": "held-output", "schema.registry.retry.backoff.ms": 20,
        "schema.registry.retry.backoff.max.ms": 80, "task.timeout.ms": timeout_ms,
        "production.exception.handler": lambda ctx, record, exc: handled.append(exc) or Response.resume()})
    task = StreamTask(topology, sub, 0, config, RecordCollector(lambda _t: 1), tmp_path, clock=lambda: 0,
                      resolve_topic=lambda t: t, cache_bytes=0)
    task.initialize_stores()
    task.initialize_processors()
    return task


def _batch(values: list[str], first: int = 0) -> list[RawRecord]:
    return [RawRecord(IN, 0, first + i, 1_000 + first + i, b"k", v.encode()) for i, v in enumerate(values)]


class Delivered:
    def __init__(self) -> None:
        self.by_topic: dict[str, list[bytes | None]] = {}

    async def __call__(self, drained: Drained) -> None:
        for (topic, _partition), records in drained.items():
            self.by_topic.setdefault(topic, []).extend(r.value for r in records)


async def _until(condition: Any, seconds: float = 10) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.01)


async def test_a_held_record_waits_for_the_registry_and_every_output_goes_once_in_order(tmp_path: Path) -> None:
    serializer, handled, delivered = NeedsRegistry(), [], Delivered()
    serializer.down = True
    actor = TaskActor(_task(tmp_path, serializer, handled), delivered)
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        await actor.post_records(IN, 0, _batch(["a", "b", "new-1", "c", "new-2"]))
        await _until(lambda: serializer.attempts >= 4)  # retried, waiting longer each time
        assert delivered.by_topic == {}, "nothing goes on while a record is held: not even what came before it"
        assert actor.task.consumed_offsets == {(IN, 0): 3}, "the task stopped after the held record"
        assert actor.task.buffered == 2
        serializer.down = False
        await _until(lambda: actor.task.consumed_offsets.get((IN, 0)) == 5)
        await _until(lambda: len(delivered.by_topic.get(OUT, [])) == 5)
        await actor.stop()
    assert delivered.by_topic[OUT] == [b"a", b"b", b"new-1", b"c", b"new-2"]
    counts = [Serdes.Long().deserializer.deserialize(COUNTS, v) for v in delivered.by_topic[COUNTS]]
    assert counts == [1, 2, 3, 4, 5], "each record counted once: the held one was not processed again"
    changelog = next(topic for topic in delivered.by_topic if topic.endswith("-changelog"))
    assert len(delivered.by_topic[changelog]) == 5
    assert handled == [] and actor.error is None


async def test_a_commit_during_the_outage_is_answered_once_the_held_record_went_out(tmp_path: Path) -> None:
    serializer, handled, delivered = NeedsRegistry(), [], Delivered()
    actor = TaskActor(_task(tmp_path, serializer, handled), delivered)
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        await actor.post_records(IN, 0, _batch(["a"]))
        await _until(lambda: actor.task.consumed_offsets.get((IN, 0)) == 1)
        assert await actor.request(Commit()) == {(IN, 0): 1}
        serializer.down = True
        await actor.post_records(IN, 0, _batch(["new-1", "b"], first=1))
        await _until(lambda: actor.task.held_output is not None)
        answered: dict[tuple[str, int], int] = {}

        async def commit() -> None:
            answered.update(await actor.request(Commit()))

        tg.start_soon(commit)
        await _until(lambda: serializer.attempts >= 3)
        assert not answered, "no commit while a record's output is held"
        serializer.down = False
        await _until(lambda: bool(answered))
        assert delivered.by_topic[OUT][:2] == [b"a", b"new-1"], "the commit covers the held record's output"
        assert answered[(IN, 0)] >= 2
        await _until(lambda: actor.task.consumed_offsets.get((IN, 0)) == 3)
        await actor.stop()
    assert handled == []


async def test_the_outage_fails_the_task_after_task_timeout(tmp_path: Path) -> None:
    serializer, handled, delivered = NeedsRegistry(), [], Delivered()
    serializer.down = True
    actor = TaskActor(_task(tmp_path, serializer, handled, timeout_ms=300), delivered)
    with pytest.RaisesGroup(SchemaRegistryUnavailableError) as failure:
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.run)
            await actor.post_records(IN, 0, _batch(["new-1"]))
    error = failure.value.exceptions[0]
    assert any("task.timeout.ms (300 ms)" in note for note in error.__notes__)
    assert serializer.attempts >= 3, "retried until then"
    assert handled == [] and delivered.by_topic == {}


async def test_a_held_record_the_registry_then_refuses_goes_to_the_production_handler(tmp_path: Path) -> None:
    class Refusing(NeedsRegistry):
        def serialize(self, topic: str | None, data: str | None) -> bytes | None:
            if data == "new-bad" and not self.down:
                raise ValueError("the value does not fit the schema")
            return super().serialize(topic, data)

    serializer, handled, delivered = Refusing(), [], Delivered()
    serializer.down = True
    actor = TaskActor(_task(tmp_path, serializer, handled), delivered)
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        await actor.post_records(IN, 0, _batch(["a", "new-bad", "b"]))
        await _until(lambda: serializer.attempts >= 2)
        serializer.down = False
        await _until(lambda: len(delivered.by_topic.get(COUNTS, [])) == 3)
        await actor.stop()
    assert delivered.by_topic[OUT] == [b"a", b"b"], "dropped by the handler, which resumed"
    assert len(handled) == 1 and "does not fit" in str(handled[0])
