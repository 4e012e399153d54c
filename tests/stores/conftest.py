"""Fixtures for the store tests: a recording context and a factory of stores over either backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamlet.serdes import Serdes
from streamlet.stores.factory import Stores
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.keyvalue.typed import TypedKeyValueStore
from streamlet.stores.leveldb import LevelDBKeyValueBytesStore
from streamlet.stores.memory import InMemoryKeyValueBytesStore
from tests.stores.context import RecordingStateStoreContext

BACKENDS: dict[str, Callable[[str], KeyValueBytesStore]] = {
    "leveldb": LevelDBKeyValueBytesStore,
    "memory": InMemoryKeyValueBytesStore,
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    """Run the test once per backend: both must behave identically."""
    name: str = request.param
    return name


@pytest.fixture
def make_bytes_store(backend: str) -> Callable[[str], KeyValueBytesStore]:
    return BACKENDS[backend]


@pytest.fixture
def context(tmp_path: Path) -> RecordingStateStoreContext:
    return RecordingStateStoreContext(tmp_path / "task")


def open_bytes_store(make: Callable[[str], Any], context: RecordingStateStoreContext,
                     name: str = "store") -> KeyValueBytesStore:
    store: KeyValueBytesStore = make(name)
    store.open(context)
    return store


SUPPLIERS = {
    "leveldb": Stores.persistent_key_value_store,
    "memory": Stores.in_memory_key_value_store,
}


def build_store(backend: str, context: RecordingStateStoreContext, *, name: str = "store",
                key_serde: Any = Serdes.String, value_serde: Any = Serdes.Long, cached: bool = False,
                logging: bool = True, timestamped: bool = False) -> TypedKeyValueStore:
    """A typed store built the public way (Stores + builder) and initialized with `context`."""
    supplier = SUPPLIERS[backend](name)
    factory = Stores.timestamped_key_value_store_builder if timestamped else Stores.key_value_store_builder
    builder = factory(supplier, key_serde, value_serde)
    builder = builder.with_caching_enabled() if cached else builder.with_caching_disabled()
    builder = builder.with_logging_enabled() if logging else builder.with_logging_disabled()
    store = builder.build()
    store.init(context)
    return store
