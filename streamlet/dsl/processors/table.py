"""KTable nodes: the table source, `filter`, `map_values` and `to_stream`.

Values between table nodes are `Change(new, old)`. Whether `old` is filled in is decided while the
DSL is built: a table node that needs old values asks its parent (`enable_sending_old_values`), and a
parent that can provide them (a materialized table, an aggregation) starts sending them. Suppliers
keep those decisions; processors read them when the runtime creates them, after `build()`.

Rules kept from Kafka Streams: a table source drops null keys; a filter turns rejected values into
tombstones (`new` None), and skips an update only when it knows both sides were filtered out (which
it can only know with old values); a materialized node stores its result and forwards through the
store's cache.

A node materialized in a versioned store (a versioned table, KIP-914) puts each row as a version at
its record's timestamp: an update the store refuses (older than its grace period) goes no further,
and one it keeps as an older version (out of order) goes on marked `is_latest=False`, its old value
being the key's latest row. A filter downstream of a versioned table forwards every update, even one
filtered out before and after (Kafka Streams' versioned semantics).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.processors.forwarding import MaybeMaterialized, log_skipped
from streamlet.processor import Processor
from streamlet.record import Record
from streamlet.stores.versioned.api import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED

EnableParent = Callable[[bool], bool]
"""The parent table's `enable_sending_old_values(force_materialization) -> bool`."""


class TableSourceSupplier:
    """`StreamsBuilder.table`: materialized when named, or when a downstream node needs old values."""

    def __init__(self, store_name: str, queryable_name: str | None) -> None:
        self.store_name = store_name
        self.queryable_name = queryable_name
        self.send_old_values = False

    @property
    def materialized(self) -> bool:
        return self.queryable_name is not None

    def enable_sending_old_values(self) -> None:
        self.send_old_values = True
        self.queryable_name = self.store_name

    def materialize(self) -> None:
        self.queryable_name = self.store_name

    def __call__(self) -> Processor:
        return TableSource(self.queryable_name, self.send_old_values)


class TableSource(MaybeMaterialized):
    def __init__(self, store_name: str | None, send_old_values: bool) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            log_skipped(self.context, "null key")
            return
        if self._store_name is None:
            self._forward(record.with_value(Change(record.value, None)))
            return
        old = self._stored_value(key)
        code = self._store_row(key, record.value, record.timestamp)
        if code != PUT_RETURN_CODE_NOT_PUT:
            self._forwarder.maybe_forward(
                record.with_value(Change(record.value, old, code == PUT_RETURN_CODE_VALID_TO_UNDEFINED)))


class TableFilterSupplier:
    def __init__(self, enable_parent: EnableParent, predicate: Callable[[Any, Any], Any], negate: bool,
                 queryable_name: str | None) -> None:
        self._enable_parent = enable_parent
        self.predicate = predicate
        self.negate = negate
        self.queryable_name = queryable_name
        # An already-materialized parent can send old values cheaply; with them the filter avoids
        # forwarding tombstones for keys it never forwarded.
        self.send_old_values = enable_parent(False)
        self.versioned_semantics = False  # set when the table it filters is versioned

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        if self.queryable_name is not None:
            self.send_old_values = True
            return True
        if self._enable_parent(force_materialization):
            self.send_old_values = True
        return self.send_old_values

    def compute(self, key: Any, value: Any) -> Any:
        """The row as this filter shows it: the value, or None when filtered out (for value getters)."""
        if value is not None and bool(self.predicate(key, value)) is not self.negate:
            return value
        return None

    def __call__(self) -> Processor:
        return TableFilter(self.predicate, self.negate, self.queryable_name, self.send_old_values,
                           self.versioned_semantics)


class TableFilter(MaybeMaterialized):
    def __init__(self, predicate: Callable[[Any, Any], Any], negate: bool, store_name: str | None,
                 send_old_values: bool, versioned_semantics: bool = False) -> None:
        self._predicate = predicate
        self._negate = negate
        self._store_name = store_name
        self._send_old_values = send_old_values
        self._versioned_semantics = versioned_semantics

    def _keep(self, key: Any, value: Any) -> Any:
        if value is not None and bool(self._predicate(key, value)) is not self._negate:
            return value
        return None

    def process(self, record: Record) -> None:
        key, change = record.key, record.value
        new = self._keep(key, change.new_value)
        old = None
        if self._send_old_values:
            old = self._stored_value(key) if self._store_name is not None else self._keep(key, change.old_value)
            if old is None and new is None and not self._versioned_semantics:
                return  # filtered out before and after: nothing downstream has seen
        if self._store_name is None:
            self._forward(record.with_value(Change(new, old, change.is_latest)))
            return
        code = self._store_row(key, new, record.timestamp)
        if code != PUT_RETURN_CODE_NOT_PUT:
            self._forwarder.maybe_forward(
                record.with_value(Change(new, old, code == PUT_RETURN_CODE_VALID_TO_UNDEFINED)))


class TableMapValuesSupplier:
    def __init__(self, enable_parent: EnableParent, mapper: Callable[[Any], Any], queryable_name: str | None) -> None:
        self._enable_parent = enable_parent
        self.mapper = mapper
        self.queryable_name = queryable_name
        self.send_old_values = False

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        if self.queryable_name is not None:
            self.send_old_values = True
            return True
        if self._enable_parent(force_materialization):
            self.send_old_values = True
        return self.send_old_values

    def compute(self, _key: Any, value: Any) -> Any:
        """The row as this mapping shows it (for value getters); a missing row stays missing."""
        return None if value is None else self.mapper(value)

    def __call__(self) -> Processor:
        return TableMapValues(self.mapper, self.queryable_name, self.send_old_values)


class TableMapValues(MaybeMaterialized):
    def __init__(self, mapper: Callable[[Any], Any], store_name: str | None, send_old_values: bool) -> None:
        self._mapper = mapper
        self._store_name = store_name
        self._send_old_values = send_old_values

    def _map(self, value: Any) -> Any:
        return None if value is None else self._mapper(value)

    def process(self, record: Record) -> None:
        key, change = record.key, record.value
        new = self._map(change.new_value)
        old = None
        if self._send_old_values:
            old = self._stored_value(key) if self._store_name is not None else self._map(change.old_value)
        if self._store_name is None:
            self._forward(record.with_value(Change(new, old, change.is_latest)))
            return
        code = self._store_row(key, new, record.timestamp)
        if code != PUT_RETURN_CODE_NOT_PUT:
            self._forwarder.maybe_forward(
                record.with_value(Change(new, old, code == PUT_RETURN_CODE_VALID_TO_UNDEFINED)))
