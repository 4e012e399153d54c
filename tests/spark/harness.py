"""Run an application on the Spark engine against the real broker, and say what it must have written.

What it must have written comes from the `TopologyTestDriver` with caching off, task by task: a Spark
task sees only its own partition of each input, keeps its own stream time and merges its partitions
by timestamp, so each task is replayed in a driver of its own, fed that task's records in the order
`PartitionGroup` takes them (each micro-batch's records merged by timestamp, ties to the partition the
task saw first). A sub-topology reading a repartition topic is replayed from what the engine really
wrote there; or, where the engine passed the topic's records through its shuffle instead (see
`streamlet.spark.fused`), from what the writers' drivers wrote, interleaved as the engine does. Then,
per output topic, partition and key: one task's records must match exactly and in order; records of
one key written by several tasks (after a repartition) must be the same multiset, with each task's
records in that task's order.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import CoordinatorLoadInProgressError, GroupCoordinatorNotAvailableError

from streamlet.partitioner import default_partition
from streamlet.serdes import Serdes
from streamlet.spark.streams import flow_order
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology
from tests.helpers.kafka import Rec

B = Serdes.Bytes()


def _merged(queues: dict[str, list[Rec]], order: list[str]) -> list[Rec]:
    """PartitionGroup's order over fully buffered queues: lowest head timestamp, ties to the earlier queue."""
    heads = {t: 0 for t in order}
    out: list[Rec] = []
    while True:
        best = None
        for t in order:
            q, i = queues.get(t, []), heads[t]
            if i < len(q) and (best is None or q[i].timestamp < queues[best][heads[best]].timestamp):
                best = t
        if best is None:
            return out
        out.append(queues[best][heads[best]])
        heads[best] += 1


def _shuffled(per_batch: list[dict[int, list[Rec]]], writers: int) -> list[list[Rec]]:
    """What a fused downstream task reads in each micro-batch: the i-th record writer w wrote for it in that
    batch at offset i * writers + w (`streamlet.spark.fused._offsets`), in offset order."""
    return [[r for _offset, r in sorted((i * writers + w, r) for w, wrote in batch.items()
                                        for i, r in enumerate(wrote))] for batch in per_batch]


def expected_outputs(topology: Topology, settings: dict[str, Any], batches: list[list[Rec]],
                     counts: dict[str, int], written: dict[tuple[str, int], list[Rec]],
                     fused: Iterable[str] = ()) -> dict[tuple[str, int, bytes], dict[int, list[Rec]]]:
    """(topic, partition, key) -> task -> the records that task must have written there, in order. `fused`:
    repartition topics (real names) the engine passed through its shuffle, one micro-batch per batch: they
    hold nothing, and their readers get what the writers' drivers wrote, batch by batch."""
    app = settings["application.id"]
    through_shuffle = set(fused)
    # (topic, partition) -> per batch: writer task -> what it wrote there in that batch, in order
    shuffled: dict[tuple[str, int], list[dict[int, list[Rec]]]] = defaultdict(
        lambda: [defaultdict(list) for _ in batches])
    writer_tasks: dict[str, int] = {}  # fused topic -> how many tasks write it (its offsets' modulus)

    def resolve(t: str) -> str:
        return f"{app}-{t}" if t in topology.internal_topics else t

    expected: dict[tuple[str, int, bytes], dict[int, list[Rec]]] = defaultdict(lambda: defaultdict(list))
    for sub in flow_order(topology):
        sources = sorted(resolve(t) for t in sub.source_topics)
        sinks = {resolve(t) for t in sub.sink_topics}
        internal = [t for t in sub.source_topics if t in topology.internal_topics]
        assert not internal or len(internal) == len(sources), "mixed internal and user sources: not emulated"
        tasks = max(counts[t] for t in sources)
        writer_tasks.update(dict.fromkeys(sinks & through_shuffle, tasks))
        for task in range(tasks):
            with tempfile.TemporaryDirectory() as state, \
                    TopologyTestDriver(topology, {**settings, "state.dir": state}, initial_wall_clock_time=0) as driver:
                inputs = {t: driver.create_input_topic(t, B, B) for t in sources}
                outputs = {t: driver.create_output_topic(t, B, B) for t in sinks}
                if internal and set(sources) <= through_shuffle:
                    (topic,) = sources
                    feed = _shuffled(shuffled[(topic, task)], writer_tasks[topic])
                elif internal:
                    feed = [[r for t in sources for r in written.get((t, task), [])]]
                else:
                    feed = [[r for r in batch if r.partition == task] for batch in batches]
                order: list[str] = []
                for number, batch in enumerate(feed):
                    queues: dict[str, list[Rec]] = defaultdict(list)
                    for r in batch:
                        queues[r.topic].append(r)
                    order += sorted(t for t in queues if t not in order)
                    for r in _merged(queues, order):
                        inputs[r.topic].pipe_input(r.key, r.value, r.timestamp, r.headers)
                    for topic in sinks & through_shuffle:
                        for o in outputs[topic].read_records_to_list():
                            partition = default_partition(o.key, counts[topic])
                            shuffled[(topic, partition)][number][task].append(
                                Rec(topic, partition, o.key, o.value, o.timestamp, tuple(o.headers)))
                if any(getattr(topology.nodes[n], "topic_extractor", None) for n in sub.nodes):
                    static = {resolve(t) for s in topology.sub_topologies() for t in s.sink_topics}
                    for t in driver.produced_topic_names():  # what this sub-topology's dynamic sinks wrote
                        if t in counts and t not in static:
                            outputs.setdefault(t, driver.create_output_topic(t, B, B))
                for topic, out in outputs.items():
                    for o in out.read_records_to_list():
                        partition = default_partition(o.key, counts[topic])
                        expected[(topic, partition, o.key)][task].append(
                            Rec(topic, partition, o.key, o.value, o.timestamp, tuple(o.headers)))
    return expected


def compare(expected: dict[tuple[str, int, bytes], dict[int, list[Rec]]],
            actual: dict[tuple[str, int], list[Rec]], topics: Iterable[str]) -> list[str]:
    """The differences, as readable lines (empty: the engine wrote exactly what it must have)."""
    wanted = set(topics)
    by_key: dict[tuple[str, int, bytes], list[Rec]] = defaultdict(list)
    for (topic, _), records in actual.items():
        if topic in wanted:
            for r in records:
                by_key[(r.topic, r.partition, r.key)].append(r)
    problems: list[str] = []
    for where in sorted(set(by_key) | {w for w in expected if w[0] in wanted}):
        got = by_key.get(where, [])
        per_task = expected.get(where, {})
        if len(per_task) <= 1:
            want = next(iter(per_task.values()), [])
            if got != want:
                problems.append(f"{where}: expected {want}, got {got}")
            continue
        if Counter(got) != Counter(r for rs in per_task.values() for r in rs):
            problems.append(f"{where}: expected the records of tasks {dict(per_task)}, got {got}")
            continue
        for task, want in per_task.items():
            it = iter(got)
            if not all(any(g == w for g in it) for w in want):
                problems.append(f"{where}: task {task}'s records {want} are out of order in {got}")
    return problems


async def run_asyncio_runtime(topology: Topology, config: dict[str, Any], timeout_s: float = 90.0) -> None:
    """Run `topology` on the asyncio runtime (`KafkaStreams`) over input already on the broker, until its
    consumer group has committed the end of every topic it reads (repartition topics included) twice in
    a row, unchanged; then close it."""
    from streamlet.runtime.kafka_streams import KafkaStreams

    app = config["application.id"]
    sources = sorted({f"{app}-{t}" if t in topology.internal_topics else t
                      for sub in topology.sub_topologies() for t in sub.source_topics})
    admin = AIOKafkaAdminClient(bootstrap_servers=config["bootstrap.servers"])
    await admin.start()
    try:
        async with KafkaStreams(topology, config):
            deadline = time.monotonic() + timeout_s
            previous: dict[TopicPartition, int] | None = None
            while True:
                assert time.monotonic() < deadline, f"{app}: the asyncio runtime did not finish its input"
                await asyncio.sleep(0.5)
                ends = await _end_offsets(config["bootstrap.servers"], sources)
                try:
                    offsets = await admin.list_consumer_group_offsets(app)
                except (GroupCoordinatorNotAvailableError, CoordinatorLoadInProgressError):
                    continue  # the broker's first group: its offsets topic is still being made
                done = {tp: m.offset for tp, m in offsets.items() if m is not None}
                caught_up = ({tp.topic for tp in ends} == set(sources)
                             and all(done.get(tp, 0) >= end for tp, end in ends.items()))
                if caught_up and ends == previous:
                    return
                previous = ends if caught_up else None
    finally:
        await admin.close()


async def _end_offsets(bootstrap: str, topics: list[str]) -> dict[TopicPartition, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        missing = [t for t in topics if not consumer.partitions_for_topic(t)]
        if missing:
            await consumer._client.force_metadata_update()
            partitions = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        return dict(await consumer.end_offsets(partitions)) if partitions else {}
    finally:
        await consumer.stop()
