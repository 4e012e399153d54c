"""The node graph of a `StreamTask`: its sub-topology's sources, processors and sinks, built once per task.

`build_nodes` runs when a task is created, never per record: it makes one node per node spec of the
sub-topology, gives each the serdes it names or the configured defaults (failing with `ConfigError` when
neither is there) and the application's config to the serdes that take it (`configure_from_application`,
for its sources, sinks and stores), wires the nodes to their children and to the task (a processor's context and error
handler, a sink's serialization error handler), and registers each source under its topics.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from streamlet.actors.processor_context import NodeContext
from streamlet.actors.processor_node import DynamicSinkNode, Node, ProcessorNode, SinkNode, SourceNode
from streamlet.config import StreamsConfig
from streamlet.error_remedies import missing_serde_remedy
from streamlet.errors import ConfigError
from streamlet.serdes import Deserializer, InnerDefaulted, KeyDefaulted, Serializer, configure_from_application
from streamlet.topology import ProcessorSpec, SinkSpec, SourceSpec

if TYPE_CHECKING:
    from streamlet.actors.stream_task import StreamTask

_record_ctx_of = attrgetter("record_ctx")


def _serde(config: StreamsConfig, which: str, node: str) -> Any:
    serde = config.default_key_serde() if which == "key" else config.default_value_serde()
    if serde is None:
        raise ConfigError(
            f"node {node!r} has no {which} serde and default.{which}.serde is not configured: "
            f"{missing_serde_remedy(which)}"
        )
    return serde


def _fill_defaults(config: StreamsConfig, value_serde: Serializer[Any] | Deserializer[Any], node: str) -> None:
    """A wrapper with no inner serde given (a table grouping's Change serde, a foreign-key join's
    subscriptions and responses) takes the default; one with a serde from upstream needs none."""
    if isinstance(value_serde, InnerDefaulted) and value_serde.inner is None:
        value_serde.use_default_inner(_serde(config, "value", node))
    if isinstance(value_serde, KeyDefaulted) and value_serde.inner is None:
        value_serde.use_default_key(_serde(config, "key", node))


def _default_extractor(config: StreamsConfig) -> Any:
    extractor = config.get("default.timestamp.extractor")
    if extractor is None:
        return None
    return extractor() if isinstance(extractor, type) else extractor


def build_nodes(task: StreamTask, resolve_topic: Callable[[str], str]) -> None:
    """Fill `task.nodes` (and `task.sources_by_topic`) with the nodes of the task's sub-topology."""
    topo, config = task.topology, task.config
    for name in task.subtopology.nodes:
        spec = topo.nodes[name]
        node: Node
        if isinstance(spec, SourceSpec):
            kd: Deserializer[Any] = spec.key_deserializer or _serde(config, "key", name).deserializer
            vd: Deserializer[Any] = spec.value_deserializer or _serde(config, "value", name).deserializer
            _fill_defaults(config, vd, name)
            configure_from_application(kd, config, True)
            configure_from_application(vd, config, False)
            extractor = spec.timestamp_extractor or _default_extractor(config)
            topics = [resolve_topic(t) for t in spec.topics]
            node = SourceNode(name, topics, kd, vd, extractor)
            node.task = task
            for t in topics:
                task.sources_by_topic[t] = node
        elif isinstance(spec, ProcessorSpec):
            processor = spec.supplier()
            node = ProcessorNode(name, processor, list(spec.stores))
            node.context = NodeContext(task, node)
            node.on_error = task._on_node_error
        else:
            assert isinstance(spec, SinkSpec)
            ks: Serializer[Any] = spec.key_serializer or _serde(config, "key", name).serializer
            vs: Serializer[Any] = spec.value_serializer or _serde(config, "value", name).serializer
            _fill_defaults(config, vs, name)
            configure_from_application(ks, config, True)
            configure_from_application(vs, config, False)
            if spec.topic_extractor is not None:
                node = DynamicSinkNode(name, spec.topic_extractor, ks, vs, spec.partitioner, task.collector,
                                       partial(_record_ctx_of, task))  # no Python frame: asked per record
            else:
                node = SinkNode(name, resolve_topic(spec.topic), ks, vs, spec.partitioner, task.collector)
            node.on_serialization_error = task._on_serialization_error
        task.nodes[name] = node
    for store_name in task.subtopology.stores:
        builder = topo.store_builders.get(store_name)
        configure_from_application(getattr(builder, "key_serde", None), config, True)
        configure_from_application(getattr(builder, "value_serde", None), config, False)
    for name in task.subtopology.nodes:
        task.nodes[name].children = [task.nodes[c] for c in topo.children[name]]
    for node in task.nodes.values():
        if len(node.children) > 1:
            for child in node.children:
                if isinstance(child, SinkNode):
                    child.task = task  # frees the consumed bytes for its later siblings (`raw_after`)
