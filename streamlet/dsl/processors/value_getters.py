"""Table value getters: how a join looks up a table's current row for a key.

Kafka Streams joins a stream (or another table) against any table, stored or not: a table that keeps a
store is read from it; a `filter` or `map_values` without a store of its own is read through its
parent's getter, applying its predicate or mapper on the fly (Kafka Streams' `KTableValueGetter`). A
source table asked for a getter is materialized. The joining processor is connected to the stores of
the getter it ends up with (`store_names`), which also places it in their sub-topology.

A getter over a versioned store `is_versioned` (so is a filter's or mapping's over it): it can also
read a row as of a timestamp (`get_as_of`), which is what a stream-table join does with it. The
result of a table-table join is never versioned, as in Kafka Streams (KIP-914).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl.processors.forwarding import timestamped_store
from streamlet.processor import ProcessorContext
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.keyvalue.api import TimestampedKeyValueStore
from streamlet.stores.versioned.api import VersionedKeyValueStore


class ValueGetter:
    """Reads one table's current row; made per task by a `ValueGetterSupplier`, then `init`ed."""

    is_versioned = False
    """True when `get_as_of` can read the row as of a time (the table is kept in a versioned store)."""

    def init(self, context: ProcessorContext) -> None:
        raise NotImplementedError

    def get(self, key: Any) -> ValueAndTimestamp | None:
        raise NotImplementedError

    def get_as_of(self, key: Any, timestamp: int) -> ValueAndTimestamp | None:
        """The row as of `timestamp` (only when `is_versioned`)."""
        raise NotImplementedError(f"{type(self).__name__} reads only the current row: its table is not versioned")


class ValueGetterSupplier:
    """Makes the getters of one table; `store_names` are the stores they read."""

    store_names: tuple[str, ...]

    def __call__(self) -> ValueGetter:
        raise NotImplementedError


class _StoreGetter(ValueGetter):
    """Reads a timestamped store, or a versioned one (Kafka Streams' `KeyValueStoreWrapper`)."""

    _store: TimestampedKeyValueStore
    _versioned: VersionedKeyValueStore | None = None

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        store = context.get_state_store(self._store_name)
        if isinstance(store, VersionedKeyValueStore):
            self._versioned = store
            self.is_versioned = True
        else:
            self._store = timestamped_store(context, self._store_name)

    def get(self, key: Any) -> ValueAndTimestamp | None:
        if self._versioned is None:
            return self._store.get(key)
        found = self._versioned.get(key)
        return None if found is None else ValueAndTimestamp(found.value, found.timestamp)

    def get_as_of(self, key: Any, timestamp: int) -> ValueAndTimestamp | None:
        if self._versioned is None:
            return super().get_as_of(key, timestamp)
        found = self._versioned.get(key, timestamp)
        return None if found is None else ValueAndTimestamp(found.value, found.timestamp)


class StoreValueGetterSupplier(ValueGetterSupplier):
    """The getter of a table that keeps a (timestamped key-value) store."""

    def __init__(self, store_name: str) -> None:
        self.store_names = (store_name,)

    def __call__(self) -> ValueGetter:
        return _StoreGetter(self.store_names[0])


class _DerivedGetter(ValueGetter):
    def __init__(self, parent: ValueGetter, compute: Callable[[Any, Any], Any]) -> None:
        self._parent = parent
        self._compute = compute

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)
        self.is_versioned = self._parent.is_versioned

    def _derived(self, key: Any, found: ValueAndTimestamp | None) -> ValueAndTimestamp | None:
        if found is None:
            return None
        value = self._compute(key, found.value)
        return None if value is None else ValueAndTimestamp(value, found.timestamp)

    def get(self, key: Any) -> ValueAndTimestamp | None:
        return self._derived(key, self._parent.get(key))

    def get_as_of(self, key: Any, timestamp: int) -> ValueAndTimestamp | None:
        return self._derived(key, self._parent.get_as_of(key, timestamp))


class DerivedValueGetterSupplier(ValueGetterSupplier):
    """The getter of a storeless `filter` / `map_values`: the parent's row, computed on read.

    `compute(key, value)` returns the derived value, None for a row the operation filters out.
    """

    def __init__(self, parent: ValueGetterSupplier, compute: Callable[[Any, Any], Any]) -> None:
        self._parent = parent
        self._compute = compute
        self.store_names = parent.store_names

    def __call__(self) -> ValueGetter:
        return _DerivedGetter(self._parent(), self._compute)


class _JoinedGetter(ValueGetter):
    def __init__(self, left: ValueGetter, right: ValueGetter, joiner: Callable[[Any, Any], Any], kind: str) -> None:
        self._left, self._right = left, right
        self._joiner = joiner
        self._kind = kind

    def init(self, context: ProcessorContext) -> None:
        self._left.init(context)
        self._right.init(context)

    def get(self, key: Any) -> ValueAndTimestamp | None:
        left, right = self._left.get(key), self._right.get(key)
        if left is None and right is None:
            return None
        if self._kind == "inner" and (left is None or right is None):
            return None
        if self._kind == "left" and left is None:
            return None
        value = self._joiner(None if left is None else left.value, None if right is None else right.value)
        timestamp = max(-1 if left is None else left.timestamp, -1 if right is None else right.timestamp)
        return None if value is None else ValueAndTimestamp(value, timestamp)


class JoinedValueGetterSupplier(ValueGetterSupplier):
    """The getter of a table-table join result without a store: both sides' rows, joined on read."""

    def __init__(self, left: ValueGetterSupplier, right: ValueGetterSupplier, joiner: Callable[[Any, Any], Any],
                 kind: str) -> None:
        self._left, self._right = left, right
        self._joiner = joiner
        self._kind = kind
        self.store_names = (*left.store_names, *right.store_names)

    def __call__(self) -> ValueGetter:
        return _JoinedGetter(self._left(), self._right(), self._joiner, self._kind)
