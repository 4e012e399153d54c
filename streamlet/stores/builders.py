"""`ConfigurableStoreBuilder`: the logging and caching switches every store builder has.

Defaults are Kafka Streams': logging on, caching off (the DSL's `Materialized` turns caching on).
The `with_*` methods change the builder and return it, so they chain. Each store type's builders
(`keyvalue/builders.py`, `window/builders.py`, `session/builders.py`) extend it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from streamlet.stores.api import StoreBuilder

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
