"""`max.task.idle.ms` > 0: a task reading several partitions waits up to that long (wall-clock) for an empty
partition whose fetch reached its end before going on without it, as Kafka Streams' `PartitionGroup` does;
-1: it never waits, not even for a partition whose records are still on the broker (on a real broker:
test_idle_disabled_broker.py).

Found by the restart suite (tests/fidelity_restart, case max-task-idle-no-restart): a stream re-keyed through a
repartition topic and joined with another topic; Kafka Streams, given 2000 ms, waited for the upstream task's
commit and joined in timestamp order, streamlet ignored the setting and joined the other topic's records first.
"""

from __future__ import annotations

from pathlib import Path

from streamlet import Consumed, Produced, Serdes, StreamsBuilder
from streamlet.actors.partition_group import RawRecord
from streamlet.actors.stream_task import StreamTask
from streamlet.config import StreamsConfig
from streamlet.runtime.task_manager import new_runtime_task

S = Serdes.String()
A, B = "a", "b"


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def _merge_task(state_root: Path, idle_ms: int, clock: _Clock, caught_up: bool = True) -> StreamTask:
    builder = StreamsBuilder()
    builder.stream(A, Consumed(S, S)).merge(builder.stream(B, Consumed(S, S))).to("out", Produced(S, S))
    topology = builder.build()
    config = StreamsConfig({"application.id": "idle-test", "max.task.idle.ms": idle_ms})
    (sub,) = topology.sub_topologies()
    task = new_runtime_task(topology, sub, 0, config, state_root, lambda t: t, lambda _t: 1, 0)
    task.clock = clock
    task.initialize_stores()
    task.initialize_processors()
    task.partition_group.expect([(A, 0), (B, 0)])  # as the runtime does when it seeks them
    for topic in (A, B):
        task.partition_group.set_caught_up(topic, 0, caught_up)  # True: both fetched to their end, empty
    return task


def _add(task: StreamTask, topic: str, offset: int, value: str, ts: int) -> None:
    task.add_records(topic, 0, [RawRecord(topic, 0, offset, ts, None, value.encode())])


def _out(task: StreamTask) -> list[str]:
    return [r.value.decode() for r in task.collector.drain().get(("out", 0), []) if r.value is not None]


def test_an_empty_partition_is_waited_for_until_the_idle_time_passed(tmp_path: Path) -> None:
    clock = _Clock()
    task = _merge_task(tmp_path, 2000, clock)
    _add(task, A, 0, "a30", 30)
    assert task.process() == 0
    assert task.partition_group.idle_deadline() == 3_000
    clock.now = 2_999
    assert task.process() == 0
    clock.now = 3_000
    assert task.process() == 1
    assert _out(task) == ["a30"]


def test_records_arriving_within_the_idle_time_are_merged_by_timestamp(tmp_path: Path) -> None:
    clock = _Clock()
    task = _merge_task(tmp_path, 2000, clock)
    _add(task, A, 0, "a30", 30)
    _add(task, A, 1, "a50", 50)
    assert task.process() == 0
    clock.now = 2_500
    _add(task, B, 0, "b40", 40)
    assert task.process() == 2  # a30, b40; then b is empty again and its clock starts anew
    assert task.partition_group.idle_deadline() == 4_500
    clock.now = 4_500
    assert task.process() == 1
    assert _out(task) == ["a30", "b40", "a50"]


def test_without_idle_time_an_empty_caught_up_partition_is_not_waited_for(tmp_path: Path) -> None:
    task = _merge_task(tmp_path, 0, _Clock())
    _add(task, A, 0, "a30", 30)
    assert task.process() == 1
    assert task.partition_group.idle_deadline() is None


def test_a_task_idle_longer_than_the_idle_time_does_not_wait_when_input_arrives(tmp_path: Path) -> None:
    """Kafka Streams looks at its partitions at every turn of its loop, records or not: the clocks of empty
    partitions start while the task has nothing to do, one after the other, and have run out when input comes
    after a long pause. The actor wakes the task at each deadline to see the same."""
    clock = _Clock()
    task = _merge_task(tmp_path, 2000, clock)
    assert task.process() == 0
    assert task.partition_group.idle_deadline() == 3_000  # the first empty partition's clock
    clock.now = 3_000
    assert task.process() == 0
    assert task.partition_group.idle_deadline() == 5_000  # then the second's
    clock.now = 5_000
    assert task.process() == 0
    assert task.partition_group.idle_deadline() is None
    clock.now = 60_000
    _add(task, A, 0, "a30", 30)
    assert task.process() == 1


def test_enforced_processing_counts_the_records_taken_without_an_empty_partition(tmp_path: Path) -> None:
    """Kafka Streams' enforced-processing count (recorded before every record its readiness check let go on
    without an empty partition), counted per run: a30 and b40 go with both partitions holding data, a50 only
    once b's clock ran out."""
    clock = _Clock()
    task = _merge_task(tmp_path, 2000, clock)
    task.partition_group.count_enforced = True  # as the metrics set it at DEBUG level
    _add(task, A, 0, "a30", 30)
    _add(task, A, 1, "a50", 50)
    clock.now = 2_500
    _add(task, B, 0, "b40", 40)
    assert task.process() == 2
    assert task.partition_group.enforced == 0
    clock.now = 4_500
    _add(task, A, 2, "a60", 60)
    assert task.process() == 2  # a50 and a60, one run
    assert task.partition_group.enforced == 2


def test_without_idle_time_every_record_taken_without_an_empty_partition_is_enforced(tmp_path: Path) -> None:
    task = _merge_task(tmp_path, 0, _Clock())
    task.partition_group.count_enforced = True
    _add(task, A, 0, "a30", 30)
    _add(task, A, 1, "a31", 31)
    assert task.process() == 2
    assert task.partition_group.enforced == 2
    _add(task, A, 2, "a32", 32)
    _add(task, B, 0, "b33", 33)
    assert task.process() == 2  # a32 with both holding data; then b33 with a empty again
    assert task.partition_group.enforced == 3


def test_enforced_processing_is_counted_only_when_asked(tmp_path: Path) -> None:
    task = _merge_task(tmp_path, 0, _Clock())
    _add(task, A, 0, "a30", 30)
    assert task.process() == 1
    assert task.partition_group.enforced == 0


def test_a_disabled_idle_time_does_not_wait_for_a_partition_not_fetched_to_its_end(tmp_path: Path) -> None:
    task = _merge_task(tmp_path, -1, _Clock(), caught_up=False)
    _add(task, A, 0, "a30", 30)
    assert task.process() == 1
    assert task.partition_group.idle_deadline() is None
    _add(task, B, 0, "b20", 20)
    _add(task, A, 1, "a40", 40)
    assert task.process() == 2  # what is buffered still goes in timestamp order
    assert _out(task) == ["a30", "b20", "a40"]
    assert not task.partition_group.waits_for_fetches  # the runtime tracks no fetch position for it


def test_without_idle_time_a_partition_not_fetched_to_its_end_is_waited_for(tmp_path: Path) -> None:
    task = _merge_task(tmp_path, 0, _Clock(), caught_up=False)
    _add(task, A, 0, "a30", 30)
    assert task.process() == 0
    task.partition_group.set_caught_up(B, 0, True)
    assert task.process() == 1
    assert task.partition_group.waits_for_fetches


def test_a_negative_idle_time_other_than_minus_one_is_zero(tmp_path: Path) -> None:
    """Kafka Streams disables idling for -1 only; a deadline already past is no wait beyond the fetch."""
    task = _merge_task(tmp_path, -2, _Clock(), caught_up=False)
    _add(task, A, 0, "a30", 30)
    assert task.process() == 0
    task.partition_group.set_caught_up(B, 0, True)
    assert task.process() == 1
