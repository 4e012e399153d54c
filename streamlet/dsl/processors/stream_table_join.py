"""`KStream.join(table)` / `left_join(table)`: each stream record looks up the table by its key.

As Kafka Streams' stream-table join: the table is only read, never triggers output; a stream record
with a null value is dropped (logged), as is one with a null key, except in a left join, where a
null key simply finds no match (Kafka Streams 3.7+). An inner join forwards only records that found
a table row; a left join forwards every record, with None for a missing row. The result keeps the
stream record's key, timestamp and headers; its value is `joiner(stream_value, table_value)`.

Against a versioned table (one kept in a versioned store, KIP-914) the lookup is as of the stream
record's timestamp: the row the table had then, so an out-of-order stream record meets the table as
it was at its time, and a table update that arrives late (but within the store's grace period) still
counts for the stream records after it in time. Past the store's history retention only the latest
row, if it already applied, is found.

A join with a `GlobalKTable` is the same processor with a key mapper: the table is looked up by
`key_mapper(key, value)`; a record whose mapped key is None finds no row: an inner join drops it, a
left join forwards it with None, as Kafka Streams 4.x does (3.9.1 dropped it in a left join too, unless
the record's own key was None; tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl.arity import required_positionals
from streamlet.dsl.processors.forwarding import log_skipped
from streamlet.dsl.processors.value_getters import ValueGetter, ValueGetterSupplier
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.api import ValueAndTimestamp

ValueJoiner = Callable[[Any, Any], Any]
KeyMapper = Callable[[Any, Any], Any]


class StreamTableJoinSupplier:
    def __init__(self, table: ValueGetterSupplier, joiner: ValueJoiner, left: bool,
                 key_mapper: KeyMapper | None = None) -> None:
        self.table = table
        self.joiner = joiner
        self.left = left
        self.key_mapper = key_mapper

    def __call__(self) -> Processor:
        if self.key_mapper is not None:
            return GlobalTableJoin(self.table(), self.joiner, self.left, self.key_mapper)
        return StreamTableJoin(self.table(), self.joiner, self.left)


class StreamTableJoin(Processor):
    def __init__(self, table: ValueGetter, joiner: ValueJoiner, left: bool) -> None:
        self._table = table
        self._joiner = joiner
        self._left = left

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._table.init(context)
        self._forward = context.forwarder()
        self._versioned = self._table.is_versioned

    def _lookup(self, key: Any, record: Record) -> ValueAndTimestamp | None:
        """Kafka Streams' `getValue2`: the row as of the record's time when the table is versioned."""
        return self._table.get_as_of(key, record.timestamp) if self._versioned else self._table.get(key)

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if value is None or (key is None and not self._left):
            log_skipped(self.context, "null join key or value")
            return
        stored = None if key is None else self._lookup(key, record)
        if stored is None:
            if not self._left:
                return
            self._forward(record.with_value(self._joiner(value, None)))
        else:
            self._forward(record.with_value(self._joiner(value, stored.value)))


def joiner_arity(joiner: Callable[..., Any]) -> int:
    """How many arguments a joiner takes: 2 `(value, other)`, 3 `(key, value, other)` (Kafka Streams'
    ValueJoinerWithKey) or 4 `(key, mapped_key, value, other)` (ValueJoinerWithStreamAndMappedKey, KIP-1340,
    global-table joins); the count of required positional parameters decides, 2 when it cannot be read."""
    required = required_positionals(joiner)
    return required if required in (3, 4) else 2


class GlobalTableJoin(StreamTableJoin):
    """The stream-table join looking the table up by `key_mapper(key, value)` (a `GlobalKTable` join).

    The mapper is called twice per record, once to decide whether to drop it and once to join, as
    Kafka Streams does (it shows only with a mapper that is not a pure function). The joiner may also see
    the stream record's key and the mapped key (see `joiner_arity`)."""

    def __init__(self, table: ValueGetter, joiner: Callable[..., Any], left: bool, key_mapper: KeyMapper) -> None:
        super().__init__(table, joiner, left)
        self._arity = joiner_arity(joiner)
        self._joiner_with_keys: Callable[..., Any] = joiner
        self._key_mapper = key_mapper

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        mapped = self._key_mapper(key, value)
        if value is None or (mapped is None and not self._left):
            log_skipped(self.context, "null join key or value")
            return
        mapped = self._key_mapper(key, value)
        stored = None if mapped is None else self._lookup(mapped, record)
        if stored is None and not self._left:
            return
        other = None if stored is None else stored.value
        if self._arity == 2:
            joined = self._joiner(value, other)
        elif self._arity == 3:
            joined = self._joiner_with_keys(key, value, other)
        else:
            joined = self._joiner_with_keys(key, mapped, value, other)
        self._forward(record.with_value(joined))
