"""The session store with headers (Kafka Streams' KIP-1271): aggregates are `AggregationWithHeaders`.

Each session's aggregate is kept as Kafka Streams 4.4 keeps it: a varint length of the headers' bytes, the
headers, then the aggregation serde's bytes (no timestamp: a session's time is in its key). The changelog is keyed
by Kafka Streams' session key schema and carries the plain aggregation bytes under the current record's timestamp
with the stored headers as the record's headers; a delete logs the current record's timestamp and headers.
Restoring joins a changelog record's headers and aggregation back into the local bytes. Session stores without
headers are untouched by this.
"""

from __future__ import annotations

from typing import Any

from streamlet.record import Headers, KeyValue
from streamlet.serdes import Serde
from streamlet.stores.api import (
    AggregationWithHeaders,
    FlushListener,
    KeyValueIterator,
    StateStoreContext,
    checked_with_headers,
)
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.keyvalue.changelogging import ChangeLoggingSessionBytesStoreWithHeaders
from streamlet.stores.session.api import SessionBytesStoreSupplier, SessionStore
from streamlet.stores.session.typed import TypedSessionStore
from streamlet.stores.value_formats import AggregationHeadersValueFormat, DslAggregationHeadersValueFormat, ValueFormat


class SessionStoreWithHeaders(SessionStore):
    """A session store whose aggregates are `AggregationWithHeaders(aggregation, headers)`: each session keeps
    the headers of the write that put its aggregate, as Kafka Streams' `SessionStoreWithHeaders`. Its changelog
    records carry the stored headers as record headers. Build one with `Stores.session_store_with_headers_builder`."""


class TypedSessionStoreWithHeaders(TypedSessionStore, SessionStoreWithHeaders):
    """The `SessionStoreWithHeaders` of a task, over a LevelDB or in-memory bytes store."""

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return AggregationHeadersValueFormat(serde, topic)

    def _change_logging(self, store: KeyValueBytesStore, context: StateStoreContext) -> KeyValueBytesStore:
        return ChangeLoggingSessionBytesStoreWithHeaders(store, context)

    def _restores_with_headers(self) -> bool:
        return True

    def put(self, session_key: Any, aggregate: Any) -> None:
        super().put(session_key, checked_with_headers(aggregate, AggregationWithHeaders, "session store with headers"))


    def fetch_with_headers(self, key: Any) -> KeyValueIterator[Any, Any]:
        """`fetch(key)` (values are `AggregationWithHeaders` already; what the header-returning queries read)."""
        return self.fetch(key)


class DslSessionStoreWithHeaders(TypedSessionStore, SessionStoreWithHeaders):
    """A session aggregation's store under `dsl.store.format=HEADERS` (Kafka Streams' KIP-1285): kept and logged
    as a session store with headers, while the aggregation reads and writes plain aggregates. The aggregations
    store their aggregates without headers, as Kafka Streams 4.4.0's do, so the header-returning queries answer
    no headers; a removed session's changelog record carries the current record's headers."""

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return DslAggregationHeadersValueFormat(serde, topic)

    def _change_logging(self, store: KeyValueBytesStore, context: StateStoreContext) -> KeyValueBytesStore:
        return ChangeLoggingSessionBytesStoreWithHeaders(store, context)

    def _restores_with_headers(self) -> bool:
        return True

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Flushed sessions go downstream with the headers their new aggregate is stored with (none, for what the
        DSL writes; none for a removed session), as Kafka Streams 4.4.0's session flush listener with headers
        forwards them, not with the headers of the record that made the update."""

        def stored_headers(key: Any, new: Any, old: Any, timestamp: int, _headers: Headers) -> None:
            listener(key, new, old, timestamp, ())

        return super().set_flush_listener(stored_headers, send_old_values)

    def fetch_with_headers(self, key: Any) -> KeyValueIterator[Any, Any]:
        """`fetch(key)`, aggregates as `AggregationWithHeaders`."""
        with self.fetch(key) as found:
            entries = [KeyValue(kv.key, AggregationWithHeaders(kv.value, ())) for kv in found]
        return StoreKeyValueIterator(iter(entries))


class SessionHeadersBytesStoreSupplier(SessionBytesStoreSupplier):
    """A LevelDB session store for a session store with headers."""

    def __repr__(self) -> str:
        return f"Stores.persistent_session_store_with_headers({self.name!r}, {self.retention_ms})"
