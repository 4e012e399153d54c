"""`ExactlyOnceBatch` without Kafka: what a task skips, what it commits, when its Spark state is behind,
where its Spark state stands afterwards, and the injected mid-batch failure (over a recording stand-in
for the task's transactions)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from streamlet.actors.partition_group import RawRecord
from streamlet.actors.record_collector import ProducedRecord
from streamlet.actors.task_progress import TaskProgress
from streamlet.dsl import Consumed, Produced, StreamsBuilder
from streamlet.kafka.commit_metadata import TopicPartitionMetadata
from streamlet.serdes import Serdes
from streamlet.spark.exactly_once import FAIL_ONCE_KEY, ExactlyOnceBatch, InjectedTaskFailure, SparkPosition
from streamlet.spark.grouping import task_keys
from streamlet.spark.plan import SubTopologyPlan
from streamlet.spark.transactions import Committed, Drained, Offsets

S = Serdes.String()


class _Recorded:
    """Stands in for `TaskTransactions`: answers `begin` with `committed`, records the rest."""

    def __init__(self, committed: Committed) -> None:
        self._committed = committed
        self.calls: list[tuple[str, Any]] = []

    def begin(self, partitions: Iterable[tuple[str, int]]) -> Committed:
        self.calls.append(("begin", sorted(partitions)))
        return self._committed

    def send(self, drained: Drained) -> Offsets:
        self.calls.append(("send", {k: len(v) for k, v in drained.items()}))
        return {k: 100 + len(v) for k, v in drained.items()}

    def commit(self, offsets: Offsets, metadata: dict[tuple[str, int], str]) -> None:
        self.calls.append(("commit", (offsets, metadata)))

    def drop(self) -> None:
        self.calls.append(("drop", None))


def _plan(settings: dict[str, Any] | None = None) -> SubTopologyPlan:
    builder = StreamsBuilder()
    builder.stream("a", Consumed(S, S)).merge(builder.stream("b", Consumed(S, S))).to("out", Produced(S, S))
    topology = builder.build()
    plan = SubTopologyPlan(topology, 0, {"application.id": "eos-batch", "processing.guarantee": "exactly_once_v2",
                                         **(settings or {})}, {"a": 2, "b": 2, "out": 2}, task_keys(2))
    plan.source_topics = ["a", "b"]
    return plan


def _records(topic: str, offsets: range) -> list[RawRecord]:
    return [RawRecord(topic, 1, o, 1000 + o, b"k", b"v", ()) for o in offsets]


def _batch(committed: dict[tuple[str, int], int | None], metadata: dict[tuple[str, int], str] | None = None,
           settings: dict[str, Any] | None = None) -> tuple[ExactlyOnceBatch, _Recorded]:
    txn = _Recorded(Committed(committed, metadata or {}))
    return ExactlyOnceBatch(_plan(settings), 1, txn), txn  # type: ignore[arg-type]


def test_input_below_the_committed_offsets_is_skipped() -> None:
    batch, txn = _batch({("a", 1): 5, ("b", 1): None})
    assert txn.calls == [("begin", [("a", 1), ("b", 1)])]
    kept = batch.unprocessed({("a", 1): _records("a", range(3, 8)), ("b", 1): _records("b", range(0, 2))})
    assert [r.offset for r in kept[("a", 1)]] == [5, 6, 7]
    assert [r.offset for r in kept[("b", 1)]] == [0, 1]
    replayed = batch.unprocessed({("a", 1): _records("a", range(0, 5))})
    assert replayed == {}


def test_commit_sends_then_commits_the_next_offsets_with_the_progress() -> None:
    batch, txn = _batch({("a", 1): 5, ("b", 1): 9})
    drained = {("out", 0): [ProducedRecord(b"k", b"v", 1, ())] * 3}
    progress = TaskProgress(stream_time=7, partition_times={"a:1": 7, "b:1": 3}, processor_metadata={"s": 6})
    acked = batch.commit(drained, {("a", 1): 8}, progress)
    # "b" consumed nothing now: its committed offset is committed again, not dropped.
    assert txn.calls[1] == ("send", {("out", 0): 3})
    (name, (offsets, metadata)) = txn.calls[2]
    assert (name, offsets) == ("commit", {("a", 1): 8, ("b", 1): 9})
    assert {tp: TopicPartitionMetadata.decode(m).partition_time for tp, m in metadata.items()} == {
        ("a", 1): 7, ("b", 1): 3}  # Kafka Streams' metadata: each partition's time
    assert acked == {("out", 0): 103}


def test_progress_too_long_for_offset_metadata_keeps_kafka_streams_part() -> None:
    batch, txn = _batch({("a", 1): 5, ("b", 1): None})
    progress = TaskProgress(stream_time=7, partition_times={"a:1": 7}, processor_metadata={"s": 6},
                            wall_punctuations=list(range(400)))
    batch.commit({}, {}, progress)
    (_, (offsets, metadata)) = txn.calls[-1]
    assert offsets == {("a", 1): 5}
    assert len(metadata[("a", 1)]) <= 4096
    assert TopicPartitionMetadata.decode(metadata[("a", 1)]) == TopicPartitionMetadata(7, {"s": 6})


def test_spark_state_is_behind_when_kafka_committed_past_it() -> None:
    batch, _ = _batch({("a", 1): 5, ("b", 1): None})
    assert batch.behind(SparkPosition())  # fresh Spark state, offsets committed elsewhere: restore
    assert batch.behind(SparkPosition({"a:1": 4}))
    assert not batch.behind(SparkPosition({"a:1": 5}))
    nothing, _ = _batch({("a", 1): None, ("b", 1): None})
    assert not nothing.behind(SparkPosition())


def test_position_after_keeps_the_furthest_changelog_end() -> None:
    batch, _ = _batch({("a", 1): 5, ("b", 1): 2})
    before = SparkPosition({"a:1": 5, "b:1": 2}, {"app-s-changelog:1": 40, "app-t-changelog:1": 7})
    after = batch.position_after(before, {("a", 1): 9}, {("app-s-changelog", 1): 52, ("out", 0): 3},
                                 [("app-s-changelog", 1), ("app-t-changelog", 1)])
    assert after == SparkPosition({"a:1": 9, "b:1": 2}, {"app-s-changelog:1": 52, "app-t-changelog:1": 7})
    assert SparkPosition.from_bytes(after.to_bytes()) == after
    assert SparkPosition.from_bytes(None) == SparkPosition()


def test_injected_failure_sends_part_of_the_output_then_fails_once(tmp_path: Path) -> None:
    marker = tmp_path / "failed"
    drained = {("out", 0): [ProducedRecord(b"k", b"v", 1, ())] * 4, ("out", 1): [ProducedRecord(b"k", b"v", 1, ())]}
    batch, txn = _batch({("a", 1): 5, ("b", 1): None}, settings={FAIL_ONCE_KEY: str(marker)})
    with pytest.raises(InjectedTaskFailure):
        batch.commit(drained, {("a", 1): 6}, TaskProgress())
    assert marker.exists()
    assert txn.calls[1:] == [("send", {("out", 0): 2})]  # part of the output, and no commit
    again, txn = _batch({("a", 1): 5, ("b", 1): None}, settings={FAIL_ONCE_KEY: str(marker)})
    again.commit(drained, {("a", 1): 6}, TaskProgress())
    assert [c[0] for c in txn.calls] == ["begin", "send", "commit"]
