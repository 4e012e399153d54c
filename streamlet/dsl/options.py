"""The DSL's option objects: `Consumed`, `Produced`, `Grouped`, `Joined`, `Materialized`, `Named`, `Repartitioned`.

Kafka Streams builds these with static factories (`Consumed.with(...)`, `Materialized.as("s")`);
here they are plain classes with keyword arguments, and every field Kafka Streams would leave null
defaults to None, meaning "inherit from upstream, else the configured default". Serdes may be given
as `Serde` instances, `Serde` classes or names ("String", "Long", ...), as everywhere in streamlet.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from streamlet.durations import to_millis
from streamlet.errors import ConfigError, TopologyError
from streamlet.offset_reset import AutoOffsetReset
from streamlet.processor import TimestampExtractor
from streamlet.serdes import Serde, resolve_serde
from streamlet.stores.keyvalue.api import KeyValueBytesStoreSupplier
from streamlet.stores.versioned.api import VersionedBytesStoreSupplier
from streamlet.stores.window.api import WindowBytesStoreSupplier
from streamlet.topology import StreamPartitioner

MAX_NAME_LENGTH = 249
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def validate_name(name: str) -> str:
    """Kafka Streams' rule for user-given processor, store and topic-prefix names."""
    if not isinstance(name, str):
        raise TopologyError(f"a name must be a string, got {name!r}")
    if not name:
        raise TopologyError("Name is illegal, it can't be empty")
    if name in (".", ".."):
        raise TopologyError('Name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise TopologyError(f"Name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, name: {name}")
    if not set(name) <= _LEGAL:
        raise TopologyError(
            f'Name "{name}" is illegal, it contains a character other than ASCII alphanumerics, \'.\', \'_\' and \'-\''
        )
    return name


def _optional_name(name: str | None) -> str | None:
    return None if name is None else validate_name(name)


class Named:
    """The name of a DSL operation's processor (instead of a generated `KSTREAM-...` name)."""

    def __init__(self, name: str) -> None:
        self.name = validate_name(name)

    @staticmethod
    def resolve(named: Named | str | None) -> str | None:
        """Operations take a `Named`, a plain string, or None (generate a name)."""
        if named is None:
            return None
        if isinstance(named, Named):
            return named.name
        return validate_name(named)

    def __repr__(self) -> str:
        return f"Named({self.name!r})"


class Consumed:
    """How `StreamsBuilder.stream/table` read a topic; `name` names the source node.

    `offset_reset` is where the topic's partitions start without a committed offset: an `AutoOffsetReset`
    or its words (`earliest`, `latest`, `none`, `by_duration:PT1H`); by default `auto.offset.reset`."""

    def __init__(
        self,
        key_serde: Any = None,
        value_serde: Any = None,
        timestamp_extractor: TimestampExtractor | None = None,
        offset_reset: AutoOffsetReset | str | None = None,
        name: str | None = None,
    ) -> None:
        self.key_serde: Serde[Any] | None = resolve_serde(key_serde)
        self.value_serde: Serde[Any] | None = resolve_serde(value_serde)
        self.timestamp_extractor = timestamp_extractor
        try:
            self.offset_reset = None if offset_reset is None else AutoOffsetReset.parse(offset_reset)
        except ConfigError as exc:
            raise TopologyError(f"offset_reset: {exc}") from None
        self.name = _optional_name(name)

    def with_offset_reset_policy(self, policy: AutoOffsetReset | str) -> Consumed:
        """The same options with another reset policy (Kafka Streams' `withOffsetResetPolicy`)."""
        return Consumed(self.key_serde, self.value_serde, self.timestamp_extractor, policy, self.name)

    def __repr__(self) -> str:
        return (f"Consumed(key_serde={self.key_serde!r}, value_serde={self.value_serde!r}, "
                f"timestamp_extractor={self.timestamp_extractor!r}, offset_reset={self.offset_reset!r}, "
                f"name={self.name!r})")


class Produced:
    """How `KStream.to` writes a topic; `name` names the sink node."""

    def __init__(
        self,
        key_serde: Any = None,
        value_serde: Any = None,
        partitioner: StreamPartitioner | None = None,
        name: str | None = None,
    ) -> None:
        self.key_serde: Serde[Any] | None = resolve_serde(key_serde)
        self.value_serde: Serde[Any] | None = resolve_serde(value_serde)
        self.partitioner = partitioner
        self.name = _optional_name(name)

    def __repr__(self) -> str:
        return (f"Produced(key_serde={self.key_serde!r}, value_serde={self.value_serde!r}, "
                f"partitioner={self.partitioner!r}, name={self.name!r})")


class Grouped:
    """Serdes of a grouping's repartition topic; `name` names that topic (`<name>-repartition`)."""

    def __init__(self, key_serde: Any = None, value_serde: Any = None, name: str | None = None) -> None:
        self.key_serde: Serde[Any] | None = resolve_serde(key_serde)
        self.value_serde: Serde[Any] | None = resolve_serde(value_serde)
        self.name = _optional_name(name)

    def __repr__(self) -> str:
        return f"Grouped(key_serde={self.key_serde!r}, value_serde={self.value_serde!r}, name={self.name!r})"


class Joined:
    """Options of a stream-table join: serdes of the stream side (used if it must be repartitioned
    first, and for the grace period's buffer), the table's value serde, `name` (the join processor
    and repartition topic name) and `grace_period` (timedelta or ms; Kafka Streams'
    `Joined.withGracePeriod`, KIP-923).

    With a grace period the table must be versioned, with a history retention at least the grace
    period. Stream records then wait in a buffer (the store `<join name>-Buffer`, change-logged to
    `<application.id>-<join name>-Buffer-changelog`) until the join's stream time has passed their
    timestamp by the grace period, and are joined oldest first, each with the table as of its
    timestamp: a table update that arrives late, but within the grace period, is still seen. A
    stream record already older than that when it arrives is joined at once."""

    def __init__(self, key_serde: Any = None, value_serde: Any = None, other_value_serde: Any = None,
                 name: str | None = None, grace_period: timedelta | int | None = None) -> None:
        self.key_serde: Serde[Any] | None = resolve_serde(key_serde)
        self.value_serde: Serde[Any] | None = resolve_serde(value_serde)
        self.other_value_serde: Serde[Any] | None = resolve_serde(other_value_serde)
        self.name = _optional_name(name)
        self.grace_period_ms: int | None = None if grace_period is None else to_millis(grace_period)
        if self.grace_period_ms is not None and self.grace_period_ms < 0:
            raise TopologyError(f"Joined: grace_period must not be negative, got {grace_period!r}")

    def __repr__(self) -> str:
        return (f"Joined(key_serde={self.key_serde!r}, value_serde={self.value_serde!r}, "
                f"other_value_serde={self.other_value_serde!r}, name={self.name!r}, "
                f"grace_period={self.grace_period_ms!r})")


class StreamJoined:
    """Options of a stream-stream join: serdes of the key and both sides' values (for its window stores
    and any repartition), `name` (processor and repartition names), `store_name` (the base name of its
    stores), and whether the stores are change-logged.

    `this_store_supplier` / `other_store_supplier` (Kafka Streams' `withThisStoreSupplier` /
    `withOtherStoreSupplier`) give either side its own window store, e.g.
    `Stores.in_memory_window_store(name, retention, window_size, retain_duplicates=True)`: it must retain
    duplicates, its window size must be the join window's size (before + after) and its retention that
    plus the grace period; the two must have different names. A side's store then has the supplier's name
    and is change-logged with the supplier's defaults (`logging` and `log_config` apply to the stores
    the join makes itself), and a left/outer join's shared store is named after this side's supplier and
    kept in memory when that supplier is. `store_type` (`"in_memory"` or `"leveldb"`; Kafka Streams'
    `withDslStoreSuppliers`) picks the backend of every store the join makes itself, instead of
    `dsl.store.suppliers.class`."""

    def __init__(self, key_serde: Any = None, value_serde: Any = None, other_value_serde: Any = None,
                 name: str | None = None, store_name: str | None = None, logging: bool = True,
                 log_config: Mapping[str, Any] | None = None,
                 this_store_supplier: WindowBytesStoreSupplier | None = None,
                 other_store_supplier: WindowBytesStoreSupplier | None = None,
                 store_type: str | None = None) -> None:
        self.key_serde: Serde[Any] | None = resolve_serde(key_serde)
        self.value_serde: Serde[Any] | None = resolve_serde(value_serde)
        self.other_value_serde: Serde[Any] | None = resolve_serde(other_value_serde)
        self.name = _optional_name(name)
        self.store_name = _optional_name(store_name)
        self.logging = bool(logging)
        self.log_config: dict[str, str] = {str(k): str(v) for k, v in (log_config or {}).items()}
        for which, supplier in (("this_store_supplier", this_store_supplier),
                                ("other_store_supplier", other_store_supplier)):
            if supplier is not None and not isinstance(supplier, WindowBytesStoreSupplier):
                raise TopologyError(f"{which} must be a window store supplier (Stores.persistent_window_store or "
                                    f"Stores.in_memory_window_store), got {supplier!r}")
        self.this_store_supplier = this_store_supplier
        self.other_store_supplier = other_store_supplier
        self.store_type = _store_type(store_type)

    @property
    def in_memory(self) -> bool | None:
        """The join's own store type: True in memory, False LevelDB, None the DSL default."""
        return None if self.store_type is None else self.store_type.lower() in _IN_MEMORY_TYPES

    def with_this_store_supplier(self, supplier: WindowBytesStoreSupplier) -> StreamJoined:
        """A copy whose this-side (left) window store comes from `supplier`."""
        return self._copy(this_store_supplier=supplier)

    def with_other_store_supplier(self, supplier: WindowBytesStoreSupplier) -> StreamJoined:
        """A copy whose other-side (right) window store comes from `supplier`."""
        return self._copy(other_store_supplier=supplier)

    def with_store_type(self, store_type: str) -> StreamJoined:
        """A copy whose own stores are `store_type` ("in_memory" or "leveldb"): `withDslStoreSuppliers`."""
        return self._copy(store_type=store_type)

    def _copy(self, **changes: Any) -> StreamJoined:
        fields = {"key_serde": self.key_serde, "value_serde": self.value_serde,
                  "other_value_serde": self.other_value_serde, "name": self.name, "store_name": self.store_name,
                  "logging": self.logging, "log_config": self.log_config,
                  "this_store_supplier": self.this_store_supplier, "other_store_supplier": self.other_store_supplier,
                  "store_type": self.store_type}
        return StreamJoined(**{**fields, **changes})

    def __repr__(self) -> str:
        return (f"StreamJoined(key_serde={self.key_serde!r}, value_serde={self.value_serde!r}, "
                f"other_value_serde={self.other_value_serde!r}, name={self.name!r}, store_name={self.store_name!r}, "
                f"this_store_supplier={self.this_store_supplier!r}, "
                f"other_store_supplier={self.other_store_supplier!r}, store_type={self.store_type!r})")


_PERSISTENT_TYPES = ("leveldb", "rocksdb", "persistent")
_IN_MEMORY_TYPES = ("in_memory", "in-memory", "memory")


def _store_type(store_type: str | None) -> str | None:
    if store_type is not None and (not isinstance(store_type, str)
                                   or store_type.lower() not in _PERSISTENT_TYPES + _IN_MEMORY_TYPES):
        raise TopologyError(f"store_type must be 'leveldb' or 'in_memory', got {store_type!r}")
    return store_type


class Materialized:
    """How a DSL operation keeps its state: store name (or supplier), serdes, logging and caching.

    The first positional argument is the store name, as Java's `Materialized.as("name")`; a store
    supplier (e.g. `Stores.in_memory_key_value_store("s")`, or a window store supplier for windowed
    aggregations) is accepted there too. A versioned store supplier
    (`Stores.persistent_versioned_key_value_store("s", history_retention)`) makes a versioned table:
    `StreamsBuilder.table`, `KStream.to_table`, table `filter` / `map_values` and table-table joins
    take one, and a stream joined with a versioned table meets each key's row as of the stream
    record's timestamp. `retention` (timedelta or ms) is how long a windowed aggregation keeps its
    windows (default: window size plus grace, as Kafka Streams).
    Defaults are Kafka Streams': a persistent store (LevelDB here), change-logged, cached.
    """

    def __init__(
        self,
        name: str | KeyValueBytesStoreSupplier | WindowBytesStoreSupplier | VersionedBytesStoreSupplier | None = None,
        key_serde: Any = None,
        value_serde: Any = None,
        logging: bool = True,
        caching: bool = True,
        log_config: Mapping[str, Any] | None = None,
        store_type: str | None = None,
        retention: timedelta | int | None = None,
    ) -> None:
        self.store_supplier: (KeyValueBytesStoreSupplier | WindowBytesStoreSupplier | VersionedBytesStoreSupplier
                               | None) = None
        if isinstance(name, KeyValueBytesStoreSupplier | WindowBytesStoreSupplier | VersionedBytesStoreSupplier):
            self.store_supplier = name
            self.name: str | None = validate_name(name.name)
        else:
            self.name = _optional_name(name)
        self.key_serde: Serde[Any] | None = resolve_serde(key_serde)
        self.value_serde: Serde[Any] | None = resolve_serde(value_serde)
        self.logging = bool(logging)
        self.caching = bool(caching)
        self.log_config: dict[str, str] = {str(k): str(v) for k, v in (log_config or {}).items()}
        self.store_type = _store_type(store_type)
        self.retention_ms = None if retention is None else to_millis(retention)
        if self.retention_ms is not None and self.retention_ms < 0:
            raise TopologyError(f"retention must not be negative, got {retention!r}")

    @staticmethod
    def as_(name: str | KeyValueBytesStoreSupplier | WindowBytesStoreSupplier | VersionedBytesStoreSupplier,
            **options: Any) -> Materialized:
        """Java's `Materialized.as(...)` (`as` is a Python keyword): a store name or a store supplier,
        other options by keyword."""
        return Materialized(name, **options)

    @property
    def in_memory(self) -> bool:
        """True when `store_type` asks for an in-memory store instead of LevelDB."""
        return self.store_type is not None and self.store_type.lower() in _IN_MEMORY_TYPES

    def copy(self, **changes: Any) -> Materialized:
        """A copy with some fields replaced (the DSL fills in inherited serdes without touching yours)."""
        clone = Materialized.__new__(Materialized)
        clone.__dict__.update(self.__dict__)
        clone.log_config = dict(self.log_config)
        for key, value in changes.items():
            if not hasattr(clone, key):
                raise AttributeError(key)
            setattr(clone, key, value)
        return clone

    def __repr__(self) -> str:
        return (f"Materialized(name={self.name!r}, key_serde={self.key_serde!r}, value_serde={self.value_serde!r}, "
                f"logging={self.logging}, caching={self.caching}, store_type={self.store_type!r})")


class Repartitioned:
    """Options of `KStream.repartition`: topic name prefix, serdes, partition count, partitioner."""

    def __init__(
        self,
        name: str | None = None,
        key_serde: Any = None,
        value_serde: Any = None,
        num_partitions: int | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> None:
        self.name = _optional_name(name)
        self.key_serde: Serde[Any] | None = resolve_serde(key_serde)
        self.value_serde: Serde[Any] | None = resolve_serde(value_serde)
        if num_partitions is not None and (isinstance(num_partitions, bool) or num_partitions < 1):
            raise TopologyError(f"num_partitions must be a positive integer, got {num_partitions!r}")
        self.num_partitions = num_partitions
        self.partitioner = partitioner

    def __repr__(self) -> str:
        return (f"Repartitioned(name={self.name!r}, key_serde={self.key_serde!r}, value_serde={self.value_serde!r}, "
                f"num_partitions={self.num_partitions!r})")
