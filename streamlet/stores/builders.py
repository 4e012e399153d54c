"""Store builders: carry a supplier, the serdes and the logging/caching choices; build one store per task.

Defaults are Kafka Streams': logging on, caching off (the DSL's `Materialized` turns caching on).
The `with_*` methods change the builder and return it, so they chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from streamlet.serdes import resolve_serde
from streamlet.stores.api import KeyValueBytesStoreSupplier, StoreBuilder
from streamlet.stores.timestamped import TypedTimestampedKeyValueStore
from streamlet.stores.typed import TypedKeyValueStore

DEFAULT_CHANGELOG_CONFIG: dict[str, str] = {"cleanup.policy": "compact"}
"""What a key-value changelog topic gets unless the user's logging config says otherwise."""


class ConfigurableStoreBuilder(StoreBuilder):
    """The logging and caching switches every builder has; `_changelog_defaults` is the changelog topic
    config a store kind starts from (user settings given to `with_logging_enabled` override it)."""

    def _changelog_defaults(self) -> dict[str, str]:
        return dict(DEFAULT_CHANGELOG_CONFIG)

    def with_logging_enabled(self, config: Mapping[str, Any] | None = None) -> Self:
        self.logging_enabled = True
        self.logging_config = {**self._changelog_defaults(), **{str(k): str(v) for k, v in (config or {}).items()}}
        return self

    def with_logging_disabled(self) -> Self:
        self.logging_enabled = False
        self.logging_config = {}
        return self

    def with_caching_enabled(self) -> Self:
        self.caching_enabled = True
        return self

    def with_caching_disabled(self) -> Self:
        self.caching_enabled = False
        return self


class KeyValueStoreBuilder(ConfigurableStoreBuilder):
    def __init__(self, supplier: KeyValueBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None) -> None:
        if not isinstance(supplier, KeyValueBytesStoreSupplier):
            raise TypeError(
                f"a key-value store builder needs a store supplier such as "
                f"Stores.persistent_key_value_store(name), got {supplier!r}"
            )
        self.supplier = supplier
        self.name = supplier.name
        self.key_serde = resolve_serde(key_serde)
        self.value_serde = resolve_serde(value_serde)
        self.persistent = supplier.persistent
        self.logging_enabled = True
        self.caching_enabled = False
        self.logging_config = dict(DEFAULT_CHANGELOG_CONFIG)

    def build(self) -> TypedKeyValueStore:
        return TypedKeyValueStore(
            self.supplier.get(), self.key_serde, self.value_serde,
            logging_enabled=self.logging_enabled, caching_enabled=self.caching_enabled,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.supplier!r}, {self.key_serde!r}, {self.value_serde!r}, "
            f"logging_enabled={self.logging_enabled}, caching_enabled={self.caching_enabled})"
        )


class TimestampedKeyValueStoreBuilder(KeyValueStoreBuilder):
    """Builds `TimestampedKeyValueStore`s: values are `ValueAndTimestamp` over the given value serde."""

    def build(self) -> TypedTimestampedKeyValueStore:
        return TypedTimestampedKeyValueStore(
            self.supplier.get(), self.key_serde, self.value_serde,
            logging_enabled=self.logging_enabled, caching_enabled=self.caching_enabled,
        )
