"""`TopologyDescription`: what `Topology.describe()` returns, printed exactly as Kafka Streams prints it.

Why exactly: people paste `describe()` output into visualizers, compare it between a Java app and its
streamlet port, and diff it in reviews. Kafka Streams 3.9.1 prints its sets in the iteration order of
Java collections, so matching it byte for byte means reproducing three Java details here:

- topic and store lists are `java.util.HashSet`s: iterated by hash bucket (`String.hashCode`
  spread and masked by the table size), ties in insertion order;
- a sub-topology lists its nodes sorted by the size of their sub-tree (descending), then by name;
- the `-->` / `<--` lists are `java.util.TreeSet`s filled *while* the sub-tree sizes are still being
  counted, so their order is that of a red-black tree whose keys changed after insertion. That is
  reproduced by replaying Kafka Streams' own sequence (nodes visited in `HashMap` order, each linked to
  its parents in turn) over a red-black tree with the same insertion and rebalancing rules.

The sub-topology ids are `Topology.sub_topologies()`'s, so `describe()` and task ids always agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from streamlet.topology_specs import NodeSpec, ProcessorSpec, SinkSpec, SourceSpec, SubTopology


class DescribedTopology(Protocol):
    """What a description reads of a `Topology` (which builds on this module, so it is named by its shape)."""

    nodes: dict[str, NodeSpec]

    def parents_of(self, name: str) -> list[str]: ...

    def sub_topologies(self) -> list[SubTopology]: ...

    def global_sub_topologies(self) -> list[SubTopology]: ...

# -- Java collection orders -----------------------------------------------------------------------


def java_string_hash(s: str) -> int:
    """`java.lang.String.hashCode()`: over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _bucket(s: str, capacity: int) -> int:
    h = java_string_hash(s) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def _table_size_for(n: int) -> int:
    size = 1
    while size < n:
        size <<= 1
    return size


def hash_capacity_grown(n: int) -> int:
    """Table size of a `new HashSet<>()` / `new HashMap<>()` after `n` adds (load factor 0.75)."""
    capacity = 16
    while n > capacity * 3 // 4:
        capacity <<= 1
    return capacity


def hash_capacity_copied(n: int) -> int:
    """Table size of `new HashSet<>(collection)` for a collection of `n` elements."""
    return _table_size_for(max(int(n / 0.75) + 1, 16))


def java_hash_order(items: Sequence[str], capacity: int) -> list[str]:
    """Iteration order of a Java hash set of distinct strings added in `items` order."""
    return [s for _, _, s in sorted((_bucket(s, capacity), i, s) for i, s in enumerate(items))]


def java_string_key(s: str) -> bytes:
    """Sort key equal to `String.compareTo` (UTF-16 code units, not code points)."""
    return s.encode("utf-16-be")


class _TreeNode:
    __slots__ = ("item", "left", "parent", "red", "right")

    def __init__(self, item: _Node, parent: _TreeNode | None) -> None:
        self.item = item
        self.left: _TreeNode | None = None
        self.right: _TreeNode | None = None
        self.parent = parent
        self.red = False


class JavaTreeSet:
    """`java.util.TreeSet` with a live comparator: insertion path and rebalancing as `TreeMap.put`.

    Only insertion and in-order iteration are needed. Because the comparator reads mutable state
    (sub-tree sizes), the iteration order depends on the shape of the tree, so the shape must be
    Java's: the red-black fix-up below follows the same cases in the same order.
    """

    def __init__(self, compare: Callable[[_Node, _Node], int]) -> None:
        self._compare = compare
        self._root: _TreeNode | None = None

    def add(self, item: _Node) -> None:
        t = self._root
        if t is None:
            self._root = _TreeNode(item, None)
            return
        while True:
            cmp = self._compare(item, t.item)
            if cmp == 0:
                return
            nxt = t.left if cmp < 0 else t.right
            if nxt is None:
                node = _TreeNode(item, t)
                if cmp < 0:
                    t.left = node
                else:
                    t.right = node
                self._fix_after_insertion(node)
                return
            t = nxt

    def __iter__(self) -> Iterator[_Node]:
        stack: list[_TreeNode] = []
        t = self._root
        while stack or t is not None:
            while t is not None:
                stack.append(t)
                t = t.left
            t = stack.pop()
            yield t.item
            t = t.right

    def __len__(self) -> int:
        return sum(1 for _ in self)

    # Red-black helpers in the style of java.util.TreeMap (None-safe accessors).
    @staticmethod
    def _is_red(p: _TreeNode | None) -> bool:
        return p is not None and p.red

    @staticmethod
    def _parent(p: _TreeNode | None) -> _TreeNode | None:
        return None if p is None else p.parent

    @staticmethod
    def _left(p: _TreeNode | None) -> _TreeNode | None:
        return None if p is None else p.left

    @staticmethod
    def _right(p: _TreeNode | None) -> _TreeNode | None:
        return None if p is None else p.right

    @staticmethod
    def _set_red(p: _TreeNode | None, red: bool) -> None:
        if p is not None:
            p.red = red

    def _rotate_left(self, p: _TreeNode | None) -> None:
        if p is None or p.right is None:
            return
        r = p.right
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            self._root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r

    def _rotate_right(self, p: _TreeNode | None) -> None:
        if p is None or p.left is None:
            return
        lft = p.left
        p.left = lft.right
        if lft.right is not None:
            lft.right.parent = p
        lft.parent = p.parent
        if p.parent is None:
            self._root = lft
        elif p.parent.right is p:
            p.parent.right = lft
        else:
            p.parent.left = lft
        lft.right = p
        p.parent = lft

    def _fix_after_insertion(self, x: _TreeNode | None) -> None:
        par, left, right = self._parent, self._left, self._right
        if x is not None:
            x.red = True
        while x is not None and x is not self._root and self._is_red(x.parent):
            if par(x) is left(par(par(x))):
                y = right(par(par(x)))
                if self._is_red(y):
                    self._set_red(par(x), False)
                    self._set_red(y, False)
                    self._set_red(par(par(x)), True)
                    x = par(par(x))
                else:
                    if x is right(par(x)):
                        x = par(x)
                        self._rotate_left(x)
                    self._set_red(par(x), False)
                    self._set_red(par(par(x)), True)
                    self._rotate_right(par(par(x)))
            else:
                y = left(par(par(x)))
                if self._is_red(y):
                    self._set_red(par(x), False)
                    self._set_red(y, False)
                    self._set_red(par(par(x)), True)
                    x = par(par(x))
                else:
                    if x is left(par(x)):
                        x = par(x)
                        self._rotate_right(x)
                    self._set_red(par(x), False)
                    self._set_red(par(par(x)), True)
                    self._rotate_left(par(par(x)))
        if self._root is not None:
            self._root.red = False


# -- the description ------------------------------------------------------------------------------


@dataclass(eq=False)
class _Node:
    """A node while its description is assembled; `size` counts the paths into its sub-tree."""

    name: str
    size: int = 1
    predecessors: JavaTreeSet = field(init=False)
    successors: JavaTreeSet = field(init=False)

    def __post_init__(self) -> None:
        self.predecessors = JavaTreeSet(_compare_nodes)
        self.successors = JavaTreeSet(_compare_nodes)


def _compare_nodes(a: _Node, b: _Node) -> int:
    """Kafka Streams' node order: bigger sub-tree first, then by name."""
    if a is b:
        return 0
    if a.size != b.size:
        return b.size - a.size
    ka, kb = java_string_key(a.name), java_string_key(b.name)
    return -1 if ka < kb else (1 if ka > kb else 0)


def _names(nodes: Iterable[NodeDescription]) -> str:
    names = [n.name for n in nodes]
    return ", ".join(names) if names else "none"


@dataclass(eq=False)
class NodeDescription:
    """A node of a sub-topology, with its neighbours in Kafka Streams' printing order."""

    name: str
    predecessors: list[NodeDescription] = field(default_factory=list, repr=False)
    successors: list[NodeDescription] = field(default_factory=list, repr=False)


@dataclass(eq=False)
class SourceDescription(NodeDescription):
    topics: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"Source: {self.name} (topics: [{', '.join(self.topics)}])\n      --> {_names(self.successors)}"


@dataclass(eq=False)
class ProcessorDescription(NodeDescription):
    stores: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"Processor: {self.name} (stores: [{', '.join(self.stores)}])\n"
            f"      --> {_names(self.successors)}\n      <-- {_names(self.predecessors)}"
        )


@dataclass(eq=False)
class SinkDescription(NodeDescription):
    topic: str = ""
    topic_extractor: Any = None
    """The sink's `TopicNameExtractor` when it routes records dynamically (`topic` is then empty)."""

    def __str__(self) -> str:
        if self.topic_extractor is not None:  # Kafka Streams prints the extractor's toString()
            return (f"Sink: {self.name} (extractor class: {self.topic_extractor})\n"
                    f"      <-- {_names(self.predecessors)}")
        return f"Sink: {self.name} (topic: {self.topic})\n      <-- {_names(self.predecessors)}"


@dataclass(eq=False)
class SubtopologyDescription:
    id: int
    nodes: list[NodeDescription]

    def __str__(self) -> str:
        body = "".join(f"    {node}\n" for node in self.nodes)
        return f"Sub-topology: {self.id}\n{body}\n"


@dataclass(eq=False)
class GlobalStoreDescription:
    """A global store's group: its source and the processor that keeps the store (no tasks are made of it)."""

    id: int
    source: NodeDescription
    processor: NodeDescription

    def __str__(self) -> str:
        return (f"Sub-topology: {self.id} for global store (will not generate tasks)\n"
                f"    {self.source}\n    {self.processor}\n")


@dataclass(eq=False)
class TopologyDescription:
    """The sub-topologies and global stores of a topology, printed in the order of their ids."""

    subtopologies: list[SubtopologyDescription]
    global_stores: list[GlobalStoreDescription] = field(default_factory=list)

    @classmethod
    def of(cls, topology: DescribedTopology) -> TopologyDescription:
        """Describe `topology` as Kafka Streams would (sub-topologies numbered and nodes named the same way)."""
        subs = [_describe_subtopology(topology, sub.id, sub.nodes) for sub in topology.sub_topologies()]
        stores = []
        for sub in topology.global_sub_topologies():
            described = _describe_subtopology(topology, sub.id, sub.nodes)
            source = next(n for n in described.nodes if isinstance(n, SourceDescription))
            processor = next(n for n in described.nodes if isinstance(n, ProcessorDescription))
            stores.append(GlobalStoreDescription(sub.id, source, processor))
        return cls(subs, stores)

    def __str__(self) -> str:
        parts: list[tuple[int, str]] = [(sub.id, str(sub)) for sub in self.subtopologies]
        parts += [(store.id, str(store)) for store in self.global_stores]
        return "Topologies:\n " + "".join(f"  {text}" for _, text in sorted(parts, key=lambda p: p[0]))


def _describe_subtopology(topology: DescribedTopology, sub_id: int, member_names: list[str]) -> SubtopologyDescription:
    order = {name: i for i, name in enumerate(topology.nodes)}
    insertion_ordered = sorted(member_names, key=order.__getitem__)
    # Kafka Streams walks the group's nodes in HashMap order and links each to its parents in turn.
    visit = java_hash_order(insertion_ordered, hash_capacity_grown(len(insertion_ordered)))
    nodes = {name: _Node(name) for name in insertion_ordered}

    def add_to_size(node: _Node, delta: int) -> None:
        node.size += delta
        for pred in node.predecessors:
            add_to_size(pred, delta)

    for name in visit:
        node = nodes[name]
        for parent_name in topology.parents_of(name):
            parent = nodes[parent_name]
            node.predecessors.add(parent)
            parent.successors.add(node)
            add_to_size(parent, node.size)

    described: dict[str, NodeDescription] = {}
    for name in insertion_ordered:
        spec = topology.nodes[name]
        if isinstance(spec, SourceSpec):
            topics = java_hash_order(spec.topics, hash_capacity_copied(len(spec.topics)))
            described[name] = SourceDescription(name, topics=topics)
        elif isinstance(spec, ProcessorSpec):
            stores = java_hash_order(spec.stores, hash_capacity_copied(len(spec.stores)))
            described[name] = ProcessorDescription(name, stores=stores)
        else:
            assert isinstance(spec, SinkSpec)
            described[name] = SinkDescription(name, topic=spec.topic, topic_extractor=spec.topic_extractor)
    for name, node in nodes.items():
        described[name].predecessors = [described[p.name] for p in node.predecessors]
        described[name].successors = [described[s.name] for s in node.successors]

    ordered = sorted(nodes.values(), key=lambda n: (-n.size, java_string_key(n.name)))
    return SubtopologyDescription(sub_id, [described[n.name] for n in ordered])


def groups(description: TopologyDescription) -> list[SubtopologyDescription]:
    """The sub-topologies, global stores' groups (a source and its processor) included, by id: what a drawing
    of the topology shows."""
    globals_ = [SubtopologyDescription(g.id, [g.source, g.processor]) for g in description.global_stores]
    return sorted([*description.subtopologies, *globals_], key=lambda s: s.id)


def node_kind(node: NodeDescription) -> str:
    """The node's kind as the drawings name it: source, processor or sink."""
    return "source" if isinstance(node, SourceDescription) else "sink" if isinstance(node, SinkDescription) \
        else "processor"
