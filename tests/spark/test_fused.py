"""Which sub-topologies share one query, and the records they pass through its shuffle (see
`streamlet.spark.fused`): exactly what the upstream tasks wrote, each writer's records in the order written."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.actors.record_collector import ProducedRecord
from streamlet.config import StreamsConfig
from streamlet.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from streamlet.serdes import Serdes
from streamlet.spark import fused
from streamlet.spark.fused import PACKED_COLUMNS, fusable_pairs, unpack
from streamlet.spark.grouping import task_keys
from streamlet.spark.plan import SubTopologyPlan
from streamlet.spark.stateless import is_stateless
from streamlet.spark.streams import SparkStreams, _probe
from streamlet.topology import Topology
from tests.spark.topologies import Topics, everything

S = Serdes.String()
CONFIG = {"application.id": "fused", "bootstrap.servers": "unused:9092"}


def _plans(topology: Topology, settings: dict[str, Any] = CONFIG) -> list[SubTopologyPlan]:
    plans = []
    for sub in topology.sub_topologies():
        _wall, progress = _probe(topology, sub, StreamsConfig(settings))
        plan = SubTopologyPlan(topology, sub.id, settings, {}, task_keys(1))
        plan.stateless = is_stateless(plan, progress)
        plans.append(plan)
    return plans


def _pairs(topology: Topology, settings: dict[str, Any] = CONFIG) -> list[tuple[int, int]]:
    return [(up.subtopology_id, down.subtopology_id) for up, down in fusable_pairs(_plans(topology, settings))]


def _wordcount() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("lines", Consumed(S, S)).flat_map_values(str.split).group_by(lambda _k, w: w, Grouped(S, S))
     .count(Materialized("counts")).to_stream().to("counts-out"))
    return builder.build()


def test_wordcount_splits_and_counts_in_one_query_at_least_once_only() -> None:
    assert _pairs(_wordcount()) == [(0, 1)]
    assert _pairs(_wordcount(), {**CONFIG, "processing.guarantee": "exactly_once_v2"}) == []


def test_a_stateful_writer_or_a_second_input_keeps_two_queries() -> None:
    # `everything`: the sub-topology writing the repartition topic has stores of its own.
    assert _pairs(everything(Topics("x"))) == []
    builder = StreamsBuilder()
    table = builder.table("users", Consumed(S, S))
    (builder.stream("clicks", Consumed(S, S)).select_key(lambda _k, v: v).join(table, lambda c, u: c + u)
     .to("joined"))
    assert _pairs(builder.build(), {**CONFIG, "default.key.serde": "String", "default.value.serde": "String"}) == []


def test_an_upstream_sub_topology_runs_in_one_query_only() -> None:
    builder = StreamsBuilder()
    words = builder.stream("lines", Consumed(S, S)).flat_map_values(str.split)
    words.group_by(lambda _k, w: w, Grouped(S, S, name="by-word")).count(Materialized("per-word")).to_stream().to("a")
    words.group_by(lambda _k, w: w[:1], Grouped(S, S, name="by-letter")).count(Materialized("per-letter")) \
        .to_stream().to("b")
    pairs = _pairs(builder.build())
    assert len(pairs) == 1 and pairs[0][0] == 0


def test_a_fused_query_runs_where_its_upstream_ran(tmp_path: Path) -> None:
    """A sub-topology reading what the upstream writes besides its repartition topic comes after the fused
    query in data-flow order (a backfill runs them in that order)."""
    builder = StreamsBuilder()
    words = builder.stream("lines", Consumed(S, S)).flat_map_values(str.split)
    words.to("side", Produced(S, S))
    builder.stream("side", Consumed(S, S)).map_values(str.upper).to("shout", Produced(S, S))
    words.group_by(lambda _k, w: w, Grouped(S, S)).count(Materialized("counts")).to_stream().to("counts-out")
    topology = builder.build()
    plans = _plans(topology)
    assert [sorted(p.subtopology.source_topics) for p in plans] == [["lines"], ["side"], ["counts-repartition"]]
    ((up, down),) = fusable_pairs(plans)
    (tmp_path / f"subtopology-{up.subtopology_id}+{down.subtopology_id}" / "offsets" / "0").mkdir(parents=True)
    fused_plans = SparkStreams(topology, CONFIG)._fused(plans, tmp_path)  # that checkpoint ran: fused
    assert [p.query_id for p in fused_plans] == [f"{up.subtopology_id}+{down.subtopology_id}", "1"]


_records = st.lists(st.tuples(st.binary(max_size=3) | st.none(), st.binary(max_size=3),
                              st.integers(0, 2**41),
                              st.sampled_from([(), (("h", b"v"),), (("h", b""), ("h", b"x"))])),
                    max_size=30)


@settings(max_examples=60, deadline=None)
@given(written=st.lists(_records, min_size=1, max_size=4), chunk=st.integers(1, 7), seed=st.integers(0, 10**6))
def test_the_shuffle_hands_on_what_each_writer_wrote_in_its_order(written: list[list[tuple[Any, ...]]],
                                                                   chunk: int, seed: int) -> None:
    """`written[s]`: what upstream task s wrote for one downstream task. Packed in chunks of `chunk`,
    the rows arriving in any order and in any frames, the downstream task gets every record once,
    each writer's in its order."""
    old, fused.RECORDS_PER_ROW = fused.RECORDS_PER_ROW, chunk
    try:
        rows = [fused._packed_rows({0: [ProducedRecord(*r) for r in records]}, [7], source)
                for source, records in enumerate(written)]
    finally:
        fused.RECORDS_PER_ROW = old
    flat = [dict(zip(PACKED_COLUMNS, values, strict=True))
            for columns in rows for values in zip(*columns.values(), strict=True)]
    assert all(row["task"] == 7 for row in flat)
    random.Random(seed).shuffle(flat)
    cut = random.Random(seed).randint(0, len(flat))
    frames = [pd.DataFrame(part, columns=list(PACKED_COLUMNS)) for part in (flat[:cut], flat[cut:]) if part]
    found = unpack(frames, "app-repartition", 0, len(written))
    got = found.get(("app-repartition", 0), [])
    assert sorted(r.offset for r in got) == [r.offset for r in got]
    assert len({r.offset for r in got}) == len(got) == sum(map(len, written))
    for source, records in enumerate(written):
        mine = [(r.key, r.value, r.timestamp, r.headers) for r in got if r.offset % len(written) == source]
        assert mine == [tuple(r) for r in records]
    assert all(r.topic == "app-repartition" and r.partition == 0 for r in got)
