"""`KTable`: a changelog stream seen as a table (latest value per key), and its operations.

A table operation forwards `Change(new, old)` updates (see change.py). Materialization follows
Kafka Streams: a table keeps a store only when it is named by `Materialized` (queryable) or, for a
source table, when a downstream node needs its old values; otherwise updates flow through without
a store.

A table is versioned (KIP-914) when it is kept in a versioned store, or when it is a filter or
mapping given no `Materialized` over a versioned table; a table given any other `Materialized` (even
one without a store name, which keeps no store), a join result, an aggregation or a suppression is
not: Kafka Streams decides it from the `Materialized` alone (`KTableImpl.maybeSetOutputVersioned`).
Downstream of a versioned table, table-table joins and groupings drop out-of-order updates, filters
forward every update, `suppress` is refused, and a stream joined with it meets each key's row as of
the stream record's time (Kafka Streams' rules).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, overload

from streamlet.dsl import naming
from streamlet.dsl.foreign_key_join import foreign_key_join
from streamlet.dsl.graph import GraphNode, InternalBuilder
from streamlet.dsl.materialize import is_versioned, timestamped_store_builder
from streamlet.dsl.options import Grouped, Materialized, Named
from streamlet.dsl.processors.aggregate import StreamAggregateSupplier, StreamReduceSupplier
from streamlet.dsl.processors.cogroup import CogroupMergeSupplier
from streamlet.dsl.processors.forwarding import TableToStream
from streamlet.dsl.processors.session_aggregate import SessionAggregateSupplier
from streamlet.dsl.processors.suppress import TableSuppressSupplier
from streamlet.dsl.processors.table import TableFilterSupplier, TableMapValuesSupplier, TableSourceSupplier
from streamlet.dsl.processors.table_aggregate import TableRepartitionMap
from streamlet.dsl.processors.table_join import (
    INNER,
    LEFT,
    OUTER,
    RIGHT,
    TableJoinMergerSupplier,
    TableJoinSupplier,
)
from streamlet.dsl.processors.value_getters import (
    DerivedValueGetterSupplier,
    JoinedValueGetterSupplier,
    StoreValueGetterSupplier,
    ValueGetterSupplier,
)
from streamlet.dsl.processors.window_aggregate import WindowAggregateSupplier
from streamlet.dsl.suppressed import Suppressed
from streamlet.dsl.table_joined import TableJoined
from streamlet.errors import TopologyError
from streamlet.serdes import Serde
from streamlet.stores.suppression.buffer import SuppressionBufferBuilder
from streamlet.topology import Topology

if TYPE_CHECKING:
    from streamlet.dsl.grouped_table import KGroupedTable
    from streamlet.dsl.kstream import KStream

TableSupplier = (
    TableSourceSupplier | StreamAggregateSupplier | StreamReduceSupplier | TableFilterSupplier
    | TableMapValuesSupplier | TableSuppressSupplier | TableJoinMergerSupplier | CogroupMergeSupplier
)


class KTable:
    """A changelog stream read as a table: each record is the latest value of its key (an upsert, None deletes), as
    Kafka Streams' `KTable`. Made by `StreamsBuilder.table(...)` or an aggregation; `filter`, `map_values`,
    `group_by`, `suppress` and `to_stream` derive new tables or streams. A table is backed by a state store
    when it is materialized (by name through `Materialized`, or because a join or query needs it)."""
    def __init__(
        self,
        builder: InternalBuilder,
        name: str,
        key_serde: Serde[Any] | None,
        value_serde: Serde[Any] | None,
        queryable_store_name: str | None,
        supplier: TableSupplier,
        graph_node: GraphNode,
        parent: KTable | None = None,
        output_versioned: bool | None = None,
    ) -> None:
        self._builder = builder
        self._parent = parent
        self._output_versioned = output_versioned  # None: as its parent (a storeless filter / map_values)
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._queryable_store_name = queryable_store_name
        self._supplier = supplier
        self._node = graph_node
        self._send_old_values = False

    def __repr__(self) -> str:
        return f"KTable({self.name!r})"

    @property
    def queryable_store_name(self) -> str | None:
        """The store name for interactive queries (`KafkaStreams.store`), if this table has one."""
        return self._queryable_store_name

    def _is_versioned(self) -> bool:
        """Whether this table's rows are versioned: kept in a versioned store, or computed without a
        store from a versioned table (Kafka Streams' `isVersionedOrVersionedUpstream`)."""
        table: KTable | None = self
        while table is not None:
            if table._output_versioned is not None:
                return table._output_versioned
            table = table._parent
        return False

    def _enable_sending_old_values(self, force_materialization: bool) -> bool:
        """Ask this table to send old values with each update; False if it cannot without a store."""
        if not self._send_old_values:
            supplier = self._supplier
            if isinstance(supplier, TableSourceSupplier):
                if not force_materialization and not supplier.materialized:
                    return False
                supplier.enable_sending_old_values()
            elif isinstance(supplier, StreamAggregateSupplier | StreamReduceSupplier):
                supplier.enable_sending_old_values()
            elif not supplier.enable_sending_old_values(force_materialization):
                return False
            self._send_old_values = True
        return True

    def _value_getter_supplier(self) -> ValueGetterSupplier:
        """How a join reads this table's rows, materializing a source table if needed.

        A table with a store is read from it; a `filter` / `map_values` without one reads through its
        parent and computes its value on the fly, as Kafka Streams' value getters do.
        """
        supplier = self._supplier
        if isinstance(supplier, WindowAggregateSupplier | SessionAggregateSupplier):
            raise TopologyError(f"cannot join with the windowed table {self.name!r}: its keys are Windowed")
        if isinstance(supplier, CogroupMergeSupplier):  # a cogroup is read from its shared store
            if supplier.windowed:
                raise TopologyError(f"cannot join with the windowed table {self.name!r}: its keys are Windowed")
            return StoreValueGetterSupplier(supplier.store_name)
        if isinstance(supplier, TableSourceSupplier):
            supplier.materialize()
            return StoreValueGetterSupplier(supplier.store_name)
        if isinstance(supplier, StreamAggregateSupplier | StreamReduceSupplier):
            return StoreValueGetterSupplier(supplier.store_name)
        if isinstance(supplier, TableSuppressSupplier):
            raise TopologyError(f"joining with the suppressed table {self.name!r} is not supported yet")
        if isinstance(supplier, TableJoinMergerSupplier):
            if supplier.queryable_name is not None:
                return StoreValueGetterSupplier(supplier.queryable_name)
            return supplier.view
        if supplier.queryable_name is not None:
            return StoreValueGetterSupplier(supplier.queryable_name)
        assert self._parent is not None, "a filter / map_values table knows its parent"
        return DerivedValueGetterSupplier(self._parent._value_getter_supplier(), supplier.compute)

    # -- operations ----------------------------------------------------------------------------------
    def filter(self, predicate: Callable[[Any, Any], Any], materialized: Materialized | None = None,
               named: Named | str | None = None) -> KTable:
        """Keep rows for which `predicate(key, value)` holds; other updates become tombstones."""
        return self._filter(predicate, False, materialized, named)

    def filter_not(self, predicate: Callable[[Any, Any], Any], materialized: Materialized | None = None,
                   named: Named | str | None = None) -> KTable:
        """Drop rows for which `predicate(key, value)` holds (their updates become tombstones)."""
        return self._filter(predicate, True, materialized, named)

    def _filter(self, predicate: Callable[[Any, Any], Any], negate: bool, materialized: Materialized | None,
                named: Named | str | None) -> KTable:
        if not callable(predicate):
            raise TypeError(f"predicate must be callable, got {predicate!r}")
        names = self._builder.names
        key_serde, value_serde, queryable = self.key_serde, self.value_serde, None
        if materialized is not None:
            if materialized.name is None:
                names.store_name(naming.KTABLE_FILTER)  # an index Kafka Streams uses up
            materialized = materialized.copy(key_serde=materialized.key_serde or self.key_serde,
                                             value_serde=materialized.value_serde or self.value_serde)
            key_serde, value_serde, queryable = materialized.key_serde, materialized.value_serde, materialized.name
        name = names.name_or_generate(Named.resolve(named), naming.KTABLE_FILTER)
        supplier = TableFilterSupplier(self._enable_sending_old_values, predicate, negate, queryable)
        supplier.versioned_semantics = self._is_versioned()
        node = self._add_table_processor(name, supplier, materialized if queryable else None, queryable)
        return KTable(self._builder, name, key_serde, value_serde, queryable, supplier, node, parent=self,
                      output_versioned=_output_versioned(materialized))

    def map_values(self, mapper: Callable[[Any], Any], materialized: Materialized | None = None,
                   named: Named | str | None = None) -> KTable:
        """New value `mapper(value)` per row; tombstones stay tombstones."""
        if not callable(mapper):
            raise TypeError(f"mapper must be callable, got {mapper!r}")
        names = self._builder.names
        key_serde, value_serde, queryable = self.key_serde, None, None
        if materialized is not None:
            if materialized.name is None:
                names.store_name(naming.KTABLE_MAPVALUES)  # an index Kafka Streams uses up
            materialized = materialized.copy(key_serde=materialized.key_serde or self.key_serde)
            key_serde, value_serde, queryable = materialized.key_serde, materialized.value_serde, materialized.name
        name = names.name_or_generate(Named.resolve(named), naming.KTABLE_MAPVALUES)
        supplier = TableMapValuesSupplier(self._enable_sending_old_values, mapper, queryable)
        node = self._add_table_processor(name, supplier, materialized if queryable else None, queryable)
        return KTable(self._builder, name, key_serde, value_serde, queryable, supplier, node, parent=self,
                      output_versioned=_output_versioned(materialized))

    # -- table-table joins ----------------------------------------------------------------------------
    @overload
    def join(self, other: KTable, joiner: Callable[[Any, Any], Any], materialized: Materialized | None = None,
             named: Named | str | None = None) -> KTable: ...

    @overload
    def join(self, other: KTable, foreign_key_extractor: Callable[..., Any], joiner: Callable[[Any, Any], Any],
             table_joined: TableJoined | None = None, materialized: Materialized | None = None) -> KTable: ...

    def join(self, other: KTable, *args: Any, **kwargs: Any) -> KTable:
        """A row for each key both tables have: `joiner(value, other_value)`; a delete on either side
        deletes the joined row.

        `join(other, foreign_key_extractor, joiner, table_joined=None, materialized=None)` is the
        foreign-key join: each row of this table joins the row of `other` whose key is
        `foreign_key_extractor(value)` (KIP-213; a row without a foreign key or without a match has
        no result). An extractor with two parameters is called `foreign_key_extractor(key, value)`
        (KIP-1104, Kafka Streams' `BiFunction` overload)."""
        fk = _foreign_key_call(args, kwargs)
        if fk is not None:
            return self._foreign_key_join(other, *fk, left=False)
        return self._join(other, *_equi_join_call(args, kwargs), False, False)

    @overload
    def left_join(self, other: KTable, joiner: Callable[[Any, Any], Any], materialized: Materialized | None = None,
                  named: Named | str | None = None) -> KTable: ...

    @overload
    def left_join(self, other: KTable, foreign_key_extractor: Callable[..., Any],
                  joiner: Callable[[Any, Any], Any], table_joined: TableJoined | None = None,
                  materialized: Materialized | None = None) -> KTable: ...

    def left_join(self, other: KTable, *args: Any, **kwargs: Any) -> KTable:
        """A row for each key of this table: `joiner(value, other_value or None)`.

        `left_join(other, foreign_key_extractor, joiner, table_joined=None, materialized=None)` is the
        foreign-key left join: every row of this table has a result, `joiner(value, None)` when its
        foreign key is None or has no row in `other`. The extractor may take `(key, value)`, as in
        `join`."""
        fk = _foreign_key_call(args, kwargs)
        if fk is not None:
            return self._foreign_key_join(other, *fk, left=True)
        return self._join(other, *_equi_join_call(args, kwargs), True, False)

    def _foreign_key_join(self, other: KTable, extractor: Callable[..., Any], joiner: Callable[[Any, Any], Any],
                          table_joined: TableJoined | None, materialized: Materialized | None, left: bool) -> KTable:
        return foreign_key_join(self, other, extractor, joiner, table_joined, materialized, left)

    def outer_join(self, other: KTable, joiner: Callable[[Any, Any], Any], materialized: Materialized | None = None,
                   named: Named | str | None = None) -> KTable:
        """A row for each key either table has: `joiner(value or None, other_value or None)`."""
        return self._join(other, joiner, materialized, named, True, True)

    def _join(self, other: KTable, joiner: Callable[[Any, Any], Any], materialized: Materialized | None,
              named: Named | str | None, left_outer: bool, right_outer: bool) -> KTable:
        """Kafka Streams' KTableImpl.doJoin: names, old values and value getters in its order."""
        if not isinstance(other, KTable):
            raise TypeError(f"a table-table join takes a KTable, got {other!r}")
        if other._builder is not self._builder:
            raise TopologyError("cannot join tables from different StreamsBuilders")
        if not callable(joiner):
            raise TypeError(f"joiner must be callable, got {joiner!r}")
        names = self._builder.names
        store_name = None
        if materialized is not None:
            store_name = names.materialized_store_name(materialized.name, naming.KTABLE_MERGE, materialized.logging)
            materialized = materialized.copy(key_serde=materialized.key_serde or self.key_serde)
        given = Named.resolve(named)
        merge_name = names.name_or_generate(given, naming.KTABLE_MERGE)
        if left_outer:
            self._enable_sending_old_values(True)
        if right_outer:
            other._enable_sending_old_values(True)
        this_view, other_view = self._value_getter_supplier(), other._value_getter_supplier()
        enable: list[Callable[[bool], bool]] = [self._enable_sending_old_values, other._enable_sending_old_values]
        kinds = (OUTER, OUTER) if right_outer else (LEFT, RIGHT) if left_outer else (INNER, INNER)
        join_this = TableJoinSupplier(kinds[0], other_view, joiner, enable)
        join_other = TableJoinSupplier(kinds[1], this_view, lambda a, b: joiner(b, a), enable)
        join_this.versioned_semantics, join_other.versioned_semantics = self._is_versioned(), other._is_versioned()
        this_name = names.suffixed_or_generate(given, "-join-this", naming.KTABLE_JOINTHIS)
        other_name = names.suffixed_or_generate(given, "-join-other", naming.KTABLE_JOINOTHER)
        view = JoinedValueGetterSupplier(this_view, other_view, joiner, kinds[0])
        merger = TableJoinMergerSupplier(join_this, join_other, store_name, view)
        this_parent, other_parent = self.name, other.name

        def write(topology: Topology, _parent_names: list[str]) -> None:
            topology.add_processor(this_name, join_this, this_parent)
            topology.add_processor(other_name, join_other, other_parent)
            topology.add_processor(merge_name, merger, this_name, other_name)
            topology.add_copartition_group(this_parent, other_parent)
            topology.connect_processor_and_state_stores(this_name, *other_view.store_names)
            topology.connect_processor_and_state_stores(other_name, *this_view.store_names)
            if materialized is not None and store_name is not None:
                topology.add_state_store(timestamped_store_builder(materialized, store_name),
                                         merge_name)

        node = self._builder.add(GraphNode(merge_name, write), self._node, other._node)
        key_serde = self.key_serde if materialized is None else materialized.key_serde
        value_serde = None if materialized is None else materialized.value_serde
        return KTable(self._builder, merge_name, key_serde, value_serde, store_name, merger, node,
                      output_versioned=is_versioned(materialized))

    def group_by(self, selector: Callable[[Any, Any], Any], grouped: Grouped | None = None) -> KGroupedTable:
        """Regroup the rows: `selector(key, value)` returns the row's (group key, value) as a `KeyValue` or
        a 2-tuple; aggregate the groups with `count`, `reduce` or `aggregate` (adder and subtractor)."""
        from streamlet.dsl.grouped_table import KGroupedTable  # not at the top: grouped_table imports this module

        if not callable(selector):
            raise TypeError(f"selector must be callable, got {selector!r}")
        grouped = grouped or Grouped()
        name = self._builder.names.name_or_generate(grouped.name, naming.KTABLE_SELECT)  # the index is used up
        versioned = self._is_versioned()  # a versioned table's out-of-order updates stay out of the groups

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, partial(TableRepartitionMap, selector, versioned), *parent_names)

        node = self._builder.add(GraphNode(name, write), self._node)
        self._enable_sending_old_values(True)  # a row's old value must leave its group
        return KGroupedTable(self._builder, name, grouped, node)

    def suppress(self, suppressed: Suppressed) -> KTable:
        """Hold updates back in a (change-logged) buffer and emit them later (see `Suppressed`).

        `Suppressed.until_window_closes` needs a windowed aggregation upstream (through table
        filters and map_values only); its grace period is how long after a window's end it waits.
        """
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress() takes a Suppressed, got {suppressed!r}")
        if self._is_versioned():
            raise TopologyError("suppress() is only supported for non-versioned KTables (note that version semantics "
                                "might be inherited from upstream)")
        names = self._builder.names
        name = suppressed.name if suppressed.name is not None else names.processor_name(naming.KTABLE_SUPPRESS)
        if suppressed.name is not None:
            store_name = suppressed.name + "-store"
        else:
            store_name = names.store_name(naming.KTABLE_SUPPRESS)
            if suppressed.buffer_config.logging:  # Kafka Streams records only the buffer's changelog
                names.implicit_changelogs.append(store_name + "-changelog")
        duration = self._window_grace_ms() if suppressed.final_results else suppressed.time_limit_ms
        self._enable_sending_old_values(True)  # the buffer keeps old values, as Kafka Streams' does
        supplier = TableSuppressSupplier(suppressed, duration, store_name, self.key_serde, self.value_serde)
        config = suppressed.buffer_config

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, supplier, *parent_names)
            builder = SuppressionBufferBuilder(store_name)
            builder = builder.with_logging_enabled(config.log_config) if config.logging else \
                builder.with_logging_disabled()
            topology.add_state_store(builder, name)

        node = self._builder.add(GraphNode(name, write), self._node)
        return KTable(self._builder, name, self.key_serde, self.value_serde, None, supplier, node, parent=self,
                      output_versioned=False)

    def _window_grace_ms(self) -> int:
        """The grace period of the windowed aggregation this table comes from (Kafka Streams' rule)."""
        table: KTable | None = self
        while table is not None:
            if isinstance(table._supplier, WindowAggregateSupplier):
                return table._supplier.windows.grace_ms
            if isinstance(table._supplier, SessionAggregateSupplier):  # a session closes a gap after its end
                return table._supplier.windows.grace_ms + table._supplier.windows.gap_ms
            if isinstance(table._supplier, CogroupMergeSupplier) and table._supplier.grace_ms is not None:
                return table._supplier.grace_ms
            table = table._parent
        raise TopologyError("Window close time is only defined for windowed computations: until_window_closes() "
                            f"needs a windowed aggregation upstream of {self.name!r}")

    def to_stream(self, named: Named | str | None = None) -> KStream:
        """The table's updates as a stream of (key, new value); a deleted row gives a None value."""
        from streamlet.dsl.kstream import KStream  # not at the top: kstream imports this module

        name = self._builder.names.name_or_generate(Named.resolve(named), naming.KTABLE_TOSTREAM)

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, TableToStream, *parent_names)

        node = self._builder.add(GraphNode(name, write), self._node)
        return KStream(self._builder, name, self.key_serde, self.value_serde, False, node)

    def _add_table_processor(self, name: str, supplier: TableFilterSupplier | TableMapValuesSupplier,
                             materialized: Materialized | None, store_name: str | None) -> GraphNode:
        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, supplier, *parent_names)
            if materialized is not None and store_name is not None:
                topology.add_state_store(timestamped_store_builder(materialized, store_name), name)

        return self._builder.add(GraphNode(name, write), self._node)


def _output_versioned(materialized: Materialized | None) -> bool | None:
    """Whether a filter's or mapping's table is versioned: None (as its parent) without a `Materialized`;
    with one, whether it gives a versioned store, named or not (Kafka Streams' rule)."""
    return None if materialized is None else is_versioned(materialized)


def _foreign_key_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any, Any] | None:
    """(extractor, joiner, table_joined, materialized) when a join call is a foreign-key join: Kafka
    Streams' overloads tell it by a second function after the first, here the same (or by keywords)."""
    if "foreign_key_extractor" in kwargs or "table_joined" in kwargs or (
            len(args) >= 2 and callable(args[1]) and not isinstance(args[1], Materialized)):
        values = _bind(["foreign_key_extractor", "joiner", "table_joined", "materialized"], args, kwargs,
                       "a foreign-key join")
        return (values.get("foreign_key_extractor"), values.get("joiner"), values.get("table_joined"),
                values.get("materialized"))
    return None


def _bind(names: list[str], args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> dict[str, Any]:
    """Positional and keyword arguments by parameter name, for a call with several overloads."""
    if len(args) > len(names):
        raise TypeError(f"{what} takes at most {len(names)} arguments after the table")
    values = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in names or key in values:
            raise TypeError(f"unexpected or repeated argument {key!r} of {what}")
        values[key] = value
    return values


def _equi_join_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(joiner, materialized, named) of a table-table join on equal keys."""
    values = _bind(["joiner", "materialized", "named"], args, kwargs, "a table join")
    if "joiner" not in values:
        raise TypeError("a table join needs a joiner")
    return values["joiner"], values.get("materialized"), values.get("named")


def table_source(
    builder: InternalBuilder,
    source_name: str,
    table_source_name: str,
    store_name: str,
    materialized: Materialized,
    write_source: Callable[[Topology], None],
) -> KTable:
    """The two nodes of `StreamsBuilder.table`: a source and the table processor that may keep a store."""
    supplier = TableSourceSupplier(store_name, materialized.name)

    def write(topology: Topology, parent_names: list[str]) -> None:
        write_source(topology)
        topology.add_processor(table_source_name, supplier, source_name)
        if supplier.materialized:
            topology.add_state_store(timestamped_store_builder(materialized, store_name),
                                     table_source_name)

    node = builder.add(GraphNode(table_source_name, write))
    return KTable(builder, table_source_name, materialized.key_serde, materialized.value_serde, materialized.name,
                  supplier, node, output_versioned=is_versioned(materialized))

