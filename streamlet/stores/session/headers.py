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

from streamlet.serdes import Serde
from streamlet.stores.api import AggregationWithHeaders, StateStoreContext
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.keyvalue.changelogging import ChangeLoggingSessionBytesStoreWithHeaders
from streamlet.stores.session.api import SessionBytesStoreSupplier, SessionStore
from streamlet.stores.session.builders import SessionStoreBuilder
from streamlet.stores.session.typed import TypedSessionStore
from streamlet.stores.value_formats import AggregationHeadersValueFormat, ValueFormat


class SessionStoreWithHeaders(SessionStore):
    """A session store whose aggregates are `AggregationWithHeaders(aggregation, headers)`: each session keeps
    the headers of the write that put its aggregate, as Kafka Streams' `SessionStoreWithHeaders`. Its changelog
    records carry the stored headers as record headers. Build one with `Stores.session_store_with_headers_builder`."""


def _checked(value: Any) -> AggregationWithHeaders | None:
    """None for a delete (`None`, or an `AggregationWithHeaders` without aggregation); headers as a tuple."""
    if value is None:
        return None
    if not isinstance(value, AggregationWithHeaders):
        raise TypeError("a session store with headers takes AggregationWithHeaders(aggregation, headers) values, "
                        f"got {type(value).__name__}")
    if value.aggregation is None:
        return None
    headers = value.headers
    if headers is None or type(headers) is not tuple:
        value = value._replace(headers=tuple(headers or ()))
    return value


class TypedSessionStoreWithHeaders(TypedSessionStore, SessionStoreWithHeaders):
    """The `SessionStoreWithHeaders` of a task, over a LevelDB or in-memory bytes store."""

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return AggregationHeadersValueFormat(serde, topic)

    def _change_logging(self, store: KeyValueBytesStore, context: StateStoreContext) -> KeyValueBytesStore:
        return ChangeLoggingSessionBytesStoreWithHeaders(store, context)

    def _restores_with_headers(self) -> bool:
        return True

    def put(self, session_key: Any, aggregate: Any) -> None:
        super().put(session_key, _checked(aggregate))


class SessionStoreWithHeadersBuilder(SessionStoreBuilder):
    """Builds `SessionStoreWithHeaders` over any session supplier (LevelDB or in-memory)."""

    def build(self) -> TypedSessionStoreWithHeaders:
        return TypedSessionStoreWithHeaders(self.supplier.get(), self.key_serde, self.value_serde,
                                            retention_ms=self.supplier.retention_ms,
                                            logging_enabled=self.logging_enabled, caching_enabled=self.caching_enabled)


class SessionHeadersBytesStoreSupplier(SessionBytesStoreSupplier):
    """A LevelDB session store for a session store with headers."""

    def __repr__(self) -> str:
        return f"Stores.persistent_session_store_with_headers({self.name!r}, {self.retention_ms})"
