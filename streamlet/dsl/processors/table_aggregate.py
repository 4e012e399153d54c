"""`KTable.group_by(...)` and the aggregations of the resulting `KGroupedTable` (Kafka Streams'
`KTableRepartitionMap`, `KTableAggregate` and `KTableReduce`).

A table update replaces a row, so regrouping must retract the old row from its group before adding
the new one. The select processor maps the old and the new row (the parent sends old values) to
(group key, value) pairs: if both land in the same group, one update carries both; otherwise the old
one (retraction only) goes first, then the new one; a pair with a None key or value is not sent. The
aggregation then applies, per update: the subtractor to the old value, then the adder to the new one
(from the initializer for a new group). A group whose aggregate is None is deleted. The stored
aggregate keeps the largest timestamp of the updates folded into it. Grouping a versioned table
skips its out-of-order updates (`is_latest` False): the groups follow each key's latest row (KIP-914).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl.change import Change
from streamlet.dsl.processors.aggregate import (
    Aggregator,
    Initializer,
    Reducer,
    StreamAggregateSupplier,
    StreamReduceSupplier,
)
from streamlet.dsl.processors.forwarding import TableRows
from streamlet.errors import StreamsError
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.versioned.api import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED

KeyValueMapper = Callable[[Any, Any], Any]


class TableRepartitionMap(Processor):
    """Maps each row update to the group updates it makes (see the module docstring)."""

    def __init__(self, selector: KeyValueMapper, versioned_semantics: bool = False) -> None:
        self._selector = selector
        self._versioned_semantics = versioned_semantics

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forwarder()

    def _pair(self, key: Any, value: Any) -> tuple[Any, Any] | None:
        if value is None:
            return None
        group_key, group_value = self._selector(key, value)
        return None if group_key is None or group_value is None else (group_key, group_value)

    def process(self, record: Record) -> None:
        if record.key is None:
            raise StreamsError("Record key for the grouping KTable should not be null.")
        change = record.value
        latest = change.is_latest
        if self._versioned_semantics and not latest:
            return
        new = self._pair(record.key, change.new_value)
        old = self._pair(record.key, change.old_value)
        forward = self._forward
        if old is not None and new is not None and old[0] == new[0]:
            forward(Record(old[0], Change(new[1], old[1], latest), record.timestamp, record.headers))
            return
        if old is not None:
            forward(Record(old[0], Change(None, old[1], latest), record.timestamp, record.headers))
        if new is not None:
            forward(Record(new[0], Change(new[1], None, latest), record.timestamp, record.headers))


class TableAggregateSupplier(StreamAggregateSupplier):
    """`KGroupedTable.aggregate` / `count`: an adder and a subtractor over a timestamped store."""

    def __init__(self, store_name: str, initializer: Initializer, adder: Aggregator, subtractor: Aggregator) -> None:
        super().__init__(store_name, initializer, adder)
        self.subtractor = subtractor

    def __call__(self) -> Processor:
        return TableAggregate(self)


class TableReduceSupplier(StreamReduceSupplier):
    """`KGroupedTable.reduce`: an adder and a subtractor reducer (the first value is the aggregate)."""

    def __init__(self, store_name: str, adder: Reducer, subtractor: Reducer) -> None:
        super().__init__(store_name, adder)
        self.subtractor = subtractor

    def __call__(self) -> Processor:
        return TableReduce(self)


class _TableAggregation(Processor):
    """Over a timestamped store, or a versioned one (`TableRows`): an update the versioned store refuses
    goes no further."""

    def __init__(self, store_name: str, send_old_values: bool) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._rows = TableRows(context, self._store_name, self._send_old_values)
        self._forwarder = self._rows.forwarder

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            raise StreamsError(f"Record key for KTable aggregate operator with state {self._store_name} "
                               f"should not be null.")
        stored = self._rows.get(key)
        old = None if stored is None else stored.value
        change = record.value
        timestamp = record.timestamp
        if change.old_value is not None and old is not None:
            intermediate = self._subtract(key, change.old_value, old)
            timestamp = max(timestamp, stored.timestamp) if stored is not None else timestamp
        else:
            intermediate = old
        if change.new_value is not None:
            new = self._add(key, change.new_value, intermediate)
            if stored is not None and (intermediate is not None or not self._replaces_first_value):
                timestamp = max(record.timestamp, stored.timestamp)
        else:
            new = intermediate
        code = self._rows.put(key, new, timestamp)
        if code == PUT_RETURN_CODE_NOT_PUT:
            return
        self._forwarder.maybe_forward(
            Record(key, Change(new, old, code == PUT_RETURN_CODE_VALID_TO_UNDEFINED), timestamp, record.headers))

    _replaces_first_value = False

    def _subtract(self, key: Any, value: Any, aggregate: Any) -> Any:
        raise NotImplementedError

    def _add(self, key: Any, value: Any, aggregate: Any) -> Any:
        raise NotImplementedError


class TableAggregate(_TableAggregation):
    def __init__(self, supplier: TableAggregateSupplier) -> None:
        super().__init__(supplier.store_name, supplier.send_old_values)
        self._initializer = supplier.initializer
        self._adder = supplier.aggregator
        self._subtractor = supplier.subtractor

    def _subtract(self, key: Any, value: Any, aggregate: Any) -> Any:
        return self._subtractor(key, value, aggregate)

    def _add(self, key: Any, value: Any, aggregate: Any) -> Any:
        return self._adder(key, value, self._initializer() if aggregate is None else aggregate)


class TableReduce(_TableAggregation):
    # Kafka Streams' reduce keeps the record's own timestamp when the new value starts the aggregate.
    _replaces_first_value = True

    def __init__(self, supplier: TableReduceSupplier) -> None:
        super().__init__(supplier.store_name, supplier.send_old_values)
        self._adder = supplier.reducer
        self._subtractor = supplier.subtractor

    def _subtract(self, key: Any, value: Any, aggregate: Any) -> Any:
        return self._subtractor(aggregate, value)

    def _add(self, key: Any, value: Any, aggregate: Any) -> Any:
        return value if aggregate is None else self._adder(aggregate, value)
