"""The DSL's logical graph: what `StreamsBuilder` records until `build()` writes it into a `Topology`.

Kafka Streams, too, records a graph first and writes it at `build()`. The order of writing matters
beyond taste: it is the order nodes enter the `Topology`, which numbers the sub-topologies and
breaks ties in `describe()`. Nodes are written in creation order, which is Kafka Streams' order
(its build queue is keyed by creation index and parents are always created before their children).
Writing late also lets choices made by later operations (materializing a source table, sending old
values) take effect on earlier nodes.
"""

from __future__ import annotations

from collections.abc import Callable

from streamlet.dsl.naming import NameGenerator
from streamlet.stores.api import StoreBuilder
from streamlet.topology import Topology

Writer = Callable[[Topology, list[str]], None]
"""Writes one graph node into the topology, given the topology names of its parents."""


class GraphNode:
    """One logical DSL step: its children attach to the topology node called `node_name`.

    `left_join` marks the nodes a repartition's null-key filter looks for downstream.
    """

    def __init__(self, node_name: str, writer: Writer) -> None:
        self.node_name = node_name
        self.writer = writer
        self.parents: list[GraphNode] = []
        self.left_join = False

    def __repr__(self) -> str:
        return f"GraphNode({self.node_name!r})"


class InternalBuilder:
    """Shared by a `StreamsBuilder` and every stream and table made from it."""

    def __init__(self) -> None:
        self.names = NameGenerator()
        self.nodes: list[GraphNode] = []
        self.state_stores: list[StoreBuilder] = []

    def add(self, node: GraphNode, *parents: GraphNode) -> GraphNode:
        """Record `node` under `parents`; adding a node again (a shared repartition) only links it."""
        for parent in parents:
            if parent not in node.parents:
                node.parents.append(parent)
        if not any(existing is node for existing in self.nodes):
            self.nodes.append(node)
        return node

    def feeds_a_left_join(self, start: GraphNode) -> bool:
        """True if a left join is downstream of `start` (through other repartitions too)."""
        children: dict[int, list[GraphNode]] = {}
        for node in self.nodes:
            for parent in node.parents:
                children.setdefault(id(parent), []).append(node)
        stack, seen = list(children.get(id(start), [])), set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.left_join:
                return True
            stack.extend(children.get(id(node), []))
        return False

    def write(self) -> Topology:
        topology = Topology()
        for store in self.state_stores:
            topology.add_state_store(store)
        for node in self.nodes:
            node.writer(topology, [parent.node_name for parent in node.parents])
        return topology
