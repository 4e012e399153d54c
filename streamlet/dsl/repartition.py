"""Repartitioning: filter -> sink -> internal topic -> source, as Kafka Streams inserts it.

After a key change, records with equal new keys may sit in different partitions; a grouping (or an
explicit `repartition()`) must route them through a topic keyed by the new key first. That topic is
internal: registered unprefixed here, and named `<application.id>-<prefix>-repartition` by the
runtime. The nodes are named after the topic when the prefix was user-given, and generated
otherwise; three indexes are used up either way, as in Kafka Streams. The filter in front of the
sink drops records with a null key, unless a left join (which joins a null key with nothing) is
downstream of the repartition, as Kafka Streams 3.9 does (found by the differential suite, which
reads the repartition topics).
"""

from __future__ import annotations

from typing import Any

from streamlet.dsl import naming
from streamlet.dsl.graph import GraphNode, InternalBuilder
from streamlet.dsl.processors.stateless import DropNullKeys, PassThrough
from streamlet.processor import RecordTimestampExtractor
from streamlet.serdes import Serde
from streamlet.topology import InternalTopicSpec, StreamPartitioner, Topology


def repartition_topic_name(prefix: str) -> str:
    suffix = naming.REPARTITION_TOPIC_SUFFIX
    return prefix if prefix.endswith(suffix) else prefix + suffix


def repartition_node(
    builder: InternalBuilder,
    prefix: str,
    key_serde: Serde[Any] | None,
    value_serde: Serde[Any] | None,
    partitioner: StreamPartitioner | None = None,
    num_partitions: int | None = None,
) -> GraphNode:
    """A (not yet added) graph node for a repartition; its children attach to the new source."""
    topic = repartition_topic_name(prefix)
    names = builder.names
    generated_sink = names.processor_name(naming.SINK)
    generated_filter = names.processor_name(naming.FILTER)
    generated_source = names.processor_name(naming.SOURCE)
    if naming.is_generated(prefix):
        sink, filter_name, source = generated_sink, generated_filter, generated_source
        names.implicit_repartitions.append(topic)
    else:
        sink, filter_name, source = f"{topic}-sink", f"{topic}-filter", f"{topic}-source"

    def write(topology: Topology, parents: list[str]) -> None:
        topology.add_internal_topic(InternalTopicSpec(topic, "repartition", num_partitions=num_partitions))
        keep_null_keys = builder.feeds_a_left_join(node)
        topology.add_processor(filter_name, PassThrough if keep_null_keys else DropNullKeys, *parents)
        topology.add_sink(
            sink, topic, filter_name,
            key_serializer=None if key_serde is None else key_serde.serializer,
            value_serializer=None if value_serde is None else value_serde.serializer,
            partitioner=partitioner,
        )
        # Internal topics always use the record's own timestamp, whatever the default extractor is.
        topology.add_source(
            source, topic,
            key_deserializer=None if key_serde is None else key_serde.deserializer,
            value_deserializer=None if value_serde is None else value_serde.deserializer,
            timestamp_extractor=RecordTimestampExtractor(),
        )

    node = GraphNode(source, write)
    return node
