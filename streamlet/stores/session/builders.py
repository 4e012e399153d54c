"""`SessionStoreBuilder`: a session bytes store supplier plus serdes, logging and caching."""

from __future__ import annotations

from typing import Any

from streamlet.serdes import resolve_serde
from streamlet.stores.builders import ConfigurableStoreBuilder
from streamlet.stores.session.api import SessionBytesStoreSupplier
from streamlet.stores.session.headers import DslSessionStoreWithHeaders, TypedSessionStoreWithHeaders
from streamlet.stores.session.typed import TypedSessionStore
from streamlet.stores.window.builders import window_changelog_config


class SessionStoreBuilder(ConfigurableStoreBuilder):
    """The changelog is compacted and deleted by time (retention plus one day), as for window stores."""

    def __init__(self, supplier: SessionBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None) -> None:
        if not isinstance(supplier, SessionBytesStoreSupplier):
            raise TypeError(f"a session store builder needs a session store supplier such as "
                            f"Stores.persistent_session_store(name, retention), got {supplier!r}")
        self.supplier = supplier
        self.name = supplier.name
        self.key_serde = resolve_serde(key_serde)
        self.value_serde = resolve_serde(value_serde)
        self.persistent = supplier.persistent
        self.logging_enabled = True
        self.caching_enabled = False
        self.logging_config = self._changelog_defaults()

    def _changelog_defaults(self) -> dict[str, str]:
        return window_changelog_config(self.supplier.retention_ms)

    dsl_store = False
    """True for a session aggregation's store: `dsl.store.format` applies to it."""
    headers_format = False
    """Set by the runtime on a session aggregation's store under `dsl.store.format=HEADERS`: the store is then kept
    as a session store with headers (`DslSessionStoreWithHeaders`)."""

    def build(self) -> TypedSessionStore:
        kind = DslSessionStoreWithHeaders if self.headers_format else TypedSessionStore
        return kind(self.supplier.get(), self.key_serde, self.value_serde, retention_ms=self.supplier.retention_ms,
                    logging_enabled=self.logging_enabled, caching_enabled=self.caching_enabled)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.supplier!r}, {self.key_serde!r}, {self.value_serde!r}, "
                f"logging_enabled={self.logging_enabled}, caching_enabled={self.caching_enabled})")


class SessionStoreWithHeadersBuilder(SessionStoreBuilder):
    """Builds `SessionStoreWithHeaders` over any session supplier (LevelDB or in-memory)."""

    def build(self) -> TypedSessionStoreWithHeaders:
        return TypedSessionStoreWithHeaders(self.supplier.get(), self.key_serde, self.value_serde,
                                            retention_ms=self.supplier.retention_ms,
                                            logging_enabled=self.logging_enabled, caching_enabled=self.caching_enabled)
