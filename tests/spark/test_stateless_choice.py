"""Which sub-topologies run without Spark state (`mapInArrow`, no shuffle): exactly those that carry
nothing from one micro-batch to the next."""

from __future__ import annotations

from datetime import timedelta

from streamlet.config import StreamsConfig
from streamlet.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from streamlet.processor import Processor, ProcessorContext, PunctuationType
from streamlet.record import Record
from streamlet.serdes import Serdes
from streamlet.spark.grouping import task_keys
from streamlet.spark.plan import SubTopologyPlan
from streamlet.spark.stateless import is_stateless
from streamlet.spark.streams import _probe
from streamlet.topology import Topology

S = Serdes.String()
CONFIG = {"application.id": "stateless-choice", "bootstrap.servers": "unused:9092"}


class Ticks(Processor):
    """No store, but a stream-time punctuation (its schedule must carry over between batches)."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        context.schedule(timedelta(milliseconds=5), PunctuationType.STREAM_TIME, lambda now: None)

    def process(self, record: Record) -> None:
        self.context.forward(record)


def _choices(topology: Topology) -> list[tuple[list[str], bool]]:
    out = []
    for sub in topology.sub_topologies():
        _wall, progress = _probe(topology, sub, StreamsConfig(CONFIG))
        plan = SubTopologyPlan(topology, sub.id, CONFIG, {}, task_keys(1))
        out.append((sorted(sub.source_topics), is_stateless(plan, progress)))
    return out


def test_wordcount_splits_without_state_and_counts_with_it() -> None:
    builder = StreamsBuilder()
    (builder.stream("lines", Consumed(S, S)).flat_map_values(str.split).group_by(lambda _k, w: w, Grouped(S, S))
     .count(Materialized("counts")).to_stream().to("counts-out"))
    assert _choices(builder.build()) == [(["lines"], True), (["counts-repartition"], False)]


def test_two_source_topics_or_a_punctuation_keep_state() -> None:
    builder = StreamsBuilder()
    merged = builder.stream("a", Consumed(S, S)).merge(builder.stream("b", Consumed(S, S)))
    merged.map_values(str.upper).to("merged-out", Produced(S, S))
    builder.stream("c", Consumed(S, S)).process(Ticks).to("ticks-out", Produced(S, S))
    builder.stream("d", Consumed(S, S)).filter(lambda _k, v: bool(v)).to("filtered-out", Produced(S, S))
    assert sorted(_choices(builder.build())) == [(["a", "b"], False), (["c"], False), (["d"], True)]
