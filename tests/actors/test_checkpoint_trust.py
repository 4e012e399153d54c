"""What a task's local state is trusted with across a restart (found by the restart suite, tests/fidelity_restart).

A checkpoint vouches only for stores that keep their content on disk (case in-memory-store-close).

An in-memory store is empty whenever its task opens it, so after a clean restart its changelog must be read
from the start: Kafka Streams writes persistent stores' offsets only into its checkpoint file. streamlet wrote
every logged store's offset there, restored the in-memory count from that offset on, i.e. nothing, and counted
from 0 again after a restart (Kafka Streams 4.4.0: a, a, a -> 1, 2, 3 across the restart; streamlet 1, 2, 1).

A persistent store without changelog survives a restart (case unlogged-store-close): nothing could rebuild it, and
Kafka Streams keeps its local files across a clean close, which now always writes a checkpoint, empty or not.
streamlet wiped every task directory without checkpoint entries, i.e. always such a store (Kafka Streams 4.4.0:
"1234" then "12349" after the restart; streamlet "9").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.actors.partition_group import RawRecord
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.config import StreamsConfig
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.runtime.task_manager import new_runtime_task
from streamlet.stores import Stores

IN, OUT, APP = "in", "out", "ckpt-test"
S = Serdes.String()


def _topology() -> Topology:
    builder = StreamsBuilder()
    grouped = builder.stream(IN, Consumed(S, S)).group_by_key()
    for supplier in (Stores.in_memory_key_value_store("mem"), Stores.persistent_key_value_store("disk")):
        grouped.count(Materialized(supplier)).to_stream().to(OUT, Produced(S, Serdes.Long()))
    return builder.build()


def _task(state_root: Path) -> StreamTask:
    topology = _topology()
    config = StreamsConfig({"application.id": APP, "default.key.serde": "String", "default.value.serde": "String",
                            "statestore.cache.max.bytes": 0})
    (sub,) = topology.sub_topologies()
    task = StreamTask(topology, sub, 0, config, RecordCollector(lambda _t: 1), state_root, clock=lambda: 0,
                      resolve_topic=lambda t: t, cache_bytes=0)
    task.initialize_stores()
    task.initialize_processors()
    return task


MEM, DISK = f"{APP}-mem-changelog:0", f"{APP}-disk-changelog:0"


def test_a_clean_close_checkpoints_the_persistent_store_only(tmp_path: Path) -> None:
    task = _task(tmp_path)
    task.add_records(IN, 0, [RawRecord(IN, 0, i, 10 * i, S.serializer.serialize(IN, "a"), b"v") for i in range(2)])
    task.process()
    task.prepare_commit()
    task.post_commit({(f"{APP}-mem-changelog", 0): 2, (f"{APP}-disk-changelog", 0): 2}, enforce=True)
    task.close(clean=True)

    again = _task(tmp_path)
    assert again.state.read_checkpoint() == {DISK: 2}
    assert again.state.restore_starts() == {DISK: 2}  # the in-memory store's changelog: from its start
    again.close(clean=True)


def test_an_older_checkpoint_entry_for_an_in_memory_store_is_not_trusted(tmp_path: Path) -> None:
    task = _task(tmp_path)
    task.state.write_checkpoint({MEM: 2, DISK: 2})  # as streamlet wrote it before
    assert task.state.restore_starts() == {DISK: 2}
    task.state.maybe_checkpoint({MEM: 5, DISK: 5}, enforce=True)
    assert task.state.read_checkpoint() == {DISK: 5}
    task.close(clean=True)


class _Running(Processor):
    """Appends each value to the key's text in an unlogged store and forwards the text."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store: Any = context.get_state_store("texts")

    def process(self, record: Record) -> None:
        text = (self._store.get(record.key) or "") + record.value
        self._store.put(record.key, text)
        self.context.forward(record.with_value(text))


def _unlogged_topology(logged_too: bool) -> Topology:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("texts"), S, S)
                            .with_logging_disabled())
    stream = builder.stream(IN, Consumed(S, S))
    stream.process(_Running, "texts").to(OUT, Produced(S, S))
    if logged_too:
        stream.group_by_key().count(Materialized(Stores.persistent_key_value_store("disk")))
    return builder.build()


def _runtime_task(topology: Topology, state_root: Path) -> StreamTask:
    config = StreamsConfig({"application.id": APP, "default.key.serde": "String", "default.value.serde": "String",
                            "statestore.cache.max.bytes": 0, "processing.guarantee": "exactly_once_v2"})
    (sub,) = topology.sub_topologies()
    task = new_runtime_task(topology, sub, 0, config, state_root, lambda t: t, lambda _t: 1, 0)
    task.initialize_stores()
    task.initialize_processors()
    return task


def _texts(task: StreamTask, values: list[str], first_offset: int) -> list[str]:
    key = S.serializer.serialize(IN, "a")
    task.add_records(IN, 0, [RawRecord(IN, 0, first_offset + i, 10 * (first_offset + i), key, v.encode())
                             for i, v in enumerate(values)])
    task.process()
    task.prepare_commit()
    return [r.value.decode() for r in task.collector.drain().get((OUT, 0), []) if r.value is not None]


def test_an_unlogged_persistent_store_survives_a_clean_restart(tmp_path: Path) -> None:
    topology = _unlogged_topology(logged_too=False)
    task = _runtime_task(topology, tmp_path)
    assert _texts(task, ["1", "2", "3", "4"], 0)[-1] == "1234"
    task.post_commit({}, enforce=True)  # the clean close's commit: nothing change-logged
    task.close(clean=True)

    again = _runtime_task(topology, tmp_path)
    assert _texts(again, ["9"], 4) == ["12349"]
    again.close(clean=True)


def test_after_a_crash_local_state_without_checkpoint_is_wiped(tmp_path: Path) -> None:
    """No checkpoint file (a kill -9; under exactly-once the one a task finds is deleted as it starts): the
    task's local state is not trusted, an unlogged store included (Kafka Streams' came back without the run's
    updates after a kill -9 under exactly-once in the restart suite, case 4242-38)."""
    for logged_too in (False, True):
        topology = _unlogged_topology(logged_too)
        root = tmp_path / str(logged_too)
        task = _runtime_task(topology, root)
        _texts(task, ["1", "2", "3", "4"], 0)
        task.close(clean=False)

        again = _runtime_task(topology, root)
        assert _texts(again, ["9"], 4) == ["9"]
        again.close(clean=True)
