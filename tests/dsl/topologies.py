"""The reference topologies of tests/java/reference, built with streamlet.

One function per golden file (tests/dsl/golden/<name>.txt), written as the Java in
DescribeTopologies.java is written, call for call: the golden test checks that both print the same
`describe()`. Behaviour tests reuse some of them, so the lambdas do real (small) work.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from streamlet.dsl import Consumed, Grouped, Materialized, Named, Produced, Repartitioned, StreamsBuilder
from streamlet.processor import Processor
from streamlet.record import KeyValue, Record
from streamlet.serdes import Serdes
from streamlet.stores.factory import Stores
from streamlet.topology import Topology
from tests.dsl.global_fk_topologies import GLOBAL_FK_TOPOLOGIES
from tests.dsl.window_cogroup_topologies import WINDOW_COGROUP_TOPOLOGIES
from tests.dsl.window_join_topologies import WINDOW_JOIN_TOPOLOGIES

_NON_WORD = re.compile(r"\W+", re.ASCII)


def split_words(line: str) -> list[str]:
    """Java's `line.toLowerCase().split("\\\\W+")`: no match gives the line itself, else trailing "" go."""
    lowered = line.lower()
    if _NON_WORD.search(lowered) is None:
        return [lowered]
    parts = _NON_WORD.split(lowered)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


class PassThrough(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record)


def pipe() -> Topology:
    builder = StreamsBuilder()
    builder.stream("streams-plaintext-input").to("streams-pipe-output")
    return builder.build()


def wordcount() -> Topology:
    builder = StreamsBuilder()
    text_lines = builder.stream("streams-plaintext-input")
    word_counts = (
        text_lines.flat_map_values(split_words)
        .group_by(lambda _key, word: word)
        .count(Materialized("counts-store"))
    )
    word_counts.to_stream().to("streams-wordcount-output", Produced(Serdes.String(), Serdes.Long()))
    return builder.build()


def wordcount_unnamed_store() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("streams-plaintext-input")
        .flat_map_values(split_words)
        .group_by(lambda _key, word: word)
        .count()
        .to_stream()
        .to("streams-wordcount-output", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def filter_map_chain() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .filter(lambda k, v: v is not None)
        .filter_not(lambda k, v: v == "")
        .map(lambda k, v: KeyValue(v, k))
        .map_values(lambda v: v)
        .select_key(lambda k, v: k)
        .to("output")
    )
    return builder.build()


def map_group_by_key_reduce() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .map(lambda k, v: (v, k))
        .group_by_key()
        .reduce(lambda a, b: a + b)
        .to_stream()
        .to("output")
    )
    return builder.build()


def group_by_aggregate() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .group_by(lambda k, v: v)
        .aggregate(lambda: 0, lambda k, v, agg: agg + len(v), Materialized(key_serde=Serdes.String(),
                                                                          value_serde=Serdes.Long()))
        .to_stream()
        .to("output", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def merge() -> Topology:
    builder = StreamsBuilder()
    left = builder.stream("left")
    right = builder.stream("right")
    left.merge(right).to("merged")
    return builder.build()


def table_filter_map_values() -> Topology:
    builder = StreamsBuilder()
    table = builder.table("table-input")
    table.filter(lambda k, v: len(v) > 2).map_values(str.upper).to_stream().to("output")
    return builder.build()


def table_materialized() -> Topology:
    builder = StreamsBuilder()
    table = builder.table("table-input", materialized=Materialized("table-store"))
    (
        table.filter(lambda k, v: len(v) > 2, Materialized("filtered-store"))
        .filter_not(lambda k, v: v.startswith("x"))
        .to_stream()
        .to("output")
    )
    return builder.build()


def process_with_store() -> Topology:
    builder = StreamsBuilder()
    builder.add_state_store(
        Stores.key_value_store_builder(Stores.persistent_key_value_store("process-store"),
                                       Serdes.String(), Serdes.Long())
    )
    builder.stream("input").process(PassThrough, "process-store").to("output")
    return builder.build()


def stream_to_twice() -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream("input")
    stream.to("output-1")
    stream.to("output-2")
    return builder.build()


def two_pipelines() -> Topology:
    builder = StreamsBuilder()
    builder.stream("input-b").to("output-b")
    builder.stream("input-a").to("output-a")
    return builder.build()


def peek_foreach() -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream("input")
    stream.peek(lambda k, v: None).to("output")
    stream.foreach(lambda k, v: None)
    return builder.build()


def flat_map() -> Topology:
    builder = StreamsBuilder()
    builder.stream("input").flat_map(lambda k, v: [KeyValue(v, k), (k, v)]).to("output")
    return builder.build()


def group_by_key_with_and_without_repartition() -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream("input")
    stream.group_by_key().count().to_stream().to("counts-by-key", Produced(Serdes.String(), Serdes.Long()))
    (
        stream.select_key(lambda k, v: v)
        .group_by_key()
        .count()
        .to_stream()
        .to("counts-by-value", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def named_operations() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input", Consumed(name="read-input"))
        .filter(lambda k, v: v is not None, Named("non-null"))
        .map_values(str.lower, named="lower")
        .select_key(lambda k, v: v, named=Named("by-value"))
        .group_by_key(Grouped(name="grouping"))
        .count(Materialized("count-store"), named="counter")
        .to_stream(named="changes")
        .to("output", Produced(value_serde=Serdes.Long(), name="write-output"))
    )
    return builder.build()


def grouped_named_repartition() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .group_by(lambda k, v: v, Grouped(Serdes.String(), Serdes.String(), name="words"))
        .count()
        .to_stream()
        .to("output", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def multi_topic_source() -> Topology:
    builder = StreamsBuilder()
    builder.stream(["input-1", "input-2"]).to("output")
    return builder.build()


def count_then_table_ops() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .group_by_key()
        .count()
        .filter(lambda k, v: v > 1)
        .map_values(lambda v: v * 10)
        .to_stream()
        .to("output", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def merge_then_group_by_key() -> Topology:
    builder = StreamsBuilder()
    left = builder.stream("left")
    right = builder.stream("right")
    (
        left.select_key(lambda k, v: v)
        .merge(right)
        .group_by_key()
        .count()
        .to_stream()
        .to("output", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def process_then_group_by_key() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .process(PassThrough)
        .group_by_key()
        .reduce(lambda a, b: b)
        .to_stream()
        .to("output")
    )
    return builder.build()


def two_aggregations_one_grouping() -> Topology:
    builder = StreamsBuilder()
    grouped = builder.stream("input").group_by(lambda k, v: v)
    grouped.count().to_stream().to("counts", Produced(Serdes.String(), Serdes.Long()))
    grouped.reduce(lambda a, b: a + b).to_stream().to("concatenated")
    return builder.build()


def repartition() -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream("input")
    stream.repartition().to("output-1")
    (
        stream.select_key(lambda k, v: v)
        .repartition(Repartitioned(name="by-value"))
        .group_by_key()
        .count()
        .to_stream()
        .to("output-2", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def value_ops_keep_partitioning() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .filter(lambda k, v: True)
        .map_values(lambda v: v)
        .flat_map_values(lambda v: [v])
        .peek(lambda k, v: None)
        .group_by_key()
        .aggregate(lambda: "", lambda k, v, agg: agg + v)
        .to_stream()
        .to("output")
    )
    return builder.build()


def count_materialized_without_name() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream("input")
        .group_by_key()
        .count(Materialized(key_serde=Serdes.String(), value_serde=Serdes.Long()))
        .to_stream()
        .to("output", Produced(Serdes.String(), Serdes.Long()))
    )
    return builder.build()


def two_aggregations_named_grouping() -> Topology:
    builder = StreamsBuilder()
    grouped = builder.stream("input").group_by(lambda k, v: v, Grouped(name="shared"))
    grouped.count().to_stream().to("counts", Produced(Serdes.String(), Serdes.Long()))
    grouped.reduce(lambda a, b: a + b).to_stream().to("concatenated")
    return builder.build()


def named_burns_index() -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream("input", Consumed(name="src"))
    stream.filter(lambda k, v: True, named="keep-all").map_values(lambda v: v).to("output", Produced(name="sink"))
    stream.peek(lambda k, v: None).to("output-2")
    return builder.build()


def table_named_source() -> Topology:
    builder = StreamsBuilder()
    builder.table("table-input", Consumed(name="tbl")).to_stream().to("output")
    return builder.build()


def process_named() -> Topology:
    builder = StreamsBuilder()
    builder.stream("input").process(PassThrough, named="my-processor").map_values(lambda v: v).to("output")
    return builder.build()


def subtopology_numbering() -> Topology:
    builder = StreamsBuilder()
    builder.stream("input-z", Consumed(name="zz-source")).to("output-z")
    builder.stream("input-a", Consumed(name="aa-source")).to("output-a")
    return builder.build()


def wide_fanout() -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream("input")
    for i in range(5):
        stream.filter(lambda k, v: True).map_values(lambda v: v).to(f"output-{i}")
    return builder.build()


def table_map_values_materialized() -> Topology:
    builder = StreamsBuilder()
    (
        builder.table("table-input")
        .map_values(lambda v: v + "!", Materialized("mapped-store"))
        .filter(lambda k, v: True, Materialized(key_serde=Serdes.String(), value_serde=Serdes.String()))
        .to_stream()
        .to("output")
    )
    return builder.build()


def processor_api() -> Topology:
    topology = Topology()
    topology.add_source("Source", "topic-b", "topic-a", "topic-c")
    topology.add_processor("Process", PassThrough, "Source")
    for store in ("store-b", "store-a", "Counts"):
        topology.add_state_store(
            Stores.key_value_store_builder(Stores.in_memory_key_value_store(store), Serdes.String(), Serdes.Long()),
            "Process",
        )
    topology.add_processor("Audit", PassThrough, "Source")
    topology.add_sink("Sink-1", "output-1", "Process")
    topology.add_sink("Sink-2", "output-2", "Process", "Audit")
    topology.add_processor("Leaf", PassThrough, "Process")
    return topology


def processor_api_numbering() -> Topology:
    topology = Topology()
    topology.add_source("zeta", "topic-z")
    topology.add_sink("zeta-sink", "out-z", "zeta")
    topology.add_source("alpha", "topic-a")
    topology.add_sink("alpha-sink", "out-a", "alpha")
    topology.add_source("middle", "topic-m")
    topology.add_processor("middle-proc", PassThrough, "middle")
    topology.add_state_store(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("shared"), Serdes.String(), Serdes.Long()),
        "middle-proc",
    )
    topology.add_processor("alpha-proc", PassThrough, "alpha")
    topology.connect_processor_and_state_stores("alpha-proc", "shared")
    return topology


REFERENCE_TOPOLOGIES: dict[str, Callable[[], Topology]] = {
    fn.__name__: fn
    for fn in (
        pipe, wordcount, wordcount_unnamed_store, filter_map_chain, map_group_by_key_reduce, group_by_aggregate,
        merge, table_filter_map_values, table_materialized, process_with_store, stream_to_twice, two_pipelines,
        peek_foreach, flat_map, group_by_key_with_and_without_repartition, named_operations,
        grouped_named_repartition, multi_topic_source, count_then_table_ops, merge_then_group_by_key,
        process_then_group_by_key, two_aggregations_one_grouping, repartition, value_ops_keep_partitioning,
        count_materialized_without_name, two_aggregations_named_grouping, named_burns_index, table_named_source,
        process_named, subtopology_numbering, wide_fanout, table_map_values_materialized, processor_api,
        processor_api_numbering,
    )
}
REFERENCE_TOPOLOGIES.update(WINDOW_JOIN_TOPOLOGIES)
REFERENCE_TOPOLOGIES.update(GLOBAL_FK_TOPOLOGIES)
REFERENCE_TOPOLOGIES.update(WINDOW_COGROUP_TOPOLOGIES)
