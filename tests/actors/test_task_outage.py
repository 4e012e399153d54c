"""A `RetriableError` that escapes a task (a store's value serde cannot reach the schema registry, or output held
longer than the actor's `hold_limit_ms`) stops the actor without failing it when the runtime asked for revival
(`revive_on_outage`): the error is kept in `outage`, a commit waiting on it fails with it, and under at-least-once
what the task produced before is delivered. Without `revive_on_outage` (the test driver) the error fails the task."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_actor import Commit, TaskActor
from streamlet.config import StreamsConfig
from streamlet.errors import SchemaRegistryUnavailableError
from streamlet.serdes import Serde
from tests.actors.test_held_output import COUNTS, IN, OUT, Delivered, NeedsRegistry, _batch, _task, _until

pytestmark = pytest.mark.anyio


def _store_topology(serializer: NeedsRegistry, caching: bool) -> Topology:
    """Each record's latest value per key in a store whose value serde is `serializer`; every update to `out`."""
    builder = StreamsBuilder()
    (builder.stream(IN, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .group_by_key()
        .reduce(lambda _old, new: new, Materialized("latest", key_serde=Serdes.String(),
                                                    value_serde=Serde(serializer, Serdes.String().deserializer),
                                                    caching=caching))
        .to_stream().to(OUT, Produced(key_serde=Serdes.String(), value_serde=Serdes.String())))
    return builder.build()


def _store_task(tmp_path: Path, serializer: NeedsRegistry, caching: bool, exactly_once: bool) -> StreamTask:
    topology = _store_topology(serializer, caching)
    config = StreamsConfig({"application.id": "outage", "statestore.cache.max.bytes": 1_000_000 if caching else 0,
                            "processing.guarantee": "exactly_once_v2" if exactly_once else "at_least_once"})
    task = StreamTask(topology, topology.sub_topologies()[0], 0, config, RecordCollector(lambda _t: 1), tmp_path,
                      clock=lambda: 0, resolve_topic=lambda t: t, cache_bytes=1_000_000 if caching else 0)
    task.initialize_stores()
    task.initialize_processors()
    return task


async def test_a_store_write_without_the_registry_stops_the_actor_and_delivers_what_came_before(
        tmp_path: Path) -> None:
    serializer, delivered = NeedsRegistry(), Delivered()
    serializer.down = True
    actor = TaskActor(_store_task(tmp_path, serializer, caching=False, exactly_once=False), delivered)
    actor.revive_on_outage = True
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        await actor.post_records(IN, 0, _batch(["a", "b", "new-1", "c"]))
        await _until(actor.closed.is_set)
    assert isinstance(actor.outage, SchemaRegistryUnavailableError) and actor.error is None
    assert actor.task.consumed_offsets == {(IN, 0): 2}, "the failing record is not counted as processed"
    assert delivered.by_topic[OUT] == [b"a", b"b"], "at-least-once: what came before went out"


async def test_a_cached_store_fails_at_the_commit_and_the_commit_fails_with_the_outage(tmp_path: Path) -> None:
    serializer, delivered = NeedsRegistry(), Delivered()
    serializer.down = True
    actor = TaskActor(_store_task(tmp_path, serializer, caching=True, exactly_once=True), delivered)
    actor.revive_on_outage = True
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        await actor.post_records(IN, 0, _batch(["a", "new-1"]))
        await _until(lambda: actor.task.consumed_offsets.get((IN, 0)) == 2)  # the cache took both
        with pytest.raises(SchemaRegistryUnavailableError) as failure:
            await actor.request(Commit())
        await _until(actor.closed.is_set)
    assert actor.outage is failure.value
    assert any("flushed its cache" in note for note in failure.value.__notes__)
    assert delivered.by_topic == {}, "exactly-once: nothing of the aborted transaction is delivered"


async def test_without_revival_the_store_write_fails_the_task(tmp_path: Path) -> None:
    serializer, delivered = NeedsRegistry(), Delivered()
    serializer.down = True
    actor = TaskActor(_store_task(tmp_path, serializer, caching=False, exactly_once=True), delivered)
    with pytest.RaisesGroup(SchemaRegistryUnavailableError):
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.run)
            await actor.post_records(IN, 0, _batch(["new-1"]))
    assert actor.outage is None and isinstance(actor.error, SchemaRegistryUnavailableError)


async def test_held_output_gives_up_at_the_hold_limit(tmp_path: Path) -> None:
    serializer, handled, delivered = NeedsRegistry(), [], Delivered()
    serializer.down = True
    actor = TaskActor(_task(tmp_path, serializer, handled), delivered)  # task.timeout.ms 60 s
    actor.revive_on_outage = True
    actor.hold_limit_ms = 200
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        await actor.post_records(IN, 0, _batch(["a", "new-1", "b"]))
        await _until(actor.closed.is_set)
    assert isinstance(actor.outage, SchemaRegistryUnavailableError)
    assert any("output held 200 ms" in note for note in actor.outage.__notes__)
    assert serializer.attempts >= 2, "retried until the limit"
    assert actor.outage_since > 0, "the outage began when the hold did"
    assert COUNTS not in delivered.by_topic and handled == []
