"""Session stores: one aggregate per key and session window, on LevelDB or in memory.

A session store is a key-value store whose keys are Kafka Streams' session key schema (key bytes,
then the session's end and start as 8-byte big-endian longs), so the same layers serve it: bytes
store (LevelDB or memory), change-logging (the changelog keys are Java's), the record cache, and a
typed facade (`TypedSessionStore`) that adds the session operations and retention.
"""

from streamlet.stores.session.api import SessionBytesStoreSupplier, SessionStore
from streamlet.stores.session.builders import SessionStoreBuilder
from streamlet.stores.session.typed import TypedSessionStore

__all__ = ["SessionBytesStoreSupplier", "SessionStore", "SessionStoreBuilder", "TypedSessionStore"]
