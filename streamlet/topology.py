"""`Topology`: the processor graph as inspectable, typed node specs.

A topology is data, not code to run: source, processor and sink specs with their edges, the stores
and which processors use them, and the internal topics the DSL asked for. The runtimes
(`streamlet.runtime`: the asyncio actors, the test driver, Spark) instantiate it per task.

Sub-topologies are the connected components of the graph, where a shared state store also connects
two processors; they are numbered as Kafka Streams numbers them (components ordered by the sorted
names of their source nodes), so `describe()` and task ids match a Java app's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamlet.errors import ConfigError, TopologyError
from streamlet.offset_reset import AutoOffsetReset
from streamlet.processor import Processor, ProcessorSupplier, TimestampExtractor
from streamlet.serdes import Deserializer, Serializer
from streamlet.topology_description import TopologyDescription
from streamlet.topology_specs import (
    InternalTopicSpec,
    NodeSpec,
    ProcessorSpec,
    SinkSpec,
    SourceSpec,
    StreamPartitioner,
    SubTopology,
    TopicExtractor,
)

if TYPE_CHECKING:
    from streamlet.stores.api import StoreBuilder


class Topology:
    """A processor graph built with the Processor API (or by `StreamsBuilder.build()`)."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeSpec] = {}
        self.children: dict[str, list[str]] = {}
        self.store_builders: dict[str, StoreBuilder] = {}
        self.store_users: dict[str, list[str]] = {}
        self.internal_topics: dict[str, InternalTopicSpec] = {}
        self.copartition_groups: list[tuple[str, ...]] = []
        """Node names whose source topics must be co-partitioned (the two inputs of each DSL join)."""
        self.global_stores: dict[str, str] = {}
        """Global store name -> the topic it is kept from (`add_global_store`)."""
        self.dsl_default_stores: dict[str, Callable[[], StoreBuilder]] = {}
        """DSL stores that follow the application's `dsl.store.suppliers.class`, each with how to build it
        again (`streamlet.dsl.store_suppliers`); empty for a Processor API topology."""
        self._sub_topologies: list[SubTopology] | None = None
        self._global_sub_topologies: list[SubTopology] = []

    # -- building -------------------------------------------------------------------------------
    def _add(self, spec: NodeSpec) -> None:
        if not spec.name:
            raise TopologyError("a node needs a non-empty name")
        if spec.name in self.nodes:
            raise TopologyError(f"a node named {spec.name!r} is already in the topology")
        parents = [] if isinstance(spec, SourceSpec) else spec.parents
        for parent in parents:
            if parent == spec.name:
                raise TopologyError(f"node {spec.name!r} cannot be its own parent")
            if parent not in self.nodes:
                raise TopologyError(f"parent {parent!r} of {spec.name!r} is not in the topology")
            if isinstance(self.nodes[parent], SinkSpec):
                raise TopologyError(f"sink {parent!r} cannot have children ({spec.name!r})")
        self.nodes[spec.name] = spec
        self.children[spec.name] = []
        for parent in parents:
            self.children[parent].append(spec.name)
        self._sub_topologies = None

    def add_source(
        self,
        name: str,
        *topics: str,
        key_deserializer: Deserializer[Any] | None = None,
        value_deserializer: Deserializer[Any] | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
        offset_reset: AutoOffsetReset | str | None = None,
    ) -> Topology:
        """Add a source node named `name` reading `topics`, with optional deserializers (else the configured
        default serdes), a timestamp extractor and an offset reset policy for these topics (an
        `AutoOffsetReset` or its words, see there; else `auto.offset.reset`). Returns the topology, for
        chaining, as every `add_*` does."""
        if not topics:
            raise TopologyError(f"source {name!r} needs at least one topic")
        for spec in self.nodes.values():
            if isinstance(spec, SourceSpec):
                clash = set(spec.topics) & set(topics)
                if clash:
                    raise TopologyError(f"topic {sorted(clash)[0]!r} is already read by source {spec.name!r}")
        try:
            policy = None if offset_reset is None else AutoOffsetReset.parse(offset_reset)
        except ConfigError as exc:
            raise TopologyError(f"source {name!r}: {exc}") from None
        self._add(SourceSpec(name, list(topics), key_deserializer, value_deserializer, timestamp_extractor, policy))
        return self

    def offset_reset_policies(self) -> dict[str, AutoOffsetReset]:
        """The reset policy each source topic was given (topics without one are absent)."""
        return {topic: spec.offset_reset for spec in self.nodes.values()
                if isinstance(spec, SourceSpec) and spec.offset_reset is not None for topic in spec.topics}

    def add_processor(self, name: str, supplier: ProcessorSupplier, *parent_names: str) -> Topology:
        """Add a processor node fed by `parent_names`. `supplier` makes a new `Processor` per task (a class, or a
        function returning a new instance); one shared instance would mix the state of all tasks."""
        if not parent_names:
            raise TopologyError(f"processor {name!r} needs at least one parent")
        if not callable(supplier):
            raise TopologyError(f"the supplier of processor {name!r} is not callable")
        if isinstance(supplier, Processor):
            raise TopologyError(
                f"processor {name!r}: pass a supplier (a class or a function returning a NEW processor), "
                "not a processor instance"
            )
        self._add(ProcessorSpec(name, supplier, list(parent_names)))
        return self

    def add_sink(
        self,
        name: str,
        topic: str | TopicExtractor,
        *parent_names: str,
        key_serializer: Serializer[Any] | None = None,
        value_serializer: Serializer[Any] | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> Topology:
        """Add a sink node writing what its parents forward to `topic`, with optional serializers and a
        `StreamPartitioner` (else partitions as Java's default partitioner does: murmur2 of the key
        bytes). `topic` may be a `TopicNameExtractor` (or a callable `(key, value, record_context) ->
        topic`): each record then goes to the topic it names, which must exist."""
        if not parent_names:
            raise TopologyError(f"sink {name!r} needs at least one parent")
        if isinstance(topic, str):
            if not topic:
                raise TopologyError(f"sink {name!r} needs a topic name")
            spec = SinkSpec(name, topic, list(parent_names), key_serializer, value_serializer, partitioner)
        elif callable(topic):
            spec = SinkSpec(name, "", list(parent_names), key_serializer, value_serializer, partitioner, topic)
        else:
            raise TopologyError(f"sink {name!r}: the topic must be a name or a TopicNameExtractor, got {topic!r}")
        self._add(spec)
        return self

    def add_state_store(self, store_builder: StoreBuilder, *processor_names: str) -> Topology:
        """Add the store `store_builder` builds (one instance per task) and connect it to `processor_names`, which
        reach it through `context.get_state_store(name)`."""
        name = store_builder.name
        if name in self.store_builders and self.store_builders[name] is not store_builder:
            raise TopologyError(f"a state store named {name!r} is already in the topology")
        self.store_builders[name] = store_builder
        self.store_users.setdefault(name, [])
        if processor_names:
            self.connect_processor_and_state_stores(processor_names[0], name)
            for proc in processor_names[1:]:
                self.connect_processor_and_state_stores(proc, name)
        return self

    def connect_processor_and_state_stores(self, processor_name: str, *store_names: str) -> Topology:
        """Give processor `processor_name` access to stores already added to the topology (stores shared by several
        processors must be in the same sub-topology)."""
        spec = self.nodes.get(processor_name)
        if not isinstance(spec, ProcessorSpec):
            raise TopologyError(f"{processor_name!r} is not a processor of this topology")
        for store in store_names:
            if store not in self.store_builders:
                raise TopologyError(f"state store {store!r} is not in the topology")
            if store not in spec.stores:
                spec.stores.append(store)
                self.store_users[store].append(processor_name)
        self._sub_topologies = None
        return self

    def add_global_store(
        self,
        store_builder: StoreBuilder,
        source_name: str,
        topic: str,
        processor_name: str,
        supplier: ProcessorSupplier,
        *,
        key_deserializer: Deserializer[Any] | None = None,
        value_deserializer: Deserializer[Any] | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> Topology:
        """Add a global store: every instance keeps a full copy of `topic` (all partitions) in it, through the
        processor `supplier` makes (which puts the records it gets into the store and forwards nothing).
        The topic is the store's changelog, so the store must not be change-logged
        (`with_logging_disabled()`, as Kafka Streams requires). Any processor of the topology can read it
        with `context.get_state_store(name)` without being connected to it."""
        name = store_builder.name
        if store_builder.logging_enabled:
            raise TopologyError(f"StateStore {name} for global table must not have logging enabled.")
        if name in self.store_builders:
            raise TopologyError(f"a state store named {name!r} is already in the topology")
        self.add_source(source_name, topic, key_deserializer=key_deserializer,
                        value_deserializer=value_deserializer, timestamp_extractor=timestamp_extractor)
        self.add_processor(processor_name, supplier, source_name)
        self.add_state_store(store_builder, processor_name)
        self.global_stores[name] = topic
        self._sub_topologies = None
        return self

    def add_internal_topic(self, spec: InternalTopicSpec) -> None:
        """Declare a topic the application owns (repartition or changelog): the runtime creates it as
        `<application.id>-<name>` with the partition count it resolves. The DSL calls this;
        Processor-API users rarely need to."""
        self.internal_topics[spec.name] = spec

    def add_copartition_group(self, *node_names: str) -> None:
        """Require the source topics that feed `node_names` to be co-partitioned, as a join's inputs must be:
        the runtime refuses to start when they have different partition counts, and gives the repartition
        topics among them the partition count of the others (Kafka Streams' `copartitionSources`)."""
        for name in node_names:
            if name not in self.nodes:
                raise TopologyError(f"{name!r} is not a node of this topology")
        self.copartition_groups.append(tuple(node_names))

    def copartition_topic_groups(self) -> list[list[str]]:
        """Each co-partition group as the topics (named as in the topology) of the sources upstream of its nodes;
        groups that share a topic are one group (a stream joined twice: Kafka Streams' `copartitionGroups`)."""
        groups = []
        for names in self.copartition_groups:
            topics: list[str] = []
            stack, seen = list(names), set()
            while stack:
                name = stack.pop()
                if name in seen:
                    continue
                seen.add(name)
                spec = self.nodes[name]
                if isinstance(spec, SourceSpec):
                    topics.extend(t for t in spec.topics if t not in topics)
                else:
                    stack.extend(spec.parents)
            groups.append(set(topics))
        merged: list[set[str]] = []  # overlapping groups are one (Kafka Streams' transitive closure)
        for group in groups:
            for other in [m for m in merged if m & group]:
                merged.remove(other)
                group |= other
            merged.append(group)
        return [sorted(group) for group in merged]

    # -- inspecting -----------------------------------------------------------------------------
    def parents_of(self, name: str) -> list[str]:
        """The names of the nodes that forward to node `name` (none for a source)."""
        spec = self.nodes[name]
        return [] if isinstance(spec, SourceSpec) else list(spec.parents)

    def sub_topologies(self) -> list[SubTopology]:
        """Connected components of the node graph, numbered as Kafka Streams numbers its node groups."""
        if self._sub_topologies is not None:
            return self._sub_topologies
        root: dict[str, str] = {n: n for n in self.nodes}

        def find(n: str) -> str:
            while root[n] != n:
                root[n] = root[root[n]]
                n = root[n]
            return n

        def unite(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                root[rb] = ra

        for name in self.nodes:
            for parent in self.parents_of(name):
                unite(parent, name)
        for users in self.store_users.values():
            for other in users[1:]:
                unite(users[0], other)

        # Kafka Streams (3.x) numbers node groups in the order their first node was added, which is
        # what makes a DSL topology's sub-topology ids follow the order the application wrote it.
        group_of_root: dict[str, int] = {}
        for name in self.nodes:
            group_of_root.setdefault(find(name), len(group_of_root))
        members: dict[int, list[str]] = {gid: [] for gid in group_of_root.values()}
        for name in self.nodes:
            members[group_of_root[find(name)]].append(name)

        global_topics = set(self.global_stores.values())
        result: list[SubTopology] = []
        global_result: list[SubTopology] = []
        for gid in sorted(members):
            names = members[gid]
            topics: list[str] = []
            sinks: list[str] = []
            stores: list[str] = []
            for n in names:
                spec = self.nodes[n]
                if isinstance(spec, SourceSpec):
                    topics.extend(spec.topics)
                elif isinstance(spec, SinkSpec):
                    if spec.topic_extractor is None:  # a dynamic sink's topics are known only at run time
                        sinks.append(spec.topic)
                else:
                    stores.extend(s for s in spec.stores if s not in stores)
            sub = SubTopology(gid, names, topics, sinks, stores)
            # Kafka Streams numbers a global store's node group with the others but makes no tasks of it.
            (global_result if global_topics & set(topics) else result).append(sub)
        self._sub_topologies = result
        self._global_sub_topologies = global_result
        return result

    def global_sub_topologies(self) -> list[SubTopology]:
        """The node groups of the global stores (a source and its processor each): no tasks, kept by the
        global thread of every instance."""
        self.sub_topologies()
        return self._global_sub_topologies

    def global_sub_topology(self) -> SubTopology | None:
        """Every global store's nodes as one group (what the global thread runs), or None without any."""
        subs = self.global_sub_topologies()
        if not subs:
            return None
        return SubTopology(-1, [n for s in subs for n in s.nodes], [t for s in subs for t in s.source_topics],
                           [], [st for s in subs for st in s.stores])

    def validate(self) -> None:
        """Checks that runtimes rely on; raised at `KafkaStreams(...)` / driver construction."""
        if not any(isinstance(s, SourceSpec) for s in self.nodes.values()):
            raise TopologyError("the topology has no source node")
        for name, users in self.store_users.items():
            if not users:
                raise TopologyError(f"state store {name!r} is not connected to any processor")

    def describe(self) -> TopologyDescription:
        """The topology's sub-topologies, nodes and stores; `str()` of the result is Kafka Streams' `describe()`
        text."""
        return TopologyDescription.of(self)

    def __repr__(self) -> str:
        return f"Topology({len(self.nodes)} nodes, {len(self.sub_topologies())} sub-topologies)"
