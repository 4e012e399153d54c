"""`KStream`: an unbounded stream of records, and the stateless operations on it.

Each operation adds one node to the builder's graph and returns a new `KStream` for it. Besides
its node, a stream remembers what Kafka Streams tracks: the serdes known for its keys and values
(inherited by sinks and repartition topics when not given explicitly) and whether its key may have
changed since it was read (`map`, `flat_map`, `select_key`, `process`), in which case a later
grouping first repartitions by the new key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from streamlet.dsl import naming
from streamlet.dsl.branched import BranchedKStream
from streamlet.dsl.global_ktable import GlobalKTable
from streamlet.dsl.graph import GraphNode, InternalBuilder
from streamlet.dsl.grouped_stream import KGroupedStream
from streamlet.dsl.join_grace import BUFFER_SUFFIX, GRACE_NEEDS_VERSIONED, JoinBufferSpec, join_buffer_builder
from streamlet.dsl.join_windows import JoinWindows
from streamlet.dsl.ktable import KTable
from streamlet.dsl.materialize import (
    check_join_store_suppliers,
    is_versioned,
    stream_join_stores,
    timestamped_store_builder,
)
from streamlet.dsl.options import Grouped, Joined, Materialized, Named, Produced, Repartitioned, StreamJoined
from streamlet.dsl.printed import Printed
from streamlet.dsl.processors.fixed_key import FixedKeyProcessorAdapter
from streamlet.dsl.processors.stateless import (
    PassThrough,
    StreamFilter,
    StreamFlatMap,
    StreamFlatMapValues,
    StreamForeach,
    StreamMap,
    StreamMapValues,
    StreamPeek,
    StreamSelectKey,
)
from streamlet.dsl.processors.stream_stream_join import JoinWindowNode, StreamJoinSide, TimeTrackers
from streamlet.dsl.processors.stream_table_join import StreamTableJoinSupplier
from streamlet.dsl.processors.table import TableSourceSupplier
from streamlet.dsl.repartition import repartition_node
from streamlet.errors import TopologyError
from streamlet.processor import FixedKeyProcessor, FixedKeyProcessorSupplier, Processor, ProcessorSupplier
from streamlet.serdes import Serde
from streamlet.topology import TopicExtractor, Topology


def _check_callable(fn: Any, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"{what} must be callable, got {fn!r}")


def _check_supplier(supplier: Any, store_names: tuple[str, ...], kind: type, operation: str) -> None:
    if isinstance(supplier, kind):
        raise TopologyError(
            f"{operation}() needs a supplier (a {kind.__name__} subclass or a function returning a NEW processor), "
            "not a processor instance: each task gets its own processor"
        )
    _check_callable(supplier, "supplier")
    for store in store_names:
        if not isinstance(store, str):
            raise TypeError(f"store names must be strings, got {store!r}")


class KStream:
    """A stream of records: each record is an independent event (an insert), as Kafka Streams' `KStream`. Made by
    `StreamsBuilder.stream(...)` or by transforming another stream; every operation returns a new `KStream`
    (or a `KGroupedStream`/`KTable`) and adds nodes to the topology, processing nothing until the topology
    runs. Callables take `(key, value)`, or `value` alone for the `*_values` variants. An operation that
    changes the key (`map`, `select_key`, `flat_map`, `group_by`) marks the stream for repartitioning: a
    later grouping or join inserts a repartition topic, as in Kafka Streams."""
    def __init__(
        self,
        builder: InternalBuilder,
        name: str,
        key_serde: Serde[Any] | None,
        value_serde: Serde[Any] | None,
        repartition_required: bool,
        graph_node: GraphNode,
    ) -> None:
        self._builder = builder
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.repartition_required = repartition_required
        self._node = graph_node
        self._join_repartitions: dict[str, GraphNode] = {}

    def __repr__(self) -> str:
        return f"KStream({self.name!r})"

    # -- helpers -------------------------------------------------------------------------------------
    def _add_processor(self, name: str, supplier: ProcessorSupplier, parents: list[GraphNode] | None = None,
                       store_names: tuple[str, ...] = ()) -> GraphNode:
        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, supplier, *parent_names)
            if store_names:
                topology.connect_processor_and_state_stores(name, *store_names)

        return self._builder.add(GraphNode(name, write), *(parents or [self._node]))

    def _stream(self, name: str, node: GraphNode, key_serde: Serde[Any] | None, value_serde: Serde[Any] | None,
                repartition_required: bool) -> KStream:
        return KStream(self._builder, name, key_serde, value_serde, repartition_required, node)

    def _generate(self, named: Named | str | None, prefix: str) -> str:
        return self._builder.names.name_or_generate(Named.resolve(named), prefix)

    # -- stateless operations ------------------------------------------------------------------------
    def filter(self, predicate: Callable[[Any, Any], Any], named: Named | str | None = None) -> KStream:
        """Keep the records for which `predicate(key, value)` is true."""
        _check_callable(predicate, "predicate")
        name = self._generate(named, naming.FILTER)
        node = self._add_processor(name, partial(StreamFilter, predicate, False))
        return self._stream(name, node, self.key_serde, self.value_serde, self.repartition_required)

    def filter_not(self, predicate: Callable[[Any, Any], Any], named: Named | str | None = None) -> KStream:
        """Drop the records for which `predicate(key, value)` is true."""
        _check_callable(predicate, "predicate")
        name = self._generate(named, naming.FILTER)
        node = self._add_processor(name, partial(StreamFilter, predicate, True))
        return self._stream(name, node, self.key_serde, self.value_serde, self.repartition_required)

    def select_key(self, key_selector: Callable[[Any, Any], Any], named: Named | str | None = None) -> KStream:
        """New key `key_selector(key, value)`, same value; a later grouping repartitions."""
        _check_callable(key_selector, "key_selector")
        name = self._generate(named, naming.KEY_SELECT)
        node = self._add_processor(name, partial(StreamSelectKey, key_selector))
        return self._stream(name, node, None, self.value_serde, True)

    def map(self, mapper: Callable[[Any, Any], Any], named: Named | str | None = None) -> KStream:
        """`mapper(key, value)` returns the new `(key, value)`: a `KeyValue` or a 2-tuple."""
        _check_callable(mapper, "mapper")
        name = self._generate(named, naming.MAP)
        node = self._add_processor(name, partial(StreamMap, mapper))
        return self._stream(name, node, None, None, True)

    def map_values(self, mapper: Callable[[Any], Any], named: Named | str | None = None) -> KStream:
        """New value `mapper(value)`, same key (no repartition needed)."""
        _check_callable(mapper, "mapper")
        name = self._generate(named, naming.MAPVALUES)
        node = self._add_processor(name, partial(StreamMapValues, mapper))
        return self._stream(name, node, self.key_serde, None, self.repartition_required)

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[Any]], named: Named | str | None = None) -> KStream:
        """`mapper(key, value)` returns an iterable of `(key, value)` pairs."""
        _check_callable(mapper, "mapper")
        name = self._generate(named, naming.FLATMAP)
        node = self._add_processor(name, partial(StreamFlatMap, mapper))
        return self._stream(name, node, None, None, True)

    def flat_map_values(self, mapper: Callable[[Any], Iterable[Any]], named: Named | str | None = None) -> KStream:
        """`mapper(value)` returns an iterable of values, each sent with the record's key."""
        _check_callable(mapper, "mapper")
        name = self._generate(named, naming.FLATMAPVALUES)
        node = self._add_processor(name, partial(StreamFlatMapValues, mapper))
        return self._stream(name, node, self.key_serde, None, self.repartition_required)

    def peek(self, action: Callable[[Any, Any], Any], named: Named | str | None = None) -> KStream:
        """Call `action(key, value)` for each record and pass the record on unchanged."""
        _check_callable(action, "action")
        name = self._generate(named, naming.PEEK)
        node = self._add_processor(name, partial(StreamPeek, action))
        return self._stream(name, node, self.key_serde, self.value_serde, self.repartition_required)

    def foreach(self, action: Callable[[Any, Any], Any], named: Named | str | None = None) -> None:
        """Call `action(key, value)` for each record; the end of this branch."""
        _check_callable(action, "action")
        name = self._generate(named, naming.FOREACH)
        self._add_processor(name, partial(StreamForeach, action))

    def merge(self, other: KStream, named: Named | str | None = None) -> KStream:
        """Both streams' records in one stream (serdes are dropped: neither side's is known to fit)."""
        if not isinstance(other, KStream):
            raise TypeError(f"merge() takes a KStream, got {other!r}")
        if other._builder is not self._builder:
            raise TopologyError("cannot merge streams from different StreamsBuilders")
        name = self._generate(named, naming.MERGE)
        node = self._add_processor(name, PassThrough, parents=[self._node, other._node])
        return self._stream(name, node, None, None, self.repartition_required or other.repartition_required)

    # -- sinks and custom processors -----------------------------------------------------------------
    def to(self, topic: str | TopicExtractor, produced: Produced | None = None) -> None:
        """Write the stream to `topic`; serdes from `produced`, else the stream's, else the defaults.

        `topic` may be a `TopicNameExtractor`, or any callable `(key, value, record_context) -> topic`:
        each record then goes to the topic it names (which must exist), as Kafka Streams' `to(extractor)`.
        """
        if (isinstance(topic, str) and not topic) or (not isinstance(topic, str) and not callable(topic)):
            raise TopologyError(f"to() needs a topic name or a TopicNameExtractor, got {topic!r}")
        produced = produced or Produced()
        key_serde = produced.key_serde or self.key_serde
        value_serde = produced.value_serde or self.value_serde
        partitioner = produced.partitioner
        name = self._builder.names.name_or_generate(produced.name, naming.SINK)

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_sink(
                name, topic, *parent_names,
                key_serializer=None if key_serde is None else key_serde.serializer,
                value_serializer=None if value_serde is None else value_serde.serializer,
                partitioner=partitioner,
            )

        self._builder.add(GraphNode(name, write), self._node)

    def process(self, supplier: ProcessorSupplier, *store_names: str, named: Named | str | None = None) -> KStream:
        """Run a Processor API processor (a NEW one per task from `supplier`) with access to `store_names`.

        The stores must be added with `StreamsBuilder.add_state_store`. The processor may change
        keys, so a later grouping repartitions.
        """
        _check_supplier(supplier, store_names, Processor, "process")
        given = Named.resolve(named)
        # Kafka Streams generates a name (using an index) only when none is given, here.
        name = self._builder.names.processor_name(naming.PROCESSOR) if given is None else given
        node = self._add_processor(name, supplier, store_names=tuple(store_names))
        return self._stream(name, node, None, None, True)

    def process_values(self, supplier: FixedKeyProcessorSupplier, *store_names: str,
                       named: Named | str | None = None) -> KStream:
        """Run a `FixedKeyProcessor` (a NEW one per task from `supplier`) with access to `store_names`.

        As `process`, but the processor forwards `FixedKeyRecord`s, whose key is its input's: the key
        cannot change, so the stream keeps its key serde and needs no repartitioning (Kafka Streams'
        `processValues`). The value serde is not inherited.
        """
        _check_supplier(supplier, store_names, FixedKeyProcessor, "process_values")
        given = Named.resolve(named)
        name = self._builder.names.processor_name(naming.PROCESSVALUES) if given is None else given
        node = self._add_processor(name, partial(FixedKeyProcessorAdapter, supplier), store_names=tuple(store_names))
        return self._stream(name, node, self.key_serde, None, self.repartition_required)

    def print(self, printed: Printed) -> None:
        """Print each record, as a line `[label]: key, value` (see `Printed`); the end of this branch. For
        debugging: the output goes to standard output or a file, not to Kafka."""
        if not isinstance(printed, Printed):
            raise TypeError(f"print() takes a Printed, got {printed!r}")
        name = self._builder.names.name_or_generate(printed.name, naming.PRINTER)
        self._add_processor(name, printed.processor_supplier(self.name))

    def repartition(self, repartitioned: Repartitioned | None = None) -> KStream:
        """Route the stream through an internal topic keyed by the current key."""
        repartitioned = repartitioned or Repartitioned()
        names = self._builder.names
        prefix = repartitioned.name if repartitioned.name is not None else names.processor_name(naming.REPARTITION)
        value_serde = repartitioned.value_serde or self.value_serde
        key_serde = repartitioned.key_serde or self.key_serde
        # As in Kafka Streams, the topic's key serde is only the one given to repartition().
        node = repartition_node(self._builder, prefix, repartitioned.key_serde, value_serde,
                                repartitioned.partitioner, repartitioned.num_partitions)
        self._builder.add(node, self._node)
        return self._stream(node.node_name, node, key_serde, value_serde, False)

    def split(self, named: Named | str | None = None) -> BranchedKStream:
        """Route each record to the first of the branches added next whose predicate holds (see `Branched`)."""
        return BranchedKStream(self, named)

    def to_table(self, materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """The stream read as a changelog: the latest value per key, None deleting it (records without a
        key are dropped). Repartitions first if the key may have changed; keeps a store when
        `materialized` names one or a downstream operation needs it, as `StreamsBuilder.table` does."""
        names = self._builder.names
        name = names.name_or_generate(Named.resolve(named), naming.TOTABLE)
        materialized = materialized or Materialized()
        store_name = names.materialized_store_name(materialized.name, naming.TOTABLE, materialized.logging)
        materialized = materialized.copy(key_serde=materialized.key_serde or self.key_serde,
                                         value_serde=materialized.value_serde or self.value_serde)
        parent = self._node
        if self.repartition_required:
            parent = self._builder.add(
                repartition_node(self._builder, name, materialized.key_serde, materialized.value_serde), self._node)
        supplier = TableSourceSupplier(store_name, materialized.name)

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, supplier, *parent_names)
            if supplier.materialized:
                topology.add_state_store(timestamped_store_builder(materialized, store_name), name)

        node = self._builder.add(GraphNode(name, write), parent)
        return KTable(self._builder, name, materialized.key_serde, materialized.value_serde, materialized.name,
                      supplier, node, output_versioned=is_versioned(materialized))

    # -- grouping ------------------------------------------------------------------------------------
    def group_by_key(self, grouped: Grouped | None = None) -> KGroupedStream:
        """Group by the current key (repartitioning first if the key may have changed)."""
        grouped = grouped or Grouped(key_serde=self.key_serde, value_serde=self.value_serde)
        return KGroupedStream(self._builder, self.name, grouped, self.repartition_required, self._node)

    def group_by(self, key_selector: Callable[[Any, Any], Any], grouped: Grouped | None = None) -> KGroupedStream:
        """Group by `key_selector(key, value)`; the aggregation repartitions by the new key."""
        _check_callable(key_selector, "key_selector")
        grouped = grouped or Grouped(value_serde=self.value_serde)
        name = self._builder.names.name_or_generate(grouped.name, naming.KEY_SELECT)
        node = self._add_processor(name, partial(StreamSelectKey, key_selector))
        return KGroupedStream(self._builder, name, grouped, True, node)

    # -- joins ---------------------------------------------------------------------------------------
    def join(self, other: KTable | KStream | GlobalKTable, joiner: Callable[[Any, Any], Any],
             joined: Joined | JoinWindows | Callable[[Any, Any], Any] | None = None,
             stream_joined: StreamJoined | Named | str | None = None) -> KStream:
        """With a table: each record joined with the table's current row for its key,
        `joiner(value, table_value)`; records without a row (or with a null key or value) are dropped.
        With a stream and `JoinWindows`: each pair of records with equal keys whose times are within
        the windows, `joiner(value, other_value)`: a record at time t meets the other stream's records
        of `[t - before, t + after]`, kept in a window store per side (retaining duplicates) for the
        window plus the grace period; each joined record has the later of the two timestamps, and
        records with a None key or value are dropped. `stream_joined` (`StreamJoined`) names the join
        and its stores and gives their serdes.
        With a `GlobalKTable`: `join(global_table, key_selector, joiner, named=None)`, the row of
        `key_selector(key, value)` (no repartitioning); the joiner may take `(value, row)`, `(key, value,
        row)` or `(key, mapped_key, value, row)` (Kafka Streams 4.x's ValueJoinerWithStreamAndMappedKey)."""
        if isinstance(other, GlobalKTable):
            return self._join_global(other, joiner, joined, stream_joined, left=False)
        if isinstance(other, KStream):
            return self._join_stream(other, joiner, self._windows(joined), self._stream_joined(stream_joined),
                                     False, False)
        return self._join_table(other, joiner, self._joined(joined), left=False)

    def left_join(self, other: KTable | KStream | GlobalKTable, joiner: Callable[[Any, Any], Any],
                  joined: Joined | JoinWindows | Callable[[Any, Any], Any] | None = None,
                  stream_joined: StreamJoined | Named | str | None = None) -> KStream:
        """As `join`, but a record without a match is joined with None (with a stream: once its window
        has closed; records with a None value are dropped). With a `GlobalKTable`:
        `left_join(global_table, key_selector, joiner, named=None)`."""
        if isinstance(other, GlobalKTable):
            return self._join_global(other, joiner, joined, stream_joined, left=True)
        if isinstance(other, KStream):
            return self._join_stream(other, joiner, self._windows(joined), self._stream_joined(stream_joined),
                                     True, False)
        return self._join_table(other, joiner, self._joined(joined), left=True)

    def outer_join(self, other: KStream, joiner: Callable[[Any, Any], Any], windows: JoinWindows,
                   stream_joined: StreamJoined | None = None) -> KStream:
        """As `left_join` of streams, and the other stream's unmatched records too (`joiner(None, other_value)`)."""
        return self._join_stream(other, joiner, windows, stream_joined, True, True)

    @staticmethod
    def _joined(joined: Joined | JoinWindows | Callable[[Any, Any], Any] | None) -> Joined | None:
        if isinstance(joined, JoinWindows):
            raise TypeError("JoinWindows are for joining two streams; a stream-table join takes Joined options")
        if joined is not None and not isinstance(joined, Joined):
            raise TypeError(f"a stream-table join takes Joined options, got {joined!r}")
        return joined

    @staticmethod
    def _windows(windows: Any) -> Joined | JoinWindows | None:
        if windows is not None and not isinstance(windows, Joined | JoinWindows):
            raise TypeError(f"a stream-stream join needs JoinWindows, got {windows!r}")
        return windows

    @staticmethod
    def _stream_joined(options: Any) -> StreamJoined | None:
        if options is not None and not isinstance(options, StreamJoined):
            raise TypeError(f"a stream-stream join takes StreamJoined options, got {options!r}")
        return options

    def _join_global(self, table: GlobalKTable, key_selector: Callable[[Any, Any], Any], joiner: Any,
                     named: Any, left: bool) -> KStream:
        """Kafka Streams' KStreamImpl.globalTableJoin: one processor (named `KSTREAM-LEFTJOIN-n` for both
        kinds, as there) reading the global store; the stream keeps its key and is not repartitioned."""
        if table._builder is not self._builder:
            raise TopologyError("cannot join a stream and a global table from different StreamsBuilders")
        _check_callable(key_selector, "key_selector")
        _check_callable(joiner, "joiner")
        if named is not None and not isinstance(named, Named | str):
            raise TypeError(f"a global table join takes a Named (or a name), got {named!r}")
        name = self._generate(named, naming.LEFTJOIN)
        supplier = StreamTableJoinSupplier(table._value_getter_supplier(), joiner, left, key_selector)
        node = self._add_processor(name, supplier)
        node.left_join = left
        return self._stream(name, node, self.key_serde, None, self.repartition_required)

    def _join_stream(self, other: KStream, joiner: Callable[[Any, Any], Any], windows: Joined | JoinWindows | None,
                     stream_joined: StreamJoined | None, left_outer: bool, right_outer: bool) -> KStream:
        """Kafka Streams' KStreamImpl.doJoin + KStreamImplJoin.join: names, stores and wiring in its order."""
        if not isinstance(other, KStream):
            raise TypeError(f"a stream-stream join takes a KStream, got {other!r}")
        if not isinstance(windows, JoinWindows):
            raise TypeError(f"a stream-stream join needs JoinWindows, got {windows!r}")
        if other._builder is not self._builder:
            raise TopologyError("cannot join streams from different StreamsBuilders")
        _check_callable(joiner, "joiner")
        options = stream_joined or StreamJoined()
        names = self._builder.names
        base = options.name
        this, that = self, other
        if this.repartition_required:
            prefix = base + "-left" if base is not None else this.name
            this = this._repartitioned_for_join(Joined(options.key_serde, options.value_serde, name=prefix))
        if that.repartition_required:
            prefix = base + "-right" if base is not None else that.name
            that = that._repartitioned_for_join(Joined(options.key_serde, options.other_value_serde, name=prefix))
        this_suffix = "-outer-this-join" if right_outer else "-this-join"
        other_suffix = "-outer-other-join" if left_outer else "-other-join"
        this_windowed = names.suffixed_or_generate(base, "-this-windowed", naming.WINDOWED)
        other_windowed = names.suffixed_or_generate(base, "-other-windowed", naming.WINDOWED)
        this_generated = names.processor_name(naming.OUTERTHIS if right_outer else naming.JOINTHIS)
        other_generated = names.processor_name(naming.OUTEROTHER if left_outer else naming.JOINOTHER)
        this_join = this_generated if base is None else base + this_suffix
        other_join = other_generated if base is None else base + other_suffix
        merge = names.suffixed_or_generate(base, "-merge", naming.MERGE)
        store_base = options.store_name
        this_supplier, other_supplier = options.this_store_supplier, options.other_store_supplier
        check_join_store_suppliers(options, windows)
        this_store = this_supplier.name if this_supplier is not None else (
            (this_generated if store_base is None else store_base + this_suffix) + "-store")
        other_store = other_supplier.name if other_supplier is not None else (
            (other_generated if store_base is None else store_base + other_suffix) + "-store")
        outer_store = None
        if left_outer:
            shared_suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
            prefix_length = len(naming.OUTERTHIS if right_outer else naming.JOINTHIS)
            if this_supplier is not None and this_supplier.name:
                outer_store = this_supplier.name + shared_suffix + "-store"
            else:
                outer_store = (store_base + shared_suffix if store_base is not None
                               else naming.OUTERSHARED + this_generated[prefix_length:]) + "-store"
        if store_base is None:  # Kafka Streams' KStreamImplJoin records the generated store names
            generated = ((None if this_supplier else this_store), (None if other_supplier else other_store),
                         (None if this_supplier is not None and this_supplier.name else outer_store))
            for store in generated:
                if store is not None:
                    names.implicit_store(store, options.logging)
        trackers = TimeTrackers()
        w = windows
        this_side = StreamJoinSide(True, other_store, w.before_ms, w.after_ms, w.before_ms, w.after_ms, w.grace_ms,
                                   joiner, left_outer, outer_store, trackers)
        other_side = StreamJoinSide(False, this_store, w.after_ms, w.before_ms, w.before_ms, w.after_ms, w.grace_ms,
                                    joiner, right_outer, outer_store, trackers)
        this_parent, other_parent = this.name, that.name

        def write(topology: Topology, _parents: list[str]) -> None:

            topology.add_processor(this_windowed, partial(JoinWindowNode, this_store), this_parent)
            topology.add_processor(other_windowed, partial(JoinWindowNode, other_store), other_parent)
            topology.add_processor(this_join, this_side, this_windowed)
            topology.add_processor(other_join, other_side, other_windowed)
            topology.add_processor(merge, PassThrough, this_join, other_join)
            topology.add_copartition_group(this_parent, other_parent)
            this_builder, other_builder, outer_builder = stream_join_stores(
                options, windows, this_store, other_store, outer_store)
            topology.add_state_store(this_builder, this_windowed, other_join)
            topology.add_state_store(other_builder, other_windowed, this_join)
            if outer_builder is not None:
                topology.add_state_store(outer_builder, this_join, other_join)

        node = self._builder.add(GraphNode(merge, write), this._node, that._node)
        node.left_join = left_outer
        return self._stream(merge, node, options.key_serde, None, False)

    def _join_table(self, table: KTable, joiner: Callable[[Any, Any], Any], joined: Joined | None,
                    left: bool) -> KStream:
        """Kafka Streams' stream-table join: repartition the stream first if its key may have changed,
        then one processor that reads the table through its value getter. Reading the getter's stores
        connects the processor to them, which puts the stream's and the table's sources in one
        sub-topology: one task owns partition p
        of both topics (they must have equal partition counts, as in Kafka Streams)."""
        if not isinstance(table, KTable):
            raise TypeError(f"a stream-table join takes a KTable, got {table!r}")
        if table._builder is not self._builder:
            raise TopologyError("cannot join a stream and a table from different StreamsBuilders")
        _check_callable(joiner, "joiner")
        joined = joined or Joined()
        stream = self._repartitioned_for_join(joined) if self.repartition_required else self
        getter = table._value_getter_supplier()
        name = self._generate(joined.name, naming.LEFTJOIN if left else naming.JOIN)
        grace = joined.grace_period_ms
        buffer = None
        if grace is not None:
            if not table._is_versioned():
                raise TopologyError(GRACE_NEEDS_VERSIONED)
            buffer = JoinBufferSpec(name + BUFFER_SUFFIX, grace, joined.key_serde or stream.key_serde,
                                    joined.value_serde or stream.value_serde, name)
            if joined.name is None:  # Kafka Streams records the generated buffer name and its changelog
                self._builder.names.implicit_store(buffer.store_name, True)
        supplier = StreamTableJoinSupplier(getter, joiner, left, buffer=buffer)
        parent, table_node = stream._node, table._node

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, supplier, *parent_names)
            if buffer is not None:
                topology.add_state_store(join_buffer_builder(topology, buffer, getter.store_names), name)
            topology.connect_processor_and_state_stores(name, *getter.store_names)
            topology.add_copartition_group(name, table_node.node_name)

        node = self._builder.add(GraphNode(name, write), parent)
        node.left_join = left
        return self._stream(name, node, joined.key_serde or stream.key_serde, None, False)

    def _repartitioned_for_join(self, joined: Joined) -> KStream:
        """The stream routed through `<joined name or this node's name>-repartition`, created once per name.
        (Records without a key go through only if a left join reads it: see repartition.py.)"""
        prefix = joined.name if joined.name is not None else self.name
        key_serde = joined.key_serde or self.key_serde
        value_serde = joined.value_serde or self.value_serde
        node = repartition_node(self._builder, prefix, key_serde, value_serde)  # uses up its indexes either way
        node = self._join_repartitions.setdefault(prefix, node)
        self._builder.add(node, self._node)
        return self._stream(node.node_name, node, key_serde, value_serde, False)
