"""Forwarding the updates of a stateful DSL node, through its store's cache or directly.

With caching on, the store holds updates and hands them to the flush listener at commit or eviction
(one update per key per commit); the processor must then not forward itself. With caching off, the
processor forwards every update. Either way downstream sees `Change(new, old)` values, the old value
only when `send_old_values` was asked for by a downstream node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from mypy_extensions import mypyc_attr

from streamlet.dsl.change import Change
from streamlet.errors import TopologyError
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Headers, Record
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.keyvalue.api import TimestampedKeyValueStore
from streamlet.stores.session.api import SessionStore
from streamlet.stores.versioned.api import PUT_RETURN_CODE_VALID_TO_UNDEFINED, VersionedKeyValueStore
from streamlet.stores.window.api import WindowStore

_new: Final = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)
_Change: Final = Change  # Final: a C static when compiled, not a dict look-up per use
_Record: Final = Record
_ValueAndTimestamp: Final = ValueAndTimestamp

log = logging.getLogger("streamlet.dsl")


def timestamped_store(context: ProcessorContext, name: str) -> TimestampedKeyValueStore:
    store = context.get_state_store(name)
    if not isinstance(store, TimestampedKeyValueStore):
        raise TopologyError(
            f"state store {name!r} must be a timestamped key-value store for the DSL, got {type(store).__name__}"
        )
    return store


def versioned_store(context: ProcessorContext, name: str) -> VersionedKeyValueStore:
    store = context.get_state_store(name)
    if not isinstance(store, VersionedKeyValueStore):
        raise TopologyError(f"state store {name!r} must be a versioned key-value store, got {type(store).__name__}")
    return store


class TimestampedTupleForwarder:
    def __init__(self, store: TimestampedKeyValueStore | WindowStore | SessionStore | VersionedKeyValueStore,
                 context: ProcessorContext, send_old_values: bool) -> None:
        self._forward = context.forwarder_in_record_context()
        self._send_old_values = send_old_values
        self._caching = store.set_flush_listener(self._forward_flushed, send_old_values)

    def _forward_flushed(self, key: Any, new_value: Any, old_value: Any, timestamp: int, headers: Headers) -> None:
        self._forward(_new(_Record, (key, _new(_Change, (new_value, old_value, True)), timestamp, headers)))

    @property
    def caching(self) -> bool:
        """True when the store's cache forwards the updates (at flush): the processor then must not."""
        return self._caching

    def maybe_forward(self, record: Record) -> None:
        """Forward now unless the cache will (`record.value` is a `Change`)."""
        if self._caching:
            return
        if not self._send_old_values:
            change = record.value
            record = record.with_value(_new(_Change, (change[0], None, change[2])))
        self._forward(record)


def log_skipped(context: ProcessorContext, reason: str) -> None:
    """Kafka Streams logs (and counts) records a DSL node drops for a null key or value."""
    meta = context.record_metadata()
    if meta is None:
        log.warning("Skipping record due to %s. Topic, partition, and offset not known.", reason)
    else:
        log.warning("Skipping record due to %s. topic=[%s] partition=[%d] offset=[%d]",
                    reason, meta.topic, meta.partition, meta.offset)


class TableRows:
    """A DSL table node's store, timestamped or versioned (Kafka Streams' `KeyValueStoreWrapper`), with the
    tuple forwarder over it. `get(key)` gives the key's current row (a versioned store's latest version)
    as a `ValueAndTimestamp`; `put(key, value, timestamp)` stores a row (None deletes) and answers
    `PUT_RETURN_CODE_VALID_TO_UNDEFINED` when it is the key's latest, as every put into a timestamped
    store is, another validTo when a versioned store kept it as an older version (out of order), and
    `PUT_RETURN_CODE_NOT_PUT` when a versioned store refused it (older than its grace period)."""

    get: Callable[[Any], ValueAndTimestamp | None]
    put: Callable[[Any, Any, int], int]

    def __init__(self, context: ProcessorContext, name: str, send_old_values: bool) -> None:
        store = context.get_state_store(name)
        if isinstance(store, VersionedKeyValueStore):
            self._versioned = store
            self.get = self._latest_version
            self.put = store.put
            self.forwarder = TimestampedTupleForwarder(store, context, send_old_values)
        else:
            self._store = timestamped_store(context, name)
            self.get = self._store.get
            self.put = self._put_timestamped
            self.forwarder = TimestampedTupleForwarder(self._store, context, send_old_values)

    def _latest_version(self, key: Any) -> ValueAndTimestamp | None:
        found = self._versioned.get(key)
        return None if found is None else _new(_ValueAndTimestamp, (found.value, found.timestamp))

    def _put_timestamped(self, key: Any, value: Any, timestamp: int) -> int:
        self._store.put(key, _new(_ValueAndTimestamp, (value, timestamp)))
        return PUT_RETURN_CODE_VALID_TO_UNDEFINED


@mypyc_attr(allow_interpreted_subclasses=True)  # the table join merger extends it
class MaybeMaterialized(Processor):
    """A table node that keeps its rows in a store when it has one (`_store_name`): it then forwards
    through the store's tuple forwarder (its cache), and otherwise straight to its children. The store
    may be versioned (a versioned table): see `TableRows`."""

    _store_name: str | None
    _send_old_values: bool
    _rows: TableRows
    _forwarder: TimestampedTupleForwarder

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forwarder_in_record_context()
        if self._store_name is not None:
            self._rows = TableRows(context, self._store_name, self._send_old_values)
            self._forwarder = self._rows.forwarder

    def _stored_value(self, key: Any) -> Any:
        """The key's current row in the store, or None."""
        found = self._rows.get(key)
        return None if found is None else found.value

    def _store_row(self, key: Any, value: Any, timestamp: int) -> int:
        """`TableRows.put`."""
        return self._rows.put(key, value, timestamp)


class TableToStream(Processor):
    """`KTable.to_stream()`: each update becomes a record with the new value (None: a tombstone). Here rather
    than beside the table processors (`table.py`, not compiled: its suppliers are pickled) because it runs
    once per flushed update of every aggregation that ends in `to_stream()`; it is its own supplier, and a
    class pickles by name."""

    _forward: Callable[[Record], None]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forwarder()

    def process(self, record: Record) -> None:
        self._forward(_new(_Record, (record[0], record[1][0], record[2], record[3])))  # with_value, one frame less
