"""`leveldb.config.setter`: Kafka Streams' rocksdb.config.setter for the LevelDB stores.

The setter is called once per persistent store, key-value, window, session and versioned alike, with the
store's name and the plyvel.DB options starting from streamlet's defaults; what it sets reaches LevelDB
(a compression change shows in the size of the tables on disk); a setter that cannot be used fails when
the configuration is made or when the store opens, naming the setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from streamlet import Materialized, StreamsBuilder
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError, StreamsError
from streamlet.serdes import Serdes
from streamlet.stores.factory import Stores
from streamlet.stores.leveldb import LevelDBKeyValueBytesStore
from streamlet.testing import TopologyTestDriver
from tests.stores.context import RecordingStateStoreContext

CALLS: list[tuple[str, dict[str, Any]]] = []


def recording_setter(store_name: str, options: dict[str, Any]) -> None:
    """A setter named by 'module:attr' in the tests: records what it was given."""
    CALLS.append((store_name, dict(options)))


class SmallBuffers:
    """Kafka Streams' shape: a class with set_config(store_name, options, configs), one instance per store."""

    instances = 0

    def __init__(self) -> None:
        SmallBuffers.instances += 1

    def set_config(self, store_name: str, options: dict[str, Any], configs: Mapping[str, Any]) -> None:
        assert configs["application.id"] == "store-tests"
        options["write_buffer_size"] = 64 * 1024


class NoSetConfig:
    pass


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


def _all_stores() -> list[Any]:
    return [
        Stores.key_value_store_builder(Stores.persistent_key_value_store("kv"), Serdes.String(), Serdes.Long()),
        Stores.timestamped_key_value_store_builder(Stores.persistent_timestamped_key_value_store("tkv"),
                                                   Serdes.String(), Serdes.Long()),
        Stores.window_store_builder(Stores.persistent_window_store("win", 60_000, 1_000), Serdes.String(),
                                    Serdes.Long()),
        Stores.session_store_builder(Stores.persistent_session_store("sess", 60_000), Serdes.String(),
                                     Serdes.Long()),
        Stores.versioned_key_value_store_builder(Stores.persistent_versioned_key_value_store("ver", 60_000),
                                                 Serdes.String(), Serdes.Long()),
    ]


def test_the_setter_is_called_once_per_store_with_the_defaults(tmp_path: Path) -> None:
    context = RecordingStateStoreContext(tmp_path, config={
        "leveldb.config.setter": f"{__name__}:recording_setter"})
    stores = [builder.build() for builder in _all_stores()]
    for store in stores:
        store.init(context)
    try:
        assert [name for name, _ in CALLS] == ["kv", "tkv", "win", "sess", "ver"]
        assert all(options == {"bloom_filter_bits": 10, "write_buffer_size": 16 * 1024 * 1024}
                   for _, options in CALLS)
    finally:
        for store in stores:
            store.close()


def test_a_class_setter_gets_an_instance_per_store_and_the_configuration(tmp_path: Path) -> None:
    before = SmallBuffers.instances
    context = RecordingStateStoreContext(tmp_path, config={"leveldb.config.setter": SmallBuffers})
    stores = [LevelDBKeyValueBytesStore(name) for name in ("a", "b")]
    for store in stores:
        store.open(context)
        store.close()
    assert SmallBuffers.instances - before == 2


def _tables_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("*.ldb"))


def _fill(tmp_path: Path, compression: str | None) -> int:
    """Write 4 MB of very compressible values through a store whose setter picks `compression` and a small
    write buffer (so that they reach tables), and return the tables' bytes on disk."""
    def setter(store_name: str, options: dict[str, Any]) -> None:
        options.update(compression=compression, write_buffer_size=256 * 1024)

    directory = tmp_path / str(compression)
    context = RecordingStateStoreContext(directory, config={"leveldb.config.setter": setter})
    store = LevelDBKeyValueBytesStore("s")
    store.open(context)
    value = b"streamlet " * 100
    for i in range(4000):
        store.put(b"k%06d" % i, value)
    store.close()
    return _tables_bytes(directory / "s")


def test_an_option_the_setter_sets_reaches_leveldb(tmp_path: Path) -> None:
    snappy, plain = _fill(tmp_path, "snappy"), _fill(tmp_path, None)
    assert snappy > 0
    assert plain > 3 * snappy  # 4 MB of a repeated word: snappy shrinks it many times, no compression not at all
    assert plain > 3_000_000


def test_a_setter_that_cannot_be_imported_or_called_fails_with_the_configuration() -> None:
    with pytest.raises(ConfigError, match=r"leveldb.config.setter: cannot import 'no_such_module:f'.*'module:attr'"):
        StreamsConfig({"application.id": "a", "leveldb.config.setter": "no_such_module:f"})
    with pytest.raises(ConfigError, match=r"leveldb.config.setter: cannot import .*nothing_here"):
        StreamsConfig({"application.id": "a", "leveldb.config.setter": f"{__name__}.nothing_here"})
    with pytest.raises(ConfigError, match=r"class NoSetConfig has no set_config"):
        StreamsConfig({"application.id": "a", "leveldb.config.setter": NoSetConfig})
    with pytest.raises(ConfigError, match=r"leveldb.config.setter: got a int"):
        StreamsConfig({"application.id": "a", "leveldb.config.setter": 3})
    assert StreamsConfig({"application.id": "a", "leveldb.config.setter": f"{__name__}.SmallBuffers"}
                         ).leveldb_config_setter is not None
    assert StreamsConfig({"application.id": "a"}).leveldb_config_setter is None


@pytest.mark.parametrize(("change", "message"), [
    ({"block_cache_size": 1 << 20}, r"leveldb.config.setter set 'block_cache_size' for store 'counts'; it may set "
                                    r"only .*lru_cache_size"),
    ({"create_if_missing": False}, r"leveldb.config.setter set 'create_if_missing'"),
    ({"compression": "lz4"}, r"leveldb.config.setter set options LevelDB refuses for the store 'counts'.*snappy"),
    ({"write_buffer_size": "big"}, r"leveldb.config.setter set options LevelDB refuses"),
])
def test_a_setter_setting_what_leveldb_cannot_take_fails_the_start(change: dict[str, Any], message: str) -> None:
    def setter(store_name: str, options: dict[str, Any]) -> None:
        options.update(change)

    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count(Materialized.as_("counts"))
    config = {"application.id": "setter-start", "leveldb.config.setter": setter,
              "default.key.serde": "String", "default.value.serde": "String"}
    with pytest.raises(StreamsError, match=message), TopologyTestDriver(builder.build(), config):
        pass


def test_a_setter_that_raises_fails_the_store_open_naming_the_setting(tmp_path: Path) -> None:
    def setter(store_name: str, options: dict[str, Any]) -> None:
        raise KeyError("cache")

    context = RecordingStateStoreContext(tmp_path, config={"leveldb.config.setter": setter})
    with pytest.raises(StreamsError, match=r"leveldb.config.setter failed for store 's': KeyError: 'cache'"):
        LevelDBKeyValueBytesStore("s").open(context)
