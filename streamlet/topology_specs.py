"""The parts a `Topology` is made of: its node specs (source, processor, sink), internal topics, sub-topologies.

Plain data, so that whatever reads a topology (its description, the runtimes, the Spark plan) can name
them without the `Topology` class, which builds on them. `streamlet.topology` re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streamlet.offset_reset import AutoOffsetReset
from streamlet.processor import ProcessorSupplier, TimestampExtractor
from streamlet.serdes import Deserializer, Serializer

StreamPartitioner = Callable[[str, Any, Any, int], int | None]
"""`partitioner(topic, key, value, num_partitions) -> partition` (None: the default partitioner)."""
TopicExtractor = Callable[[Any, Any, Any], str]
"""`extractor(key, value, record_context) -> topic`: a `TopicNameExtractor` or any such callable."""


@dataclass(eq=False)
class SourceSpec:
    name: str
    topics: list[str]
    key_deserializer: Deserializer[Any] | None = None
    value_deserializer: Deserializer[Any] | None = None
    timestamp_extractor: TimestampExtractor | None = None
    offset_reset: AutoOffsetReset | None = None


@dataclass(eq=False)
class ProcessorSpec:
    name: str
    supplier: ProcessorSupplier
    parents: list[str]
    stores: list[str] = field(default_factory=list)


@dataclass(eq=False)
class SinkSpec:
    name: str
    topic: str
    parents: list[str]
    key_serializer: Serializer[Any] | None = None
    value_serializer: Serializer[Any] | None = None
    partitioner: StreamPartitioner | None = None
    topic_extractor: TopicExtractor | None = None
    """Set for a sink that routes each record to the topic it names (`topic` is then empty)."""


NodeSpec = SourceSpec | ProcessorSpec | SinkSpec


@dataclass(eq=False)
class InternalTopicSpec:
    """A topic the application owns; its real name is `<application.id>-<name>`."""

    name: str
    kind: str  # "repartition" | "changelog"
    num_partitions: int | None = None  # None: derived from the sub-topology's source topics
    config: dict[str, str] = field(default_factory=dict)
    copartition: bool = False
    """Partitioned like the other source topics of the sub-topology that reads it, not like its writers (a
    foreign-key join's subscription and response topics, co-partitioned with a table as in Kafka Streams)."""


@dataclass(eq=False)
class SubTopology:
    """A connected component of the graph; one task per partition of its source topics."""

    id: int
    nodes: list[str]
    source_topics: list[str]  # as named in the topology (internal ones unprefixed)
    sink_topics: list[str]
    stores: list[str]
