"""KTable-KTable `join` / `left_join` / `outer_join` (Kafka Streams' KTableKTable*Join and JoinMerger).

Each side has a join processor: an update on one side looks the key up in the other side (through its
value getter) and sends the joined row, timestamped with the larger of the two timestamps. Which
updates produce a row depends on the side's role: inner (both rows needed), left (this side's row
needed; the other may be missing), right (the other side's row needed; this side's update is joined
even when it is a delete, which gives the left join's row with a missing right side), outer (either).
A merge processor puts both sides' updates into one table, storing them when materialized.

A side whose table is versioned (KIP-914) drops the out-of-order updates of that table (`is_latest`
False): the join result follows each key's latest rows only, as in Kafka Streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.processors.forwarding import MaybeMaterialized, log_skipped
from streamlet.dsl.processors.value_getters import ValueGetter, ValueGetterSupplier
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.versioned.api import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED

Joiner = Callable[[Any, Any], Any]
EnableParent = Callable[[bool], bool]

INNER, LEFT, RIGHT, OUTER = "inner", "left", "right", "outer"


class TableJoinSupplier:
    """One side of a table-table join; `other` reads the other side's rows."""

    def __init__(self, kind: str, other: ValueGetterSupplier, joiner: Joiner,
                 enable_tables: list[EnableParent]) -> None:
        self.kind = kind
        self.other = other
        self.joiner = joiner
        self._enable_tables = enable_tables
        self.send_old_values = False
        self.versioned_semantics = False  # set when this side's table is versioned

    def enable_sending_old_values(self, _force_materialization: bool) -> bool:
        for enable in self._enable_tables:  # table-table joins need both sides' old values
            enable(True)
        self.send_old_values = True
        return True

    def __call__(self) -> Processor:
        return TableJoin(self.kind, self.other(), self.joiner, self.send_old_values, self.versioned_semantics)


class TableJoin(Processor):
    def __init__(self, kind: str, other: ValueGetter, joiner: Joiner, send_old_values: bool,
                 versioned_semantics: bool = False) -> None:
        self._kind = kind
        self._other = other
        self._joiner = joiner
        self._send_old_values = send_old_values
        self._versioned_semantics = versioned_semantics

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._other.init(context)
        self._forward = context.forwarder_in_record_context()

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            log_skipped(self.context, "null key")
            return
        change, kind, join = record.value, self._kind, self._joiner
        if self._versioned_semantics and not change.is_latest:
            return  # Kafka Streams: "Skipping out-of-order record from versioned table" (KIP-914)
        found = self._other.get(key)
        other = None if found is None else found.value
        if other is None:
            if kind in (INNER, RIGHT):
                return
            if change.new_value is None and change.old_value is None:
                return
            timestamp = record.timestamp
        else:
            timestamp = max(record.timestamp, found.timestamp) if found is not None else record.timestamp
        new = old = None
        if kind == RIGHT:  # this side's update is joined even when it deletes the row
            new = join(change.new_value, other)
            if self._send_old_values:
                old = join(change.old_value, other)
        else:
            if change.new_value is not None or (kind == OUTER and other is not None):
                new = join(change.new_value, other)
            if self._send_old_values and (change.old_value is not None or (kind == OUTER and other is not None)):
                old = join(change.old_value, other)
        self._forward(Record(key, Change(new, old, change.is_latest), timestamp, record.headers))


class TableJoinMergerSupplier:
    """The join's result table: both sides' updates, stored when the join is materialized."""

    def __init__(self, this_side: TableJoinSupplier, other_side: TableJoinSupplier, queryable_name: str | None,
                 view: ValueGetterSupplier) -> None:
        self._sides = (this_side, other_side)
        self.queryable_name = queryable_name
        self.view = view  # how a later join reads the result when it has no store
        self.send_old_values = False

    def enable_sending_old_values(self, _force_materialization: bool) -> bool:
        for side in self._sides:
            side.enable_sending_old_values(True)
        self.send_old_values = True
        return True

    def __call__(self) -> Processor:
        return TableJoinMerger(self.queryable_name, self.send_old_values)


class TableJoinMerger(MaybeMaterialized):
    def __init__(self, store_name: str | None, send_old_values: bool) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values

    def process(self, record: Record) -> None:
        change = record.value
        if self._store_name is not None:
            code = self._store_row(record.key, change.new_value, record.timestamp)
            if code != PUT_RETURN_CODE_NOT_PUT:
                self._forwarder.maybe_forward(record.with_value(
                    Change(change.new_value, change.old_value, code == PUT_RETURN_CODE_VALID_TO_UNDEFINED)))
        elif self._send_old_values:
            self._forward(record)
        else:
            self._forward(record.with_value(Change(change.new_value, None, change.is_latest)))
