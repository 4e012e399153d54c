"""The change-logging layer of a versioned store: each put and delete also goes to the changelog.

A versioned store's changelog is plain: the key bytes, the value bytes (None for a deletion) and the
version's own timestamp as the Kafka record's timestamp, whatever record is being processed, exactly
as Kafka Streams' `ChangeLoggingVersionedKeyValueBytesStore` writes it. Like it, this layer logs a
write even when the store refused it (older than the grace period): restoring skips it again, by
the same rule. Restoration replays each record as a put at its timestamp.
"""

from __future__ import annotations

from streamlet.stores.api import ChangelogEntry, StateStoreContext
from streamlet.stores.versioned.api import VersionedBytesStore, VersionedRecord
from streamlet.stores.wrapping import _StoreLayer


class ChangeLoggingVersionedBytesStore(_StoreLayer[VersionedBytesStore], VersionedBytesStore):
    """Logs `(key, value, version timestamp)` after each write; reads pass straight through."""

    def __init__(self, inner: VersionedBytesStore, context: StateStoreContext) -> None:
        self.name = inner.name
        self.inner = inner
        self.history_retention_ms = inner.history_retention_ms
        self._log_change = context.log_change

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        valid_to = self.inner.put(key, value, timestamp)
        self._log_change(self.name, key, value, timestamp)
        return valid_to

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        existing = self.inner.delete(key, timestamp)
        self._log_change(self.name, key, None, timestamp)
        return existing

    def get(self, key: bytes) -> VersionedRecord | None:
        return self.inner.get(key)

    def get_as_of(self, key: bytes, as_of_timestamp: int) -> VersionedRecord | None:
        return self.inner.get_as_of(key, as_of_timestamp)

    def get_versions(self, key: bytes, from_time: int, to_time: int) -> list[VersionedRecord]:
        return self.inner.get_versions(key, from_time, to_time)

    def restore(self, entries: list[ChangelogEntry]) -> None:
        self.inner.restore(entries)
