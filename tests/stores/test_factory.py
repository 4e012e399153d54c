"""`Stores` and the store builders: defaults, chaining, serde resolution, one new store per build."""

from __future__ import annotations

import pytest

from streamlet.errors import SerializationError, TopologyError
from streamlet.serdes import LongSerde, Serdes, StringSerde
from streamlet.stores.api import StoreBuilder
from streamlet.stores.factory import Stores
from streamlet.stores.keyvalue.api import KeyValueBytesStoreSupplier, KeyValueStore, TimestampedKeyValueStore
from streamlet.stores.leveldb import LevelDBKeyValueBytesStore
from streamlet.stores.memory import InMemoryKeyValueBytesStore


def test_suppliers() -> None:
    persistent = Stores.persistent_key_value_store("p")
    memory = Stores.in_memory_key_value_store("m")
    assert isinstance(persistent, KeyValueBytesStoreSupplier)
    assert (persistent.name, persistent.persistent, persistent.metrics_scope) == ("p", True, "leveldb")
    assert (memory.name, memory.persistent, memory.metrics_scope) == ("m", False, "in-memory")
    assert isinstance(persistent.get(), LevelDBKeyValueBytesStore)
    assert isinstance(memory.get(), InMemoryKeyValueBytesStore)
    assert persistent.get() is not persistent.get()


def test_builder_defaults_are_kafka_streams() -> None:
    builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"), Serdes.String(), Serdes.Long)
    assert isinstance(builder, StoreBuilder)
    assert builder.name == "s"
    assert builder.logging_enabled is True and builder.caching_enabled is False
    assert builder.logging_config == {"cleanup.policy": "compact"}
    assert builder.persistent is False
    assert isinstance(builder.key_serde, StringSerde) and isinstance(builder.value_serde, LongSerde)


def test_builder_options_chain_and_merge_logging_config() -> None:
    builder = Stores.key_value_store_builder(Stores.persistent_key_value_store("s"), "String", None)
    user_config = {"retention.ms": 100, "cleanup.policy": "compact,delete"}
    same = builder.with_caching_enabled().with_logging_enabled(user_config)
    assert same is builder
    assert builder.caching_enabled and builder.logging_enabled and builder.persistent
    assert builder.logging_config == {"cleanup.policy": "compact,delete", "retention.ms": "100"}
    builder.with_logging_disabled().with_caching_disabled()
    assert not builder.logging_enabled and not builder.caching_enabled and builder.logging_config == {}
    builder.with_logging_enabled()
    assert builder.logging_config == {"cleanup.policy": "compact"}
    assert builder.value_serde is None


def test_build_returns_a_new_store_each_time() -> None:
    builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"), Serdes.String, Serdes.Long)
    first, second = builder.build(), builder.build()
    assert first is not second and first.name == second.name == "s"
    assert isinstance(first, KeyValueStore) and not isinstance(first, TimestampedKeyValueStore)
    timestamped = Stores.timestamped_key_value_store_builder(Stores.in_memory_key_value_store("t")).build()
    assert isinstance(timestamped, TimestampedKeyValueStore)


def test_builder_carries_choices_into_the_store() -> None:
    builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"))
    store = builder.with_caching_enabled().with_logging_disabled().build()
    assert store.caching_enabled and not store.logging_enabled


@pytest.mark.parametrize("name", ["", "a/b", "..", ".", "x" * 250, "spaces here", "ü"])
def test_invalid_store_names_are_rejected(name: str) -> None:
    with pytest.raises(TopologyError, match="invalid state store name"):
        Stores.persistent_key_value_store(name)


def test_bad_arguments_fail_at_build_time() -> None:
    with pytest.raises(TypeError, match="store supplier"):
        Stores.key_value_store_builder("not-a-supplier")  # type: ignore[arg-type]
    with pytest.raises(SerializationError):
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"), "NoSuchSerde")
