"""The Spark backend refuses, before any query starts, a store kind it cannot hold."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet.errors import TopologyError
from streamlet.serdes import Serdes
from streamlet.stores.api import StateStore, StoreBuilder
from streamlet.stores.factory import Stores
from streamlet.stores.spark import check_spark_backend


class _OwnStoreBuilder(StoreBuilder):
    """A user's own builder kind (the Processor API allows any)."""

    name = "own"
    logging_enabled = False

    def build(self) -> StateStore:
        raise NotImplementedError

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> Any:
        return self

    def with_logging_disabled(self) -> Any:
        return self

    def with_caching_enabled(self) -> Any:
        return self

    def with_caching_disabled(self) -> Any:
        return self


def test_key_value_and_window_builders_are_accepted() -> None:
    s = Serdes.String()
    check_spark_backend(Stores.key_value_store_builder(Stores.persistent_key_value_store("a"), s, s))
    check_spark_backend(Stores.timestamped_key_value_store_builder(Stores.in_memory_key_value_store("b"), s, s))
    check_spark_backend(Stores.timestamped_window_store_builder(Stores.in_memory_window_store("c", 100, 10), s, s))


def test_another_builder_kind_is_refused_by_name() -> None:
    with pytest.raises(TopologyError, match="'own'.*_OwnStoreBuilder"):
        check_spark_backend(_OwnStoreBuilder())
