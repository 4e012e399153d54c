"""`KStream.split()`: route each record to the first branch whose predicate holds (Kafka Streams'
`BranchedKStream`).

`split(named)` adds the splitter (`KSTREAM-BRANCH-...` or the given name); each `branch(predicate,
branched)` adds a child named `<splitter><branch name or its 1-based index>`; `default_branch()` takes
the records no predicate took (its child is `<splitter><name or 0>`); a record is sent to one branch
at most. `default_branch()` / `no_default_branch()` return the branches by child name; a branch given a
function maps to what the function returned (dropped if None), one given a consumer is not returned.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from streamlet.dsl import naming
from streamlet.dsl.graph import GraphNode
from streamlet.dsl.options import Named, validate_name
from streamlet.dsl.processors.stateless import PassThrough
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.topology import Topology

if TYPE_CHECKING:
    from streamlet.dsl.kstream import KStream

Predicate = Callable[[Any, Any], Any]


class Branched:
    """How one branch is named and what becomes of it: `Branched.named(name)`,
    `Branched.with_function(fn, name=None)` (fn(stream) -> stream or None), `Branched.with_consumer(fn,
    name=None)` (fn(stream), the branch is not returned)."""

    def __init__(self, name: str | None = None, function: Callable[[KStream], KStream | None] | None = None,
                 consumer: Callable[[KStream], Any] | None = None) -> None:
        self.name = None if name is None else validate_name(name)
        self.function = function
        self.consumer = consumer

    @staticmethod
    def named(name: str) -> Branched:
        """A branch named `name` (its key in the dict `split()` returns is the split's prefix plus this name)."""
        return Branched(name)

    @staticmethod
    def with_function(function: Callable[[KStream], KStream | None], name: str | None = None) -> Branched:
        """A branch whose stream goes through `function`; what it returns (if not None) is the branch's stream in
        the result."""
        return Branched(name, function=function)

    @staticmethod
    def with_consumer(consumer: Callable[[KStream], Any], name: str | None = None) -> Branched:
        """A branch handed to `consumer` (which adds its own operations); it is not in the result."""
        return Branched(name, consumer=consumer)


class _Branch(Processor):
    def __init__(self, predicates: list[Predicate], children: list[str]) -> None:
        self._predicates = predicates
        self._children = children

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forward

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        for predicate, child in zip(self._predicates, self._children, strict=False):
            if predicate(key, value):
                self._forward(record, child)
                return
        if len(self._children) > len(self._predicates):  # the default branch
            self._forward(record, self._children[-1])


class BranchedKStream:
    """What `KStream.split()` returns; add branches, then end with `default_branch` or `no_default_branch`."""

    def __init__(self, source: KStream, named: Named | str | None) -> None:
        self._source = source
        builder = source._builder
        self._splitter = builder.names.name_or_generate(Named.resolve(named), naming.BRANCH)
        self._predicates: list[Predicate] = []
        self._children: list[str] = []
        self._branches: dict[str, KStream] = {}
        splitter, predicates, children = self._splitter, self._predicates, self._children

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(splitter, partial(_Branch, predicates, children), *parent_names)

        self._node = builder.add(GraphNode(self._splitter, write), source._node)

    def branch(self, predicate: Predicate, branched: Branched | None = None) -> BranchedKStream:
        """Records matching `predicate` (and no earlier branch's) go to this branch."""
        if not callable(predicate):
            raise TypeError(f"predicate must be callable, got {predicate!r}")
        self._predicates.append(predicate)
        self._create(branched or Branched(), len(self._predicates))
        return self

    def default_branch(self, branched: Branched | None = None) -> dict[str, KStream]:
        """Records no branch matched go to a last branch; returns the branches by name."""
        self._create(branched or Branched(), 0)
        return self._branches

    def no_default_branch(self) -> dict[str, KStream]:
        """Records no branch matched are dropped; returns the branches by name."""
        return self._branches

    def _create(self, branched: Branched, index: int) -> None:
        source, builder = self._source, self._source._builder
        child = self._splitter + (branched.name if branched.name is not None else str(index))
        self._children.append(child)
        builder.names.processor_name(naming.BRANCH)  # Kafka Streams uses up an index per branch

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(child, PassThrough, *parent_names)

        node = builder.add(GraphNode(child, write), self._node)
        stream = source._stream(child, node, source.key_serde, source.value_serde, source.repartition_required)
        if branched.function is not None:
            result = branched.function(stream)
            if result is not None:
                self._branches[child] = result
        elif branched.consumer is not None:
            branched.consumer(stream)
        else:
            self._branches[child] = stream
