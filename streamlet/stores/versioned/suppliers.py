"""The base of the versioned store suppliers: a name, a history retention and a segment interval.

Each backend's supplier (`leveldb/versioned.py`, `memory/versioned.py`) says only which key-value
bytes store the segmented layout is kept in.
"""

from __future__ import annotations

from abc import abstractmethod

from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.versioned.api import VersionedBytesStore, VersionedBytesStoreSupplier
from streamlet.stores.versioned.segmented import SegmentedVersionedBytesStore


class SegmentedVersionedBytesStoreSupplier(VersionedBytesStoreSupplier):
    factory_name = ""

    def __init__(self, name: str, history_retention_ms: int, segment_interval_ms: int) -> None:
        self.name = name
        self.history_retention_ms = history_retention_ms
        self.segment_interval_ms = segment_interval_ms

    @abstractmethod
    def _key_value_store(self) -> KeyValueBytesStore:
        """The backend's bytes store the versions are kept in."""

    def get(self) -> VersionedBytesStore:
        return SegmentedVersionedBytesStore(self._key_value_store(), self.history_retention_ms,
                                            self.segment_interval_ms)

    def __repr__(self) -> str:
        return (f"Stores.{self.factory_name}({self.name!r}, {self.history_retention_ms}, "
                f"segment_interval={self.segment_interval_ms})")
