"""Topologies the Spark engine is checked on, with topic names under a prefix (one broker serves every test).

`everything` puts most of the DSL and the Processor API in one application, so that one Spark run
(seconds per micro-batch) checks them all: stateless operations, a key-value count, an aggregate after
a repartition, a windowed count with grace over out-of-order input, a stream-table join, a
processor with a key-value store and a stream-time punctuator, and a sink routing by a topic name extractor.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from streamlet.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder, TimeWindows
from streamlet.processor import Processor, ProcessorContext, PunctuationType
from streamlet.record import KeyValue, Record
from streamlet.serdes import Serdes
from streamlet.stores.factory import Stores
from streamlet.topology import Topology
from streamlet.windowed import Windowed

S = Serdes.String()
L = Serdes.Long()


@dataclass(frozen=True)
class Topics:
    """The topics of one application under test."""

    prefix: str

    @property
    def events(self) -> str:
        return f"{self.prefix}-events"

    @property
    def table(self) -> str:
        return f"{self.prefix}-table"

    def out(self, name: str) -> str:
        return f"{self.prefix}-out-{name}"

    @property
    def outputs(self) -> list[str]:
        return [self.out(n) for n in ("mapped", "count", "by-value", "windowed", "joined", "flushed", "routed-a",
                                      "routed-b")]


class BufferUntilPunctuation(Processor):
    """Keeps the latest value per key in a store; every 7 ms of stream time forwards them all (stamped
    with the punctuation time, in key order) and empties the store."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store: Any = context.get_state_store("buffer")
        context.schedule(timedelta(milliseconds=7), PunctuationType.STREAM_TIME, self.flush)

    def process(self, record: Record) -> None:
        self.store.put(record.key, f"{record.value}@{record.timestamp}")

    def flush(self, now: int) -> None:
        with self.store.all() as entries:
            pending = list(entries)
        for entry in pending:
            self.context.forward(Record(entry.key, entry.value, now))
            self.store.delete(entry.key)


def _window_key(key: Windowed, value: int) -> KeyValue:
    return KeyValue(f"{key.key}@{key.window.start}", value)


def everything(topics: Topics) -> Topology:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("buffer"), S, S))
    events = builder.stream(topics.events, Consumed(S, S))
    table = builder.table(topics.table, Consumed(S, S), Materialized("table-store"))

    events.filter(lambda k, v: not v.startswith("x")).map_values(lambda v: v.upper()).to(
        topics.out("mapped"), Produced(S, S))
    events.group_by_key().count(Materialized("counts")).to_stream().to(topics.out("count"), Produced(S, L))
    (events.group_by(lambda k, v: v[:1], Grouped(S, S))
     .aggregate(lambda: "", lambda k, v, agg: (agg + "," + v)[-40:], Materialized("by-value", S, S))
     .to_stream().to(topics.out("by-value"), Produced(S, S)))
    (events.group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=10), timedelta(milliseconds=5)))
     .count(Materialized("windowed-counts"))
     .to_stream().map(_window_key).to(topics.out("windowed"), Produced(S, L)))
    events.join(table, lambda v, t: f"{v}+{t}").to(topics.out("joined"), Produced(S, S))
    events.process(BufferUntilPunctuation, "buffer").to(topics.out("flushed"), Produced(S, S))
    routed_a, routed_b = topics.out("routed-a"), topics.out("routed-b")  # topics the plan does not know
    events.to(lambda k, v, ctx: routed_a if v < "y" else routed_b, Produced(S, S))
    return builder.build()


def wordcount(topics: Topics) -> Topology:
    """The seed's WordCount: split lines on spaces, count per word after a repartition."""
    builder = StreamsBuilder()
    (builder.stream(topics.events, Consumed(S, S))
     .flat_map_values(lambda line: line.split())
     .group_by(lambda _key, word: word, Grouped(S, S))
     .count(Materialized("counts"))
     .to_stream().to(topics.out("count"), Produced(S, L)))
    return builder.build()


class TickEveryHalfSecond(Processor):
    """Counts records per task in a store and, every 500 ms of wall-clock time, forwards the count."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store: Any = context.get_state_store("seen")
        context.schedule(timedelta(milliseconds=500), PunctuationType.WALL_CLOCK_TIME, self.tick)

    def process(self, record: Record) -> None:
        self.store.put("n", (self.store.get("n") or 0) + 1)

    def tick(self, now: int) -> None:
        self.context.forward(Record("ticks", self.store.get("n") or 0, now))


def wall_clock(topics: Topics) -> Topology:
    topology = Topology()
    topology.add_source("src", topics.events, key_deserializer=S.deserializer, value_deserializer=S.deserializer)
    topology.add_processor("tick", TickEveryHalfSecond, "src")
    topology.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("seen"), S, L), "tick")
    topology.add_sink("out", topics.out("ticks"), "tick", key_serializer=S.serializer, value_serializer=L.serializer)
    return topology
