"""`TypedVersionedKeyValueStore`: the `VersionedKeyValueStore` processors and tests use; applies the serdes.

The outermost layer (Kafka Streams' `MeteredVersionedKeyValueStore`): it serializes keys and values,
hands them to the bytes store (change-logged or not; never cached, as in Kafka Streams), and turns
what comes back into `VersionedRecord` objects. Like Kafka Streams' typed store it returns records without
`valid_to` (its metered layer goes through `ValueAndTimestamp`, which has no room for it). It
registers with the runtime for restoration, which replays the changelog into the bytes store.

Serdes left out at build time come from `default.key.serde` / `default.value.serde` at `init`; they see
the changelog topic name as their topic, as in Kafka Streams. A value whose serializer returns None
is a deletion, as `put(key, None, timestamp)` is.
"""

from __future__ import annotations

from typing import Any, NoReturn

from streamlet.errors import ConfigError, InvalidStateStoreError, StreamsError
from streamlet.serdes import Serde
from streamlet.stores.api import StateStoreContext
from streamlet.stores.keyvalue.typed import _no_context, changelog_topic
from streamlet.stores.position import Position
from streamlet.stores.versioned.api import VersionedBytesStore, VersionedKeyValueStore, VersionedRecord
from streamlet.stores.versioned.changelogging import ChangeLoggingVersionedBytesStore


def _timestamp(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a versioned store's {what} must be int milliseconds, got {value!r}")
    return value


class TypedVersionedKeyValueStore(VersionedKeyValueStore):
    def __init__(self, bytes_store: VersionedBytesStore, key_serde: Serde[Any] | None,
                 value_serde: Serde[Any] | None, *, logging_enabled: bool = True) -> None:
        self.name = bytes_store.name
        self.history_retention_ms = bytes_store.history_retention_ms
        self.logging_enabled = logging_enabled
        self._bytes = bytes_store
        self._below: VersionedBytesStore = bytes_store
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._topic: str | None = None
        self._serialize_key: Any = self._not_open
        self._serialize_value: Any = self._not_open
        self._deserialize_value: Any = self._not_open
        self._open = False
        self.position = Position()
        """The input offsets this store has seen (`streamlet.stores.position`)."""
        self.last_write: Any = None
        """The record context of the last write not yet folded into `position`."""
        self._record_context: Any = _no_context

    # -- lifecycle ----------------------------------------------------------------------------------
    def init(self, context: StateStoreContext) -> None:
        if self.is_open:
            raise InvalidStateStoreError(f"state store {self.name!r} is already open")
        key_serde = self._key_serde or context.app_config.default_key_serde()
        value_serde = self._value_serde or context.app_config.default_value_serde()
        if key_serde is None or value_serde is None:
            which = "key" if key_serde is None else "value"
            raise ConfigError(f"versioned store {self.name!r} has no {which} serde: give one to the store builder "
                              f"(or Materialized) or set default.{which}.serde")
        self._topic = changelog_topic(context.application_id, self.name)
        self._bytes.open(context)
        self._below = ChangeLoggingVersionedBytesStore(self._bytes, context) if self.logging_enabled else self._bytes
        self._serialize_key = key_serde.serializer.serialize
        self._serialize_value = value_serde.serializer.serialize
        self._deserialize_value = value_serde.deserializer.deserialize
        self._open = True
        self._record_context = context.record_context_reader()
        context.register(self, self._bytes.restore, logged=self.logging_enabled)

    def flush(self) -> None:
        if self._open:
            self._below.flush()

    def close(self) -> None:
        """Closing twice is harmless."""
        if not self._open:
            return
        self._open = False
        self._serialize_key = self._serialize_value = self._deserialize_value = self._not_open
        self._bytes.close()

    @property
    def persistent(self) -> bool:
        return self._bytes.persistent

    @property
    def is_open(self) -> bool:
        return self._open and self._bytes.is_open

    def _not_open(self, _topic: str | None, _data: Any) -> NoReturn:
        state = "closed" if self._topic is not None else "not initialized yet"
        raise InvalidStateStoreError(f"state store {self.name!r} is {state}")

    # -- operations ---------------------------------------------------------------------------------
    def _key(self, key: Any) -> bytes:
        if key is None:
            raise StreamsError(f"versioned store {self.name!r}: a key must not be None")
        data: bytes | None = self._serialize_key(self._topic, key)
        if data is None:
            raise StreamsError(f"versioned store {self.name!r}: the key serde turned {key!r} into None")
        return data

    def _record(self, found: VersionedRecord | None) -> VersionedRecord | None:
        if found is None:
            return None
        return VersionedRecord(self._deserialize_value(self._topic, found.value), found.timestamp)

    def put(self, key: Any, value: Any, timestamp: int) -> int:
        data = self._key(key)
        raw = None if value is None else self._serialize_value(self._topic, value)
        self.last_write = self._record_context()
        return self._below.put(data, raw, _timestamp(timestamp, "timestamp"))

    def delete(self, key: Any, timestamp: int) -> VersionedRecord | None:
        self.last_write = self._record_context()
        return self._record(self._below.delete(self._key(key), _timestamp(timestamp, "timestamp")))

    def get(self, key: Any, as_of_timestamp: int | None = None) -> VersionedRecord | None:
        data = self._key(key)
        if as_of_timestamp is None:
            return self._record(self._below.get(data))
        return self._record(self._below.get_as_of(data, _timestamp(as_of_timestamp, "as_of_timestamp")))

    def get_with_valid_to(self, key: Any, as_of_timestamp: int) -> VersionedRecord | None:
        """As `get(key, as_of_timestamp)`, with the version's `valid_to` when it is not the latest
        (what Kafka Streams' `VersionedKeyQuery` answers; the HTTP queries use it)."""
        found = self._below.get_as_of(self._key(key), _timestamp(as_of_timestamp, "as_of_timestamp"))
        if found is None:
            return None
        return VersionedRecord(self._deserialize_value(self._topic, found.value), found.timestamp, found.valid_to)

    def get_versions(self, key: Any, from_time: int, to_time: int, ascending: bool = False) -> list[VersionedRecord]:
        """The key's versions valid at some time in `[from_time, to_time]`, newest first (oldest first when
        `ascending`), each with its `valid_to` (None for the latest): Kafka Streams' `MultiVersionedKeyQuery`."""
        deserialize, topic = self._deserialize_value, self._topic
        found = [VersionedRecord(deserialize(topic, r.value), r.timestamp, r.valid_to)
                 for r in self._below.get_versions(self._key(key), from_time, to_time)]
        return found[::-1] if ascending else found

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, history_retention_ms={self.history_retention_ms}, "
                f"persistent={self.persistent})")
