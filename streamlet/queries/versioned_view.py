"""`ReadOnlyVersionedView`: one versioned store across this instance's local copies, read-only.

A key lives in exactly one copy, so `get` asks each in turn. As Kafka Streams' IQv2 `VersionedKeyQuery`
answers, a read as of a time gives the version's `valid_to` when a newer version exists; the latest
version has none. Versioned stores have no range or scan queries (nor have Kafka Streams').
"""

from __future__ import annotations

from typing import Any

from streamlet.errors import InvalidStateStoreError
from streamlet.queries.key_value_view import StoreView
from streamlet.queries.provider import closed_under_query
from streamlet.stores.versioned.api import VersionedRecord


class ReadOnlyVersionedView(StoreView):
    """Reads a versioned store's versions by key (see the module docstring); may raise
    `StateStoreMigratedError` while a rebalance moves the store, or another `InvalidStateStoreError`."""

    def get(self, key: Any, as_of_timestamp: int | None = None) -> VersionedRecord | None:
        """The key's latest version, or the one valid at `as_of_timestamp` (with its `valid_to`)."""
        stores = self._provider.stores()
        try:
            for store in stores:
                found = store.get(key) if as_of_timestamp is None else store.get_with_valid_to(key, as_of_timestamp)
                if found is not None:
                    return found
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc
        return None
