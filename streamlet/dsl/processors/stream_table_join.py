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

With a grace period (`Joined(grace_period=...)`, KIP-923, versioned tables only) a stream record is
not joined when it arrives but put into the join's buffer (stores/timeordered/buffer.py), and each
record it lets out, oldest first, once the buffer's stream time is past its timestamp by the grace
period, is joined then, with its own record context (timestamp, headers, topic, partition, offset):
so a table update that arrives after the stream record, but within the grace period, is seen. A
record already older than that when it arrives is joined at once. A null-key record of a left join
(which can find no row) is joined at once too: Kafka Streams 4.4.0 fails the task on it instead.

A join with a `GlobalKTable` is the same processor with a key mapper: the table is looked up by
`key_mapper(key, value)`; a record whose mapped key is None finds no row: an inner join drops it, a
left join forwards it with None, as Kafka Streams 4.x does (3.9.1 dropped it in a left join too, unless
the record's own key was None; tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamlet.dsl.arity import required_positionals
from streamlet.dsl.join_grace import GRACE_NEEDS_VERSIONED, JoinBufferSpec
from streamlet.dsl.processors.forwarding import log_skipped
from streamlet.dsl.processors.value_getters import ValueGetter, ValueGetterSupplier
from streamlet.errors import StreamsError, TopologyError
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.api import RecordContext, ValueAndTimestamp
from streamlet.stores.timeordered.buffer import TimeOrderedKeyValueBuffer

if TYPE_CHECKING:
    from streamlet.stores.timeordered.buffer_value import BufferedRecord

ValueJoiner = Callable[[Any, Any], Any]
KeyMapper = Callable[[Any, Any], Any]


class StreamTableJoinSupplier:
    def __init__(self, table: ValueGetterSupplier, joiner: ValueJoiner, left: bool,
                 key_mapper: KeyMapper | None = None, buffer: JoinBufferSpec | None = None) -> None:
        self.table = table
        self.joiner = joiner
        self.left = left
        self.key_mapper = key_mapper
        self.buffer = buffer

    def __call__(self) -> Processor:
        if self.key_mapper is not None:
            return GlobalTableJoin(self.table(), self.joiner, self.left, self.key_mapper)
        if self.buffer is not None:
            return BufferedStreamTableJoin(self.table(), self.joiner, self.left, self.buffer)
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


class BufferedStreamTableJoin(StreamTableJoin):
    """The stream-table join with a grace period: records wait in the join's buffer (module docstring)."""

    _buffer: TimeOrderedKeyValueBuffer

    def __init__(self, table: ValueGetter, joiner: ValueJoiner, left: bool, spec: JoinBufferSpec) -> None:
        super().__init__(table, joiner, left)
        self._spec = spec

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        spec = self._spec
        if not self._versioned:
            raise TopologyError(GRACE_NEEDS_VERSIONED)
        store = context.get_state_store(spec.store_name)
        if not isinstance(store, TimeOrderedKeyValueBuffer):
            raise TopologyError(f"state store {spec.store_name!r} is not a stream-table join buffer")
        self._buffer = store
        config = context.app_config
        key_serde = spec.key_serde or config.default_key_serde()
        value_serde = spec.value_serde or config.default_value_serde()
        if key_serde is None or value_serde is None:
            raise StreamsError(f"join buffer {spec.store_name!r} has no serdes and no defaults are configured: "
                               f"give them to Joined(key_serde=..., value_serde=...)")
        topic = spec.serde_topic
        self._serialize_key = lambda key: key_serde.serializer.serialize(topic, key)
        self._serialize_value = lambda value: value_serde.serializer.serialize(topic, value)
        self._deserialize_key = lambda data: key_serde.deserializer.deserialize(topic, data)
        self._deserialize_value = lambda data: None if data is None else value_serde.deserializer.deserialize(
            topic, data)
        current = getattr(context, "current_record_context", None)
        replay = getattr(context, "replay_in_record_context", None)
        if current is None or replay is None:
            raise StreamsError("a stream-table join with a grace period runs only in a task's processor context")
        self._current_context: Callable[[], RecordContext] = current
        self._replay: Callable[[RecordContext, Callable[[], None]], None] = replay

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if value is None or key is None:
            super().process(record)  # dropped, or (a left join's null key) joined at once with no row
            return
        key_bytes, value_bytes = self._serialize_key(key), self._serialize_value(value)
        if key_bytes is None or value_bytes is None:
            raise StreamsError(f"join buffer {self._spec.store_name!r}: the key or value serialized to None")
        ctx = self._current_context()
        if not self._buffer.put(key_bytes, value_bytes, record.timestamp, ctx.offset, ctx.topic, ctx.partition,
                                record.headers):
            super().process(record)
        else:
            self._buffer.evict(self._emit)

    def _emit(self, buffered: BufferedRecord) -> None:
        record = Record(self._deserialize_key(buffered.key), self._deserialize_value(buffered.value),
                        buffered.timestamp, buffered.headers)
        context = RecordContext(buffered.timestamp, buffered.headers, buffered.topic, buffered.partition,
                                buffered.offset)
        self._replay(context, lambda: StreamTableJoin.process(self, record))


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
