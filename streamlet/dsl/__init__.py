"""The Kafka Streams DSL for streamlet: `StreamsBuilder`, `KStream`, `KTable`, `KGroupedStream` and options."""

from streamlet.dsl.builder import StreamsBuilder
from streamlet.dsl.change import Change
from streamlet.dsl.grouped_stream import KGroupedStream
from streamlet.dsl.kstream import KStream
from streamlet.dsl.ktable import KTable
from streamlet.dsl.options import Consumed, Grouped, Materialized, Named, Produced, Repartitioned

__all__ = [
    "Change",
    "Consumed",
    "Grouped",
    "KGroupedStream",
    "KStream",
    "KTable",
    "Materialized",
    "Named",
    "Produced",
    "Repartitioned",
    "StreamsBuilder",
]
