"""`TypedKeyValueStore`: the `KeyValueStore` processors and tests use; applies the serdes.

It is the outermost layer (Kafka Streams' "metered" store): it serializes the key once, and hands
the key bytes, the key object and the value object to a `StoreAccess` chosen at `init` (cached or
direct, over the bytes store, change-logged or not). It is also what registers with the runtime
for restoration, and restoration writes straight into the bytes store: no changelog, no cache,
no forwarding.

Serdes left out at build time come from `default.key.serde` / `default.value.serde` at `init`.
Store serdes see the changelog topic name as their topic, as in Kafka Streams.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

from mypy_extensions import mypyc_attr

from streamlet.errors import ConfigError, InvalidStateStoreError, StreamsError
from streamlet.record import KeyValue
from streamlet.serdes import NoFastPath, Serde, fast_serializer
from streamlet.stores.api import CachedStateStore, ChangelogEntry, FlushListener, KeyValueIterator, StateStoreContext
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.access import ClosedAccess, DirectAccess, StoreAccess
from streamlet.stores.keyvalue.api import KeyValueBytesStore, KeyValueStore
from streamlet.stores.keyvalue.caching import CachedAccess
from streamlet.stores.keyvalue.changelogging import ChangeLoggingKeyValueBytesStore
from streamlet.stores.position import Position
from streamlet.stores.value_formats import PlainValueFormat, ValueFormat


def changelog_topic(application_id: str, store_name: str) -> str:
    return f"{application_id}-{store_name}-changelog"


_NO_KEY = object()


def _no_context() -> None:
    """A store not open yet records no write position."""
    return None

_IMMUTABLE_KEYS = (str, bytes, int)
"""Key types whose serialized form cannot change while the same object is passed again."""


@mypyc_attr(allow_interpreted_subclasses=True)  # the session store and the outer-join store extend it
class TypedKeyValueStore(KeyValueStore[Any, Any], CachedStateStore):
    def __init__(
        self,
        bytes_store: KeyValueBytesStore,
        key_serde: Serde[Any] | None,
        value_serde: Serde[Any] | None,
        *,
        logging_enabled: bool = True,
        caching_enabled: bool = False,
        cache_key_prefix_size: int = 0,
    ) -> None:
        """`cache_key_prefix_size`: the bytes Kafka Streams' cache of this kind of store puts before the
        store key in its cache keys, which count in an entry's size (a session store's segment id)."""
        self.name = bytes_store.name
        self._cache_key_prefix_size = cache_key_prefix_size
        self._bytes = bytes_store
        self._key_serde = key_serde
        self._value_serde = value_serde
        self.logging_enabled = logging_enabled
        self.caching_enabled = caching_enabled
        self._format: ValueFormat | None = None
        self._topic: str | None = None
        self._access: StoreAccess = ClosedAccess(self.name, "not initialized yet")
        self._record_cache: CachedAccess | None = None
        """`_access` when it is the record cache: compiled, `get` and `put` call it directly instead of through
        Python's call protocol (only while `_access` is still that cache: the store metrics may wrap it)."""
        self._serialize_key: Any = self._not_open
        self._key_type: type = NoFastPath
        self._encode_key: Any = None
        self._last_key: Any = _NO_KEY  # the last immutable key serialized, and its bytes: an
        self._last_key_bytes = b""  # aggregation's get and put of one key serialize it once
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
        for which, serde in (("key", key_serde), ("value", value_serde)):
            if serde is None:
                raise ConfigError(
                    f"state store {self.name!r} has no {which} serde: give one to the store builder "
                    f"(or Materialized) or set default.{which}.serde"
                )
        assert key_serde is not None and value_serde is not None
        topic = changelog_topic(context.application_id, self.name)
        value_format = self._value_format(value_serde, topic)
        self._bytes.open(context)
        below: KeyValueBytesStore = self._bytes
        if self.logging_enabled:
            below = self._change_logging(self._bytes, context)
        budget = context.cache_budget_bytes(self.name) if self.caching_enabled else 0
        access: StoreAccess
        if budget > 0:
            access = CachedAccess(below, key_serde.deserializer, topic, value_format, context, budget,
                                  self._cache_key_prefix_size)
        else:
            access = DirectAccess(below, key_serde.deserializer, topic, value_format)
        self._topic = topic
        self._format = value_format
        self._serialize_key = key_serde.serializer.serialize
        self._key_type, self._encode_key = fast_serializer(key_serde.serializer)
        self._last_key = _NO_KEY
        self._access = access
        self._record_cache = access if isinstance(access, CachedAccess) else None
        self._record_context = context.record_context_reader()
        context.register(self, self._restore, logged=self.logging_enabled,
                         with_headers=self._restores_with_headers())

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return PlainValueFormat(serde, topic)

    def _restores_with_headers(self) -> bool:
        """True when the changelog records' headers are part of the stored values (a store with headers)."""
        return False

    def _change_logging(self, store: KeyValueBytesStore, context: StateStoreContext) -> KeyValueBytesStore:
        return ChangeLoggingKeyValueBytesStore(store, context)

    def _restore(self, entries: list[ChangelogEntry]) -> None:
        """Apply one batch read back from the changelog, straight into the bytes store."""
        assert self._format is not None
        writes = self._format.from_changelog_entries(entries)
        with self._bytes.batch() as batch:
            batch.put_all(writes)
        self._access.forget(key for key, _value in writes)

    def flush(self) -> None:
        self._access.flush()

    def close(self) -> None:
        """Close without flushing (see `CachedAccess.close`); closing twice is harmless."""
        if not self.is_open:
            return
        try:
            self._access.close()
        finally:
            self._access = ClosedAccess(self.name, "closed")
            self._record_cache = None
            self._serialize_key = self._not_open
            self._key_type = NoFastPath
            self._last_key = _NO_KEY

    @property
    def persistent(self) -> bool:
        return self._bytes.persistent

    @property
    def is_open(self) -> bool:
        return self._bytes.is_open and not isinstance(self._access, ClosedAccess)

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        return self._access.set_flush_listener(listener, send_old_values)

    # -- key-value operations -----------------------------------------------------------------------
    def _key(self, key: Any) -> bytes:
        if key is self._last_key:
            return self._last_key_bytes
        data: bytes | None = self._serialize_key(self._topic, key)
        if data is None:
            raise StreamsError(f"state store {self.name!r}: a key must not be None")
        if type(key) in _IMMUTABLE_KEYS:
            self._last_key, self._last_key_bytes = key, data
        return data

    def _not_open(self, _topic: str | None, _key: Any) -> NoReturn:
        state = "closed" if self._format is not None else "not initialized yet"
        raise InvalidStateStoreError(f"state store {self.name!r} is {state}")

    def get(self, key: Any) -> Any:
        if key is self._last_key:
            data = self._last_key_bytes
        elif type(key) is self._key_type:  # `_key` inlined for a serde with a fast path (an immutable type)
            try:
                data = self._encode_key(key)
            except Exception:
                data = self._key(key)  # the serde's own call: its error
            self._last_key, self._last_key_bytes = key, data
        else:
            data = self._key(key)
        cached = self._record_cache
        if cached is not None and cached is self._access:
            return cached.get(data, key)
        return self._access.get(data, key)

    def put(self, key: Any, value: Any) -> None:
        self.last_write = self._record_context()
        self._put_bytes(self._last_key_bytes if key is self._last_key else self._key(key), key, value)

    def _put_bytes(self, data: bytes, key: Any, value: Any) -> None:
        """`_access.put`, directly when it is the record cache (see `_record_cache`)."""
        cached = self._record_cache
        if cached is not None and cached is self._access:
            cached.put(data, key, value)
        else:
            self._access.put(data, key, value)

    def put_if_absent(self, key: Any, value: Any) -> Any:
        data = self._key(key)
        old = self._access.get(data, key)
        if old is None:
            self.last_write = self._record_context()
            self._access.put(data, key, value)
        return old

    def put_all(self, entries: Iterable[KeyValue] | Iterable[tuple[Any, Any]]) -> None:
        key = self._key
        self.last_write = self._record_context()
        self._access.put_all([(key(k), k, v) for k, v in entries])

    def delete(self, key: Any) -> Any:
        self.last_write = self._record_context()
        return self._access.delete(self._key(key), key)

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        low = None if from_key is None else self._key(from_key)
        high = None if to_key is None else self._key(to_key)
        if low is not None and high is not None and low > high:
            return StoreKeyValueIterator(iter(()))  # as Kafka Streams: an inverted range is empty
        return self._access.range(low, high)

    def all(self) -> KeyValueIterator[Any, Any]:
        return self._access.range(None, None)

    def approximate_num_entries(self) -> int:
        return self._access.approximate_num_entries()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, persistent={self.persistent})"
