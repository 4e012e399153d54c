"""What a task commits besides its offsets, and what a task starting again does with it (issue 23).

A task is run on half of the input, its `commit_times()` go through Kafka Streams' encoding
(`streamlet.kafka.commit_metadata`) as the runtime commits them, and a new task on the same state
directory starts from them (`restore_times`), as after a restart. Kafka Streams 4.4.0, measured on a
broker: an `on_window_close` aggregation does not send its final results again, but a windowed count does
count a record that was late before the restart (its own observed stream time starts again).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from streamlet import Consumed, Produced, Serdes, StreamsBuilder, Topology
from streamlet.actors.partition_group import RawRecord
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.actors.task_actor import Drained, TaskActor
from streamlet.actors.task_progress import CommitTimes
from streamlet.config import WINDOWED_AGGREGATION_EMIT_INTERVAL_MS, StreamsConfig
from streamlet.kafka.commit_metadata import decode_committed, encode_commit_metadata
from streamlet.processor import Processor, ProcessorContext, PunctuationType
from streamlet.record import Record
from tests.integration import emit_final_apps
from tests.integration.windowed_failover_apps import window_key

IN, OUT = "ef-in", "ef-out"
SECOND = 1000


def _topology(factory: Callable[[], Topology]) -> Topology:
    os.environ.update(EF_INPUT=IN, EF_OUTPUT=OUT)
    return factory()


def _task(topology: Topology, state_root: Path) -> StreamTask:
    config = StreamsConfig({"application.id": "times-test", "default.key.serde": "String",
                            "default.value.serde": "String", "statestore.cache.max.bytes": 0,
                            WINDOWED_AGGREGATION_EMIT_INTERVAL_MS: 0})
    (sub,) = topology.sub_topologies()
    task = StreamTask(topology, sub, 0, config, RecordCollector(lambda _t: 1), state_root, clock=lambda: 0,
                      resolve_topic=lambda t: t, cache_bytes=0)
    task.initialize_stores()
    return task


def _run(task: StreamTask, seconds: list[int], first_offset: int) -> list[tuple[str, str]]:
    key = Serdes.String().serializer
    records = [RawRecord(IN, 0, first_offset + i, t * SECOND, key.serialize(IN, f"k{t % 5}"), b"v")
               for i, t in enumerate(seconds)]
    task.add_records(IN, 0, records)
    task.process()
    task.prepare_commit()
    return [(r.key.decode(), r.value.decode()) for r in task.collector.drain().get((OUT, 0), [])
            if r.key is not None and r.value is not None]


def _committed(task: StreamTask) -> dict[tuple[str, int], str]:
    times = task.commit_times()
    return encode_commit_metadata(times.partition_times, times.processor_metadata, task.consumed_offsets)


def _restarted(topology: Topology, state_root: Path, committed: dict[tuple[str, int], str]) -> StreamTask:
    task = _task(topology, state_root)
    task.restore_times(CommitTimes(*decode_committed(committed)))
    task.initialize_processors()
    return task


def test_final_results_are_not_sent_again_and_times_continue(tmp_path: Path) -> None:
    topology = _topology(emit_final_apps.tumbling_final_counts)
    first = _task(topology, tmp_path)
    first.initialize_processors()
    before = _run(first, list(range(60)), 0)
    committed = _committed(first)
    first.close(clean=True)
    assert len(before) == 25  # windows [0 s, 50 s), five keys

    second = _restarted(topology, tmp_path, committed)
    assert second.stream_time == 59 * SECOND
    assert second.partition_group.queue_for(IN, 0).partition_time == 59 * SECOND
    assert second.processor_metadata == {"tumbling-counts": 50 * SECOND}  # the close time of the last emit
    after = _run(second, list(range(60, 90)), 60)
    assert len(after) == 15  # [50 s, 80 s): nothing of before sent again
    assert not {k for k, _ in before} & {k for k, _ in after}
    second.close(clean=True)


def test_a_record_late_before_the_restart_is_counted_after_it(tmp_path: Path) -> None:
    def windowed_updates() -> Topology:
        from datetime import timedelta

        from streamlet import Consumed, Materialized, Produced, StreamsBuilder, TimeWindows

        s = Serdes.String()
        builder = StreamsBuilder()
        (builder.stream(IN, Consumed(s, s)).group_by_key()
         .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=10)))
         .count(Materialized("updates", retention=timedelta(hours=1)))
         .to_stream().map(window_key).to(OUT, Produced(s, s)))
        return builder.build()

    topology = windowed_updates()
    first = _task(topology, tmp_path)
    first.initialize_processors()
    assert _run(first, [*range(60), 5], 0)[-1] == (f"k4@{50 * SECOND}-{60 * SECOND}", "2")  # 5 s: dropped
    committed = _committed(first)
    first.close(clean=True)

    second = _restarted(topology, tmp_path, committed)
    assert second.stream_time == 59 * SECOND
    assert _run(second, [5], 61) == [(f"k0@0-{10 * SECOND}", "3")]  # counted: [0 s, 10 s) had k0 at 0 s and 5 s
    second.close(clean=True)


class _EveryTenSeconds(Processor):
    """Passes records on; every 10 s of stream time forwards ("P", "<punctuation time>")."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        context.schedule(10 * SECOND, PunctuationType.STREAM_TIME, self._punctuate)

    def process(self, record: Record) -> None:
        self.context.forward(record)

    def _punctuate(self, timestamp: int) -> None:
        self.context.forward(Record("P", str(timestamp), timestamp))


@pytest.mark.anyio
async def test_a_restarted_task_punctuates_on_its_restored_stream_time_before_any_record(tmp_path: Path) -> None:
    """Kafka Streams 4.4.0 on a broker (tests/fidelity_restart, case punctuation-after-restart): records at
    0, 12, 25, 35 s, a clean restart, then one at 20 s: the restarted task punctuates at 35 s (its stream time,
    restored) as it starts, before the late record, whose punctuation check finds nothing due."""
    s = Serdes.String()
    builder = StreamsBuilder()
    builder.stream(IN, Consumed(s, s)).process(_EveryTenSeconds, named="ticks").to(OUT, Produced(s, s))
    topology = builder.build()
    first = _task(topology, tmp_path)
    first.initialize_processors()
    assert [k for k, _ in _run(first, [0, 12, 25, 35], 0)].count("P") == 4  # at 0, 12, 25 and 35 s
    committed = _committed(first)
    first.close(clean=True)

    second = _restarted(topology, tmp_path, committed)
    delivered: list[tuple[str, str]] = []

    async def sink(drained: Drained) -> None:
        delivered.extend((r.key.decode(), r.value.decode()) for rs in drained.values() for r in rs
                         if r.key is not None and r.value is not None)

    actor = TaskActor(second, sink)
    key = s.serializer
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        await anyio.wait_all_tasks_blocked()
        assert delivered == [("P", str(35 * SECOND))]
        await actor.post_records(IN, 0, [RawRecord(IN, 0, 4, 20 * SECOND, key.serialize(IN, "b"), b"2")])
        await anyio.wait_all_tasks_blocked()
        await actor.stop()
    assert delivered == [("P", str(35 * SECOND)), ("b", "2")]
    second.close(clean=True)
