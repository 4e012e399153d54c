"""Turning a `Materialized` into the store builder of a DSL node (Kafka Streams' store materializer).

The DSL's key-value stores are timestamped (each value remembers the timestamp of the record that
wrote it): persistent LevelDB unless the user asked for memory or gave a supplier, change-logged and
cached unless switched off. Built only when the topology is written, so the store layer is imported
then and not when the DSL module is.

Any key-value table (`table()`, `to_table()`, a table `filter` / `map_values`, a join's result, a
non-windowed aggregation or cogroup) may be given a versioned store supplier instead
(`Materialized.as_(Stores.persistent_versioned_key_value_store(...))`): it is then built as a versioned
store, never cached (Kafka Streams logs that it ignores the caching asked for). Global tables refuse
one (`global_ktable.py`), windowed aggregations want a window store supplier, as in Kafka Streams.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from streamlet.dsl.options import Materialized, StreamJoined
from streamlet.dsl.processors.stream_stream_join import OuterJoinStore
from streamlet.dsl.store_suppliers import application_default_in_memory, default_in_memory, follows_default
from streamlet.errors import TopologyError
from streamlet.serdes import Serde, Serdes
from streamlet.stores.api import StoreBuilder
from streamlet.stores.builders import ConfigurableStoreBuilder
from streamlet.stores.factory import Stores
from streamlet.stores.session.api import SessionBytesStoreSupplier
from streamlet.stores.versioned.api import VersionedBytesStoreSupplier
from streamlet.stores.window.api import WindowBytesStoreSupplier
from streamlet.stores.window.builders import WindowStoreBuilder
from streamlet.stores.window.suppliers import LevelDBWindowBytesStoreSupplier

if TYPE_CHECKING:
    from streamlet.dsl.join_windows import JoinWindows
    from streamlet.dsl.session_windows import SessionWindows
    from streamlet.dsl.sliding_windows import SlidingWindows
    from streamlet.dsl.time_windows import TimeWindows


log = logging.getLogger("streamlet.dsl")


def is_versioned(materialized: Materialized | None) -> bool:
    """True when `materialized` gives a versioned store supplier (the table it makes is versioned)."""
    return materialized is not None and isinstance(materialized.store_supplier, VersionedBytesStoreSupplier)


@follows_default
def timestamped_store_builder(materialized: Materialized, store_name: str) -> StoreBuilder:
    """The store of a key-value table: timestamped, or versioned when the supplier is."""
    supplier = materialized.store_supplier
    if isinstance(supplier, VersionedBytesStoreSupplier):
        versioned = Stores.versioned_key_value_store_builder(supplier, materialized.key_serde, materialized.value_serde)
        if materialized.caching:
            log.info("Not enabling caching for store '%s' as versioned stores do not support caching.", store_name)
        return (versioned.with_logging_enabled(materialized.log_config) if materialized.logging
                else versioned.with_logging_disabled())
    if isinstance(supplier, WindowBytesStoreSupplier):
        raise TopologyError(f"store {store_name!r}: a key-value table needs a key-value store supplier, "
                            f"got the window store supplier {supplier!r}")
    if supplier is None:
        supplier = (Stores.in_memory_key_value_store(store_name) if _in_memory(materialized)
                    else Stores.persistent_timestamped_key_value_store(store_name))
    table_builder = Stores.timestamped_key_value_store_builder(supplier, materialized.key_serde,
                                                               materialized.value_serde)
    table_builder.dsl_store = True  # dsl.store.format applies (store_suppliers.apply_store_format)
    builder: StoreBuilder = table_builder
    return _logging_and_caching(builder, materialized)


def window_retention_ms(materialized: Materialized, windows: TimeWindows, store_name: str) -> int:
    """Kafka Streams' rule: the given retention, else window size plus grace; never less than that."""
    needed = windows.size_ms + windows.grace_ms
    retention = needed if materialized.retention_ms is None else materialized.retention_ms
    if retention < needed:
        raise TopologyError(
            f"The retention period of the window store {store_name} must be no smaller than its window size plus "
            f"the grace period. Got size=[{windows.size_ms}], grace=[{windows.grace_ms}], retention=[{retention}]"
        )
    return retention


@follows_default
def timestamped_window_store_builder(materialized: Materialized, store_name: str, windows: TimeWindows,
                                     emit_final: bool = False) -> StoreBuilder:
    """The window store of a windowed aggregation (its own supplier, or LevelDB / memory by `store_type`;
    LevelDB time-ordered for final results, as Kafka Streams' RocksDB one)."""
    supplier = materialized.store_supplier
    if supplier is not None and not isinstance(supplier, WindowBytesStoreSupplier):
        raise TopologyError(f"store {store_name!r}: a windowed aggregation needs a window store supplier, "
                            f"got {supplier!r}")
    if supplier is None:
        retention = window_retention_ms(materialized, windows, store_name)
        factory = (Stores.in_memory_window_store if _in_memory(materialized)
                   else Stores.persistent_timestamped_window_store)
        supplier = _time_first(factory(store_name, retention, windows.size_ms, False), emit_final)
    elif supplier.window_size_ms != windows.size_ms:
        raise TopologyError(f"window store {store_name!r} has window size {supplier.window_size_ms} ms but the "
                            f"windows are {windows.size_ms} ms")
    builder = Stores.timestamped_window_store_builder(supplier, materialized.key_serde, materialized.value_serde)
    builder.dsl_store = True  # dsl.store.format applies (store_suppliers.apply_store_format)
    return _logging_and_caching(builder, materialized)


def sliding_window_retention_ms(materialized: Materialized, windows: SlidingWindows, store_name: str) -> int:
    """Kafka Streams' rule: the given retention, else twice the time difference plus grace (a record may
    need the windows of a record 2d before it); never less than that."""
    needed = 2 * windows.time_difference_ms + windows.grace_ms
    retention = needed if materialized.retention_ms is None else materialized.retention_ms
    if retention < needed:
        raise TopologyError(
            f"The retention period of the window store {store_name} must be no smaller than 2 * time difference "
            f"plus the grace period. Got time difference=[{windows.time_difference_ms}], grace=[{windows.grace_ms}], "
            f"retention=[{retention}]")
    return retention


@follows_default
def sliding_window_store_builder(materialized: Materialized, store_name: str, windows: SlidingWindows,
                                 emit_final: bool) -> StoreBuilder:
    """The window store of a sliding-window aggregation: window size = the time difference; never cached
    when it emits final results only, as in Kafka Streams."""
    supplier = materialized.store_supplier
    if supplier is not None and not isinstance(supplier, WindowBytesStoreSupplier):
        raise TopologyError(f"store {store_name!r}: a windowed aggregation needs a window store supplier, "
                            f"got {supplier!r}")
    if supplier is None:
        retention = sliding_window_retention_ms(materialized, windows, store_name)
        factory = (Stores.in_memory_window_store if _in_memory(materialized)
                   else Stores.persistent_timestamped_window_store)
        supplier = _time_first(factory(store_name, retention, windows.time_difference_ms, False), emit_final)
    plain = Stores.timestamped_window_store_builder(supplier, materialized.key_serde, materialized.value_serde)
    plain.dsl_store = True  # dsl.store.format applies (store_suppliers.apply_store_format)
    builder = _logging_and_caching(plain, materialized)
    return builder.with_caching_disabled() if emit_final else builder


@follows_default
def session_store_builder(materialized: Materialized, store_name: str, windows: SessionWindows,
                          emit_final: bool = False) -> StoreBuilder:
    """The session store of a session aggregation (its own supplier, or LevelDB / memory by `store_type`);
    never cached when it emits final results only, as in Kafka Streams."""
    supplier = materialized.store_supplier
    if supplier is not None and not isinstance(supplier, SessionBytesStoreSupplier):
        raise TopologyError(f"store {store_name!r}: a session aggregation needs a session store supplier, "
                            f"got {supplier!r}")
    if supplier is None:
        retention = session_retention_ms(materialized, windows, store_name)
        factory = Stores.in_memory_session_store if _in_memory(materialized) else Stores.persistent_session_store
        supplier = factory(store_name, retention)
    sessions = Stores.session_store_builder(supplier, materialized.key_serde, materialized.value_serde)
    sessions.dsl_store = True  # dsl.store.format applies (store_suppliers.apply_store_format)
    builder = _logging_and_caching(sessions, materialized)
    return builder.with_caching_disabled() if emit_final else builder


def session_retention_ms(materialized: Materialized, windows: SessionWindows, store_name: str) -> int:
    """Kafka Streams' rule: the given retention, else the gap plus grace; never less than that."""
    needed = windows.gap_ms + windows.grace_ms
    retention = needed if materialized.retention_ms is None else materialized.retention_ms
    if retention < needed:
        raise TopologyError(
            f"The retention period of the session store {store_name} must be no smaller than the session "
            f"inactivity gap plus the grace period. Got gap=[{windows.gap_ms}], grace=[{windows.grace_ms}], "
            f"retention=[{retention}]")
    return retention


def stream_join_stores(options: StreamJoined, windows: JoinWindows, this_store: str, other_store: str,
                       outer_store: str | None) -> tuple[StoreBuilder, StoreBuilder, StoreBuilder | None]:
    """A stream-stream join's stores, as Kafka Streams makes them: one window store per side (retaining
    duplicates, window = before + after, retention = that + grace, changelog `cleanup.policy=delete`,
    no cache, changelog records with the headers of the records they hold) and, for left/outer joins, the shared
    outer store (a list-valued key-value store). A side given its own supplier
    (`StreamJoined(this_store_supplier=...)`) gets it, checked and change-logged with the builder's defaults, as
    in Kafka Streams."""
    sides: list[StoreBuilder] = []
    for name, supplier, value_serde in ((this_store, options.this_store_supplier, options.value_serde),
                                        (other_store, options.other_store_supplier, options.other_value_serde)):
        if supplier is None:
            sides.append(_join_window_store(options, windows, name, value_serde))
        else:
            sides.append(_logging_record_headers(Stores.window_store_builder(supplier, options.key_serde,
                                                                             value_serde)))
    outer = None if outer_store is None else _outer_join_store(options, outer_store)
    return sides[0], sides[1], outer


@follows_default
def subscription_store_builder(store_name: str) -> StoreBuilder:
    """A foreign-key join's subscription store: bytes in, never cached, on the application's DSL backend
    (Kafka Streams' SubscriptionStoreFactory, which `StreamsBuilder(config)` does not reach)."""
    supplier = (Stores.in_memory_key_value_store(store_name) if application_default_in_memory()
                else Stores.persistent_timestamped_key_value_store(store_name))
    builder = Stores.timestamped_key_value_store_builder(supplier, Serdes.Bytes(), Serdes.Bytes())
    return builder.with_caching_disabled()


def check_join_store_suppliers(options: StreamJoined, windows: JoinWindows) -> None:
    """Kafka Streams' checks of a join's own window store suppliers (KStreamImplJoin), its messages."""
    this, other = options.this_store_supplier, options.other_store_supplier
    if this is not None and other is not None and this.name == other.name:
        raise TopologyError("Both StoreSuppliers have the same name.  StoreSuppliers must provide unique names")
    for supplier in (this, other):
        if supplier is None:
            continue
        if not supplier.retain_duplicates:
            raise TopologyError("The StoreSupplier must set retainDuplicates=true, found retainDuplicates=false")
        if supplier.retention_ms != windows.size() + windows.grace_ms or supplier.window_size_ms != windows.size():
            raise TopologyError(
                f"Window settings mismatch. WindowBytesStoreSupplier settings {supplier!r} must match JoinWindows "
                f"settings {windows!r} for the window size and retention period")


@follows_default
def _join_window_store(options: StreamJoined, windows: JoinWindows, name: str,
                       value_serde: Serde[Any] | None) -> StoreBuilder:
    size, retention = windows.size(), windows.size() + windows.grace_ms
    in_memory = options.in_memory if options.in_memory is not None else default_in_memory()
    factory = Stores.in_memory_window_store if in_memory else Stores.persistent_window_store
    builder = Stores.window_store_builder(factory(name, retention, size, retain_duplicates=True),
                                          options.key_serde, value_serde)
    log_config = {**options.log_config, "cleanup.policy": "delete"}
    _logging_record_headers(builder)
    return builder.with_logging_enabled(log_config) if options.logging else builder.with_logging_disabled()


def _logging_record_headers(builder: WindowStoreBuilder) -> WindowStoreBuilder:
    """Kafka Streams 4.4 keeps a join's side as a window store with headers whatever `dsl.store.format` says: its
    changelog records carry the headers of the records they hold (the record being processed when written)."""
    builder.logs_record_headers = True
    return builder


@follows_default
def _outer_join_store(options: StreamJoined, name: str) -> StoreBuilder:
    """The shared store of a left/outer join: the join's own store type, else the type of this side's
    supplier, else the DSL default (Kafka Streams' OuterStreamJoinStoreFactory)."""
    if options.in_memory is not None:
        in_memory = options.in_memory
    elif options.this_store_supplier is not None:
        in_memory = not options.this_store_supplier.persistent
    else:
        in_memory = default_in_memory()
    factory = Stores.in_memory_key_value_store if in_memory else Stores.persistent_key_value_store

    class _OuterBuilder(ConfigurableStoreBuilder):
        def build(self) -> OuterJoinStore:
            return OuterJoinStore(factory(self.name).get(), options.key_serde, options.value_serde,
                                  options.other_value_serde, logging_enabled=self.logging_enabled)

    outer_builder = _OuterBuilder()
    outer_builder.name = name
    outer_builder.caching_enabled = False
    return (outer_builder.with_logging_enabled(options.log_config) if options.logging
            else outer_builder.with_logging_disabled())


def _in_memory(materialized: Materialized) -> bool:
    """The operation's own store type, else the DSL default (`dsl.store.suppliers.class`, store_suppliers.py)."""
    return materialized.in_memory if materialized.store_type is not None else default_in_memory()


def _time_first(supplier: WindowBytesStoreSupplier, emit_final: bool) -> WindowBytesStoreSupplier:
    """Kafka Streams keeps an `on_window_close` aggregation's windows in a time-ordered RocksDB store."""
    if emit_final and isinstance(supplier, LevelDBWindowBytesStoreSupplier):
        supplier.time_first = True
    return supplier


def _logging_and_caching(builder: StoreBuilder, materialized: Materialized) -> StoreBuilder:
    if materialized.logging:
        builder = builder.with_logging_enabled(materialized.log_config)
    else:
        builder = builder.with_logging_disabled()
    return builder.with_caching_enabled() if materialized.caching else builder.with_caching_disabled()
