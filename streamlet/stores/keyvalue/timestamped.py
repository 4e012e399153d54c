"""`TypedTimestampedKeyValueStore`: values are `ValueAndTimestamp`, as the DSL's aggregations keep them.

Locally each value is stored as an 8-byte big-endian timestamp followed by the value serde's bytes
(value_formats.py); the changelog carries the plain value bytes with that timestamp as the record
timestamp. A flush listener sees plain values, and the new value's timestamp (the record's
timestamp for a delete), as Kafka Streams' timestamped cache flush listener forwards them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from streamlet.record import Headers, KeyValue
from streamlet.serdes import Serde
from streamlet.stores.api import FlushListener, StateStoreContext, ValueAndTimestamp
from streamlet.stores.keyvalue.api import KeyValueBytesStore, TimestampedKeyValueStore
from streamlet.stores.keyvalue.changelogging import ChangeLoggingTimestampedKeyValueBytesStore
from streamlet.stores.keyvalue.typed import TypedKeyValueStore
from streamlet.stores.value_formats import TimestampedValueFormat, ValueFormat

_ValueAndTimestamp: Final = ValueAndTimestamp  # Final: a C static when compiled, not a dict look-up per use


def _checked(value: Any) -> ValueAndTimestamp | None:
    """None for a delete (`None`, or a `ValueAndTimestamp` without value, as Java's `make` gives null)."""
    if value is None:
        return None
    if not isinstance(value, ValueAndTimestamp):
        raise TypeError(
            f"a timestamped store takes ValueAndTimestamp(value, timestamp) values, got {type(value).__name__}"
        )
    return None if value.value is None else value


class TypedTimestampedKeyValueStore(TypedKeyValueStore, TimestampedKeyValueStore[Any]):
    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return TimestampedValueFormat(serde, topic)

    def _change_logging(self, store: KeyValueBytesStore, context: StateStoreContext) -> KeyValueBytesStore:
        return ChangeLoggingTimestampedKeyValueBytesStore(store, context)

    def put(self, key: Any, value: Any) -> None:
        if type(value) is not _ValueAndTimestamp or value[0] is None:  # the usual case skips the checks
            value = _checked(value)
        self.last_write = self._record_context()
        self._put_bytes(self._last_key_bytes if key is self._last_key else self._key(key), key, value)

    def put_if_absent(self, key: Any, value: Any) -> Any:
        return super().put_if_absent(key, _checked(value))

    def put_all(self, entries: Iterable[KeyValue] | Iterable[tuple[Any, Any]]) -> None:
        super().put_all([(k, _checked(v)) for k, v in entries])

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        def forward_plain_values(key: Any, new: ValueAndTimestamp | None, old: ValueAndTimestamp | None,
                                 timestamp: int, headers: Headers) -> None:
            # Indexed, not `.value`: compiled, a typed tuple's item is read directly, an attribute looked up.
            listener(
                key,
                None if new is None else new[0],
                None if old is None else old[0],
                timestamp if new is None else new[1],
                headers,
            )

        return super().set_flush_listener(forward_plain_values, send_old_values)
