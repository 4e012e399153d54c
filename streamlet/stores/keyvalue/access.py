"""How the typed facade reaches its data: `StoreAccess`, with the uncached and the closed variants.

The typed store serializes the key once and hands the rest to one `StoreAccess` object, chosen at
`init`: `DirectAccess` (no cache: every write goes straight down, and the processor forwards) or
`CachedAccess` (caching.py). Before `init` and after `close` it holds a `ClosedAccess`, so the open
check costs nothing on the hot path: there is no check, just an object whose methods all raise.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NoReturn, Protocol

from streamlet.errors import InvalidStateStoreError
from streamlet.record import KeyValue
from streamlet.serdes import Deserializer
from streamlet.stores.api import BytesIterator, FlushListener, KeyValueIterator
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.value_formats import ValueFormat


class StoreAccess(Protocol):
    def get(self, key: bytes, key_obj: Any) -> Any: ...

    def put(self, key: bytes, key_obj: Any, value: Any) -> None:
        """`value` None deletes."""

    def delete(self, key: bytes, key_obj: Any) -> Any:
        """Delete and return the old value (None if there was none)."""

    def put_all(self, entries: list[tuple[bytes, Any, Any]]) -> None: ...

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[Any, Any]: ...

    def range_list(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, Any, Any]]:
        """The entries of `range(from_key, to_key)` as (key bytes, key, value), read at once: for small
        scans on the hot path (a session store's lookup of one key's sessions)."""

    def approximate_num_entries(self) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool: ...

    def forget(self, keys: Iterable[bytes]) -> None:
        """Drop whatever is held about these keys above the bytes store (restoration rewrote them)."""


class DirectAccess:
    """No cache: objects are (de)serialized on every call and every write reaches the store below."""

    def __init__(self, store: KeyValueBytesStore, key_deserializer: Deserializer[Any], topic: str | None,
                 value_format: ValueFormat) -> None:
        self._store = store
        self._deserialize_key = key_deserializer.deserialize
        self._topic = topic
        self._format = value_format

    def get(self, key: bytes, key_obj: Any) -> Any:
        data = self._store.get(key)
        return None if data is None else self._format.decode(data)

    def put(self, key: bytes, key_obj: Any, value: Any) -> None:
        self._store.put(key, None if value is None else self._format.encode(value))

    def delete(self, key: bytes, key_obj: Any) -> Any:
        old = self.get(key, key_obj)
        self._store.delete(key)
        return old

    def put_all(self, entries: list[tuple[bytes, Any, Any]]) -> None:
        encode = self._format.encode
        with self._store.batch() as batch:
            for key, _key_obj, value in entries:
                batch.put(key, None if value is None else encode(value))

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[Any, Any]:
        raw = self._store.range(from_key, to_key)
        return StoreKeyValueIterator(self._typed(raw), raw.close)

    def range_list(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, Any, Any]]:
        deserialize_key, topic, decode = self._deserialize_key, self._topic, self._format.decode
        return [(key, deserialize_key(topic, key), decode(value))
                for key, value in self._store.range_list(from_key, to_key)]

    def _typed(self, raw: BytesIterator) -> Iterator[KeyValue]:
        deserialize_key, topic, decode = self._deserialize_key, self._topic, self._format.decode
        try:
            for key, value in raw:
                yield KeyValue(deserialize_key(topic, key), decode(value))
        finally:
            raw.close()

    def approximate_num_entries(self) -> int:
        return self._store.approximate_num_entries()

    def flush(self) -> None:
        self._store.flush()

    def close(self) -> None:
        self._store.close()

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        return False

    def forget(self, keys: Iterable[bytes]) -> None:
        pass


class ClosedAccess:
    """What a store holds while it is not open: every use raises `InvalidStateStoreError`."""

    def __init__(self, store_name: str, state: str) -> None:
        self._message = f"state store {store_name!r} is {state}"

    def _fail(self) -> NoReturn:
        raise InvalidStateStoreError(self._message)

    def get(self, key: bytes, key_obj: Any) -> Any:
        self._fail()

    def put(self, key: bytes, key_obj: Any, value: Any) -> None:
        self._fail()

    def delete(self, key: bytes, key_obj: Any) -> Any:
        self._fail()

    def put_all(self, entries: list[tuple[bytes, Any, Any]]) -> None:
        self._fail()

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[Any, Any]:
        self._fail()

    def range_list(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, Any, Any]]:
        self._fail()

    def approximate_num_entries(self) -> int:
        self._fail()

    def flush(self) -> None:
        self._fail()

    def close(self) -> None:
        pass

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        self._fail()

    def forget(self, keys: Iterable[bytes]) -> None:
        self._fail()
