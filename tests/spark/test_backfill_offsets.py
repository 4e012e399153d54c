"""`streamlet spark backfill --from <offsets JSON>` on topologies with several sub-topologies.

Spark's Kafka source takes specific starting offsets only for exactly the partitions a query reads, and
a topology runs one query per sub-topology: each query gets the part of the JSON naming its own input
topics, and its repartition topics from their earliest offset (written by the queries before it). A
JSON that does not fit the application's input fails with a message saying what is wrong, before any
query starts.
"""

from __future__ import annotations

import asyncio
import json
import struct
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamlet.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from streamlet.errors import ConfigError
from streamlet.serdes import Serdes
from streamlet.spark import SparkStreams
from streamlet.spark.bounds import for_query
from streamlet.spark.grouping import task_keys
from streamlet.spark.plan import SubTopologyPlan
from streamlet.spark.query import Bounds
from streamlet.testing.local_broker import LocalKafkaBroker
from streamlet.topology import Topology
from tests.helpers.kafka import Rec, create_kept_topics, produce_records, read_all

S, L = Serdes.String(), Serdes.Long()
APP = "offsets-app"


def _three_subtopologies(a: str, b: str, out_a: str, out_b: str) -> Topology:
    """Topic a: count per value after a repartition (two sub-topologies); topic b: count per key (a third)."""
    builder = StreamsBuilder()
    (builder.stream(a, Consumed(S, S)).group_by(lambda _k, v: v, Grouped(S, S)).count(Materialized("by-value"))
     .to_stream().to(out_a, Produced(S, L)))
    builder.stream(b, Consumed(S, S)).group_by_key().count(Materialized("by-key")).to_stream().to(out_b, Produced(S, L))
    return builder.build()


def _repartitioned_join(a: str, b: str, out: str) -> Topology:
    """A sub-topology reading an input topic (the table b) and a repartition topic (a, re-keyed) at once."""
    builder = StreamsBuilder()
    table = builder.table(b, Consumed(S, S), Materialized("table"))
    (builder.stream(a, Consumed(S, S)).select_key(lambda _k, v: v).repartition()
     .join(table, lambda v, t: f"{v}+{t}").to(out, Produced(S, S)))
    return builder.build()


def _plans(topology: Topology, partitions: int) -> list[SubTopologyPlan]:
    counts = {f"{APP}-{name}" if name in topology.internal_topics else name: partitions
              for sub in topology.sub_topologies() for name in [*sub.source_topics, *sub.sink_topics]}
    plans = []
    for sub in topology.sub_topologies():
        plan = SubTopologyPlan(topology, sub.id, {"application.id": APP}, counts, task_keys(partitions))
        plan.source_topics = [plan.resolve_topic(t) for t in sub.source_topics]
        plans.append(plan)
    return plans


def _starting(bounds: Bounds) -> Any:
    return json.loads(bounds.starting) if bounds.starting.startswith("{") else bounds.starting


def test_each_query_gets_the_offsets_of_its_own_input_topics() -> None:
    topology = _three_subtopologies("a", "b", "out-a", "out-b")
    plans = _plans(topology, 2)
    offsets = {"a": {"0": 3, "1": -2}, "b": {"0": 1, "1": -1}}
    bounds = Bounds(starting=json.dumps(offsets), bounded=True)
    got = {tuple(p.source_topics): _starting(for_query(bounds, p, {"a": 2, "b": 2})) for p in plans}
    assert got == {("a",): {"a": offsets["a"]}, ("b",): {"b": offsets["b"]},
                   (f"{APP}-by-value-repartition",): "earliest"}


def test_a_query_reading_input_and_repartition_topics_gets_both() -> None:
    topology = _repartitioned_join("a", "b", "out")
    plans = _plans(topology, 2)
    (mixed,) = [p for p in plans if "b" in p.source_topics]
    repartition = next(t for t in mixed.source_topics if t != "b")
    bounds = Bounds(starting=json.dumps({"a": {"0": 5, "1": 5}, "b": {"0": 2, "1": 0}}), bounded=True)
    assert _starting(for_query(bounds, mixed, {"a": 2, "b": 2})) == {
        "b": {"0": 2, "1": 0}, repartition: {"0": -2, "1": -2}}
    # `latest` is the input's: the repartition topic is still read from its start.
    assert _starting(for_query(Bounds(starting="latest", bounded=True), mixed, {"a": 2, "b": 2})) == {
        "b": {"0": -1, "1": -1}, repartition: {"0": -2, "1": -2}}


@pytest.mark.parametrize(("offsets", "message"), [
    ({"a": {"0": 1, "1": 1}, "b": {"0": 1, "1": 1}, "c": {"0": 1}}, "c is not an input topic"),
    ({"a": {"0": 1, "1": 1}}, "does not name input topic 'b'"),
    ({"a": {"0": 1}, "b": {"0": 1, "1": 1}}, "topic 'a' has partitions 0..1"),
    ({"a": 5, "b": {"0": 1, "1": 1}}, "not valid offsets JSON"),
])
def test_offsets_that_do_not_fit_the_input_say_why(offsets: Any, message: str) -> None:
    plans = _plans(_three_subtopologies("a", "b", "out-a", "out-b"), 2)
    bounds = Bounds(starting=json.dumps(offsets), bounded=True)
    with pytest.raises(ConfigError, match=message):
        for plan in plans:
            for_query(bounds, plan, {"a": 2, "b": 2})


@pytest.mark.broker
def test_backfill_from_offsets_over_three_subtopologies(spark: Any, kafka_broker: LocalKafkaBroker,
                                                        tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    a, b, out_a, out_b = (f"offsets-{run}-{n}" for n in ("a", "b", "out-a", "out-b"))
    asyncio.run(create_kept_topics(bootstrap, dict.fromkeys((a, b, out_a, out_b), 2)))
    records = [Rec(a, i % 2, f"k{i}".encode(), f"v{i % 3}".encode(), 1_700_000_000_000 + i) for i in range(30)]
    records += [Rec(b, i % 2, f"k{i % 4}".encode(), b"x", 1_700_000_000_000 + i) for i in range(20)]
    asyncio.run(produce_records(bootstrap, records))
    start = {a: {"0": 4, "1": -2}, b: {"0": -2, "1": 6}}
    offset_of: dict[Rec, int] = {}
    for r in records:  # produced in order: a record's offset is how many went to its partition before it
        offset_of[r] = sum(1 for x in offset_of if (x.topic, x.partition) == (r.topic, r.partition))
    taken = [r for r in records if offset_of[r] >= max(0, start[r.topic][str(r.partition)])]
    assert 0 < len(taken) < len(records)
    streams = SparkStreams(_three_subtopologies(a, b, out_a, out_b),
                           {"application.id": f"offsets-{run}", "bootstrap.servers": bootstrap,
                            "spark.checkpoint.location": str(tmp_path / "checkpoint")}, spark=spark)
    streams.backfill(Bounds(starting=json.dumps(start), bounded=True))
    written = asyncio.run(read_all(bootstrap, {out_a: 2, out_b: 2}))
    latest = {(r.topic, r.key.decode()): struct.unpack(">q", r.value or b"")[0]
              for rs in written.values() for r in rs}
    want = Counter((out_a, (r.value or b"").decode()) if r.topic == a else (out_b, r.key.decode()) for r in taken)
    assert latest == dict(want)
