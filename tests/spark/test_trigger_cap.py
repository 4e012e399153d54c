"""Which queries `spark.max.offsets.per.trigger` caps: those reading one input topic only."""

from __future__ import annotations

from streamlet.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from streamlet.serdes import Serdes
from streamlet.spark.grouping import task_keys
from streamlet.spark.plan import MAX_OFFSETS_KEY, SubTopologyPlan
from streamlet.spark.query import trigger_cap
from streamlet.topology import Topology

S = Serdes.String()
APP = "cap-app"


def _caps(topology: Topology, settings: dict[str, object]) -> dict[tuple[str, ...], int | None]:
    caps = {}
    for sub in topology.sub_topologies():
        plan = SubTopologyPlan(topology, sub.id, {"application.id": APP, **settings}, {}, task_keys(1))
        plan.source_topics = [plan.resolve_topic(t) for t in sub.source_topics]
        caps[tuple(sorted(plan.source_topics))] = trigger_cap(plan)
    return caps


def _topology() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("lines", Consumed(S, S)).flat_map_values(str.split).group_by(lambda _k, w: w, Grouped(S, S))
     .count(Materialized("counts")).to_stream().to("counts-out"))
    table = builder.table("users", Consumed(S, S), Materialized("users-store"))
    builder.stream("events", Consumed(S, S)).join(table, lambda e, u: f"{e}+{u}").to("joined", Produced(S, S))
    return builder.build()


def test_only_queries_reading_one_input_topic_are_capped() -> None:
    assert _caps(_topology(), {MAX_OFFSETS_KEY: 500}) == {
        ("lines",): 500, (f"{APP}-counts-repartition",): None, ("events", "users"): None}


def test_no_setting_no_cap() -> None:
    assert set(_caps(_topology(), {}).values()) == {None}
