"""Versioned key-value stores: several versions per key, read as of a timestamp (Kafka Streams' KIP-889).

The contract (`api.py`: `VersionedKeyValueStore`, `VersionedRecord`, the bytes store and supplier), the
segmented layout every backend keeps (`segmented.py`, rows in `segment_row.py`), and the layers over
it, inner to outer: bytes store -> change-logging (`changelogging.py`) -> typed facade (`typed.py`);
no cache, as in Kafka Streams. `builders.py` has the builder, `suppliers.py` the suppliers' base; the
backends' suppliers are `leveldb/versioned.py` and `memory/versioned.py`.
"""

from streamlet.stores.versioned.api import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    VersionedBytesStore,
    VersionedBytesStoreSupplier,
    VersionedKeyValueStore,
    VersionedRecord,
)
from streamlet.stores.versioned.builders import VersionedKeyValueStoreBuilder
from streamlet.stores.versioned.typed import TypedVersionedKeyValueStore

__all__ = [
    "PUT_RETURN_CODE_NOT_PUT",
    "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
    "TypedVersionedKeyValueStore",
    "VersionedBytesStore",
    "VersionedBytesStoreSupplier",
    "VersionedKeyValueStore",
    "VersionedKeyValueStoreBuilder",
    "VersionedRecord",
]
