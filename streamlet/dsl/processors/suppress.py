"""`KTable.suppress`: hold a table's updates in a buffer and let them out later (Kafka Streams'
`KTableSuppressProcessor`).

Each update is buffered under its key at a buffer time: the window's end for
`until_window_closes`, the update's timestamp for `until_time_limit`. The processor's stream time is
the largest timestamp of the updates that reached it (not the input's: records an upstream node
dropped do not count). After each update, every entry whose buffer time is at or before stream time
minus the suppression duration (the windows' grace period, or the time limit) is emitted, oldest
first, with the timestamp and headers of the update that last wrote it; then, if the buffer is over
its bounds, entries are emitted early or the task fails, as the buffer config says. Final results
drop tombstones. Nothing is emitted on punctuation or at commit: only an update moves stream time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamlet.dsl.change import Change
from streamlet.dsl.suppressed import Suppressed
from streamlet.errors import StreamsError, TopologyError
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.serdes import Serde
from streamlet.stores.keyvalue.typed import changelog_topic
from streamlet.stores.suppression.buffer import SuppressionBuffer

if TYPE_CHECKING:
    from streamlet.stores.suppression.buffer import BufferedChange


class TableSuppressSupplier:
    """Makes suppress processors; the parent table was asked for old values (the buffer keeps them)."""

    def __init__(self, suppressed: Suppressed, duration_ms: int, store_name: str, key_serde: Serde[Any] | None,
                 value_serde: Serde[Any] | None) -> None:
        self.suppressed = suppressed
        self.duration_ms = duration_ms
        self.store_name = store_name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.queryable_name: str | None = None

    def enable_sending_old_values(self, _force_materialization: bool) -> bool:
        return True  # it forwards the old values its parent already sends it

    def __call__(self) -> Processor:
        return TableSuppress(self)


class TableSuppress(Processor):
    _buffer: SuppressionBuffer

    def __init__(self, supplier: TableSuppressSupplier) -> None:
        self._spec = supplier
        self._final = supplier.suppressed.final_results
        config = supplier.suppressed.buffer_config
        self._max_records = config.records_limit
        self._max_bytes = config.bytes_limit
        self._emit_when_full = config.emit_when_full
        self._observed_stream_time = -1

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        spec = self._spec
        store = context.get_state_store(spec.store_name)
        if not isinstance(store, SuppressionBuffer):
            raise TopologyError(f"state store {spec.store_name!r} is not a suppression buffer")
        self._buffer = store
        config = context.app_config
        key_serde = spec.key_serde or config.default_key_serde()
        value_serde = spec.value_serde or config.default_value_serde()
        if key_serde is None or value_serde is None:
            raise StreamsError(f"suppression buffer {spec.store_name!r} has no serdes and no defaults are configured")
        topic = changelog_topic(context.application_id, spec.store_name)
        self._serialize_key = lambda key: key_serde.serializer.serialize(topic, key)
        self._deserialize_key = lambda data: key_serde.deserializer.deserialize(topic, data)
        self._serialize = lambda value: None if value is None else value_serde.serializer.serialize(topic, value)
        self._deserialize = lambda data: None if data is None else value_serde.deserializer.deserialize(topic, data)
        self._forward = context.forwarder_in_record_context()

    def process(self, record: Record) -> None:
        timestamp = record.timestamp
        if timestamp > self._observed_stream_time:
            self._observed_stream_time = timestamp
        key, change = record.key, record.value
        time = key.window.end if self._final else timestamp
        key_bytes = self._serialize_key(key)
        if key_bytes is None:
            raise StreamsError(f"suppression buffer {self._spec.store_name!r}: a key serialized to None")
        meta = self.context.record_metadata()
        if meta is None:
            self._buffer.put(time, key_bytes, self._serialize(change.new_value), self._serialize(change.old_value),
                             timestamp, record.headers, None)
        else:
            self._buffer.put(time, key_bytes, self._serialize(change.new_value), self._serialize(change.old_value),
                             timestamp, record.headers, meta.topic, meta.partition, meta.offset)
        self._enforce_constraints()

    def _enforce_constraints(self) -> None:
        buffer = self._buffer
        expiry = self._observed_stream_time - self._spec.duration_ms

        def due() -> bool:
            first = buffer.min_time()
            return first is not None and first <= expiry

        buffer.evict_while(due, self._emit)
        if self._over_capacity():
            if not self._emit_when_full:
                raise StreamsError(
                    f"{self._spec.store_name} buffer exceeded its max capacity. Currently [{buffer.num_records()}/"
                    f"{self._max_records}] records and [{buffer.size_bytes()}/{self._max_bytes}] bytes.")
            buffer.evict_while(self._over_capacity, self._emit)

    def _over_capacity(self) -> bool:
        buffer = self._buffer
        return buffer.num_records() > self._max_records or buffer.size_bytes() > self._max_bytes

    def _emit(self, key: bytes, change: BufferedChange) -> None:
        if change.new is None and self._final:
            return  # a final result that is a tombstone: nothing downstream needs it
        self._forward(Record(self._deserialize_key(key),
                             Change(self._deserialize(change.new), self._deserialize(change.old)),
                             change.timestamp, change.headers))
