"""A task's checkpoint vouches only for stores that keep their content on disk (found by the restart suite,
tests/fidelity_restart, case in-memory-store-close).

An in-memory store is empty whenever its task opens it, so after a clean restart its changelog must be read
from the start: Kafka Streams writes persistent stores' offsets only into its checkpoint file. streamlet wrote
every logged store's offset there, restored the in-memory count from that offset on, i.e. nothing, and counted
from 0 again after a restart (Kafka Streams 4.4.0: a, a, a -> 1, 2, 3 across the restart; streamlet 1, 2, 1).
"""

from __future__ import annotations

from pathlib import Path

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.actors.partition_group import RawRecord
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.config import StreamsConfig
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
