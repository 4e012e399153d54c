"""State stores, on one axis: store types first, each with its layers; backends beside them.

Store types (Kafka Streams' way): `keyvalue/`, `window/`, `session/`, `versioned/`, `suppression/`. Each type folder
holds that type's contract (`api.py`), its builders and its layers, inner to outer: bytes store ->
change-logging (when logging is on) -> cache (when caching is on and the task has a cache budget) ->
typed facade. Backends: `leveldb/`, `memory/`, `spark/`. Each backend folder implements the bytes
store of every type it serves, one file per type (`keyvalue.py`, `window.py`), plus its suppliers;
session stores are kept in key-value bytes stores, and so are versioned stores (Kafka Streams' segmented
layout maps onto one; `leveldb/versioned.py` and `memory/versioned.py` hold their suppliers), and the
suppression buffer is in memory only (it is rebuilt from its changelog), as in Kafka Streams.

At this root only what every type shares: the base contracts (`api.py`: `StateStore`, the store
context, `StoreBuilder`, iterators and write batches), the base builder (`builders.py`), the record
cache as a data structure (`cache.py`, `sorted_keys.py`), value formats, the layer base
(`wrapping.py`), and the public factory `Stores` (`factory.py`).
"""

from streamlet.stores.api import (
    AggregationWithHeaders,
    CachedStateStore,
    KeyValueIterator,
    StateStore,
    StoreBuilder,
    ValueAndTimestamp,
    ValueTimestampHeaders,
)
from streamlet.stores.factory import Stores
from streamlet.stores.keyvalue.api import (
    KeyValueBytesStore,
    KeyValueBytesStoreSupplier,
    KeyValueStore,
    TimestampedKeyValueStore,
)
from streamlet.stores.keyvalue.headers import TimestampedKeyValueStoreWithHeaders
from streamlet.stores.session.headers import SessionStoreWithHeaders
from streamlet.stores.versioned.api import VersionedBytesStoreSupplier, VersionedKeyValueStore, VersionedRecord
from streamlet.stores.window.api import TimestampedWindowStore, WindowBytesStoreSupplier, WindowStore
from streamlet.stores.window.headers import TimestampedWindowStoreWithHeaders

__all__ = [
    "AggregationWithHeaders",
    "CachedStateStore",
    "KeyValueBytesStore",
    "KeyValueBytesStoreSupplier",
    "KeyValueIterator",
    "KeyValueStore",
    "SessionStoreWithHeaders",
    "StateStore",
    "StoreBuilder",
    "Stores",
    "TimestampedKeyValueStore",
    "TimestampedKeyValueStoreWithHeaders",
    "TimestampedWindowStore",
    "TimestampedWindowStoreWithHeaders",
    "ValueAndTimestamp",
    "ValueTimestampHeaders",
    "VersionedBytesStoreSupplier",
    "VersionedKeyValueStore",
    "VersionedRecord",
    "WindowBytesStoreSupplier",
    "WindowStore",
]
