"""`InMemoryKeyValueBytesStore`: bytes -> bytes in a dict, scanned in byte order.

A scan copies the pairs in its range when it starts, so it reads a snapshot, as a LevelDB iterator
does: both backends give the same answers when a processor writes while it iterates.

Nothing survives a close: with logging on, the runtime rebuilds it from the changelog on every
start, which is why it registers as non-persistent.
"""

from __future__ import annotations

from streamlet.stores.api import BytesIterator, BytesWriteBatch, QueuedWriteBatch, StateStoreContext
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.sorted_keys import SortedKeyIndex


class InMemoryKeyValueBytesStore(KeyValueBytesStore):
    def __init__(self, name: str) -> None:
        self.name = name
        self._data: dict[bytes, bytes] = {}
        self._keys = SortedKeyIndex()
        self._open = False

    def open(self, context: StateStoreContext) -> None:
        self._open = True

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self.delete(key)
            return
        data = self._data
        if key not in data:
            self._keys.add(key)
        data[key] = value

    def delete(self, key: bytes) -> None:
        if self._data.pop(key, None) is not None:
            self._keys.discard(key)

    def batch(self) -> BytesWriteBatch:
        return QueuedWriteBatch(self.put)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BytesIterator:
        if from_key is not None and to_key is not None and from_key > to_key:
            return BytesIterator(iter(()))
        data = self._data
        return BytesIterator(iter([(key, data[key]) for key in self._keys.between(from_key, to_key)]))

    def approximate_num_entries(self) -> int:
        return len(self._data)

    def flush(self) -> None:
        """Nothing to make durable: the changelog is this store's only copy outside memory."""

    def close(self) -> None:
        self._data = {}
        self._keys = SortedKeyIndex()
        self._open = False

    @property
    def persistent(self) -> bool:
        return False

    @property
    def is_open(self) -> bool:
        return self._open
