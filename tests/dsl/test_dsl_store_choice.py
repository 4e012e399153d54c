"""streamlet's side of the DSL store settings and StreamJoined's suppliers: what the differential tests
(tests/fidelity/test_dsl_store_suppliers.py) cannot show, as it has no Java twin: the Python API (copies,
type checks), the config errors when a `StreamsConfig` is made, and one topology run by two test drivers
whose configs ask for different backends."""

from __future__ import annotations

import pytest

from streamlet import JoinWindows, Serdes, Stores, StreamJoined, StreamsBuilder, StreamsConfig
from streamlet.dsl import store_suppliers
from streamlet.errors import ConfigError, TopologyError
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology

IN_MEMORY = "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers"
ROCKS_DB = "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers"
BASE = {"default.key.serde": "String", "default.value.serde": "String"}


def test_with_methods_copy_and_leave_the_original() -> None:
    supplier = Stores.in_memory_window_store("left", 30, 20, retain_duplicates=True)
    other = Stores.persistent_window_store("right", 30, 20, retain_duplicates=True)
    base = StreamJoined(store_name="pairs", logging=False)
    joined = base.with_this_store_supplier(supplier).with_other_store_supplier(other).with_store_type("in_memory")
    assert (joined.this_store_supplier, joined.other_store_supplier, joined.store_type) == (supplier, other,
                                                                                            "in_memory")
    assert (joined.store_name, joined.logging, joined.in_memory) == ("pairs", False, True)
    assert (base.this_store_supplier, base.other_store_supplier, base.store_type) == (None, None, None)


@pytest.mark.parametrize("kwargs", [{"this_store_supplier": Stores.in_memory_key_value_store("kv")},
                                    {"other_store_supplier": "left"}, {"store_type": "memcached"}])
def test_stream_joined_refuses_what_is_not_a_window_store_or_a_store_type(kwargs: dict[str, object]) -> None:
    with pytest.raises(TopologyError):
        StreamJoined(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("settings", [{"default.dsl.store": "in-memory"}, {"default.dsl.store": "rocksdb"},
                                      {"dsl.store.suppliers.class": "InMemoryDslStoreSuppliers"},
                                      {"dsl.store.suppliers.class": 3}])
def test_a_config_with_an_unknown_store_type_or_class_is_refused(settings: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="Invalid value"):
        StreamsConfig({"application.id": "a", **settings})


def _joined_counts() -> Topology:
    builder = StreamsBuilder()
    windows = JoinWindows.of_time_difference_with_no_grace(10)
    left, right = builder.stream("left"), builder.stream("right")
    left.left_join(right, lambda a, b: f"{a}+{b}", windows).group_by_key().count().to_stream().to("out")
    return builder.build()


def _persistence(driver: TopologyTestDriver, topology: Topology) -> set[bool]:
    return {driver.get_state_store(name).persistent for name in topology.store_builders}


def test_one_topology_follows_each_drivers_setting_in_turn() -> None:
    topology = _joined_counts()
    with TopologyTestDriver(topology, {**BASE, "dsl.store.suppliers.class": IN_MEMORY}) as driver:
        assert _persistence(driver, topology) == {False}
    with TopologyTestDriver(topology, {**BASE, "dsl.store.suppliers.class": ROCKS_DB}) as driver:
        assert _persistence(driver, topology) == {True}
    with TopologyTestDriver(topology, BASE) as driver:
        assert _persistence(driver, topology) == {True}


def test_in_memory_join_through_the_driver_joins_and_emits_unmatched_records() -> None:
    topology = _joined_counts()
    config = {**BASE, "dsl.store.suppliers.class": IN_MEMORY, "statestore.cache.max.bytes": 0}
    with TopologyTestDriver(topology, config) as driver:
        left, right = driver.create_input_topic("left"), driver.create_input_topic("right")
        out = driver.create_output_topic("out", Serdes.String(), Serdes.Long())
        left.pipe_input("k", "a", 100)
        right.pipe_input("k", "x", 105)
        left.pipe_input("j", "b", 106)
        right.pipe_input("z", "y", 200)  # closes both windows: "b" goes out unmatched
        assert _persistence(driver, topology) == {False}
        assert [(r.key, r.value) for r in out.read_records_to_list()] == [("k", 1), ("j", 1)]


def test_the_applications_default_dsl_store_is_said_to_have_no_effect(caplog: pytest.LogCaptureFixture,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # The warning is given once per process: an earlier test (tests/fidelity's) may have had it already.
    monkeypatch.setattr(store_suppliers, "_warned", set())
    topology = _joined_counts()
    with caplog.at_level("WARNING"), TopologyTestDriver(topology, {**BASE, "default.dsl.store": "in_memory"}) as driver:
        assert _persistence(driver, topology) == {True}  # as Kafka Streams: only TopologyConfig reads it
    assert any("counts in StreamsBuilder(config) only" in r.getMessage() and "dsl.store.suppliers.class" in
               r.getMessage() for r in caplog.records)
