"""GlobalKTable, global stores and the foreign-key join in the driver, and the pieces under them.

The record-for-record comparison with Kafka Streams is the differential suite's (tests/fidelity) and
the describe() goldens' (tests/dsl/golden); these tests pin the mechanics: when a global record
becomes visible, who may read a global store, where a global store's position is kept, how the
join's internal topics are partitioned and what their wire format holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamlet import Consumed, Materialized, Serdes, StreamsBuilder, StreamsConfig, TableJoined, Topology
from streamlet.actors.partition_group import RawRecord
from streamlet.dsl.processors.fk_wire import (
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE,
    ResponseWrapperDeserializer,
    ResponseWrapperSerializer,
    SubscriptionResponseWrapper,
    SubscriptionWrapper,
    SubscriptionWrapperDeserializer,
    SubscriptionWrapperSerializer,
    murmur3_hash128,
)
from streamlet.errors import InvalidStateStoreError, TopologyError
from streamlet.kafka.topic_manager import plan_internal_topics
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.runtime.global_state import GlobalStateUpdater
from streamlet.stores.factory import Stores
from streamlet.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {"default.key.serde": "String", "default.value.serde": "String"}

# Printed by Kafka Streams 3.9.1's own `Murmur3.hash128(s.getBytes(UTF_8))` (a throwaway Java program
# on the fidelity runner's classpath): the hash a foreign-key subscription carries.
JAVA_MURMUR3 = {
    "": (-7122613646888064702, -8341524471658347240),
    "a": (3702349557448790408, -1601067453332442517),
    "12345678": (-2455429847547687578, 6788422440817327756),
    "123456789": (6502726292040185600, -362312023417079833),
    "0123456789abcdef": (1904622552327088487, -2893518741649893711),
    "0123456789abcdefghij": (5911438530999167139, 2853923563745642121),
    "hello world, murmur three": (461505092680581780, 3825367562752041697),
}


@pytest.mark.parametrize("text", sorted(JAVA_MURMUR3))
def test_murmur3_hash128_is_kafka_streams(text: str) -> None:
    assert murmur3_hash128(text.encode()) == JAVA_MURMUR3[text]


def test_subscription_and_response_wire_formats_round_trip() -> None:
    ser, de = SubscriptionWrapperSerializer(S), SubscriptionWrapperDeserializer(S)
    for h in (None, (1, -2)):
        wrapper = SubscriptionWrapper(h, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, "pk", 7)
        data = ser.serialize("t", wrapper)
        assert data is not None and data[0] == (0x81 if h is None else 0x01) and data[-4:] == bytes([0, 0, 0, 7])
        assert de.deserialize("t", data) == wrapper
    rser, rde = ResponseWrapperSerializer(S), ResponseWrapperDeserializer(S)
    for response in (SubscriptionResponseWrapper((3, 4), "v"), SubscriptionResponseWrapper(None, None)):
        assert rde.deserialize("t", rser.serialize("t", response)) == response


def _global_join_topology() -> Topology:
    builder = StreamsBuilder()
    table = builder.global_table("customers", Consumed(S, S), Materialized("customers-store"))
    builder.stream("orders", Consumed(S, S)).left_join(table, lambda k, v: v.split(":")[0],
                                                        lambda o, c: f"{o}|{c}").to("out")
    return builder.build()


def test_a_global_record_is_visible_to_the_next_stream_record() -> None:
    with TopologyTestDriver(_global_join_topology(), CONFIG, initial_wall_clock_time=0) as driver:
        customers, orders = driver.create_input_topic("customers"), driver.create_input_topic("orders")
        out = driver.create_output_topic("out")
        orders.pipe_input("o1", "c1:x", 10)
        customers.pipe_input("c1", "Ann", 50)  # a later timestamp does not hold it back
        assert driver.get_key_value_store("customers-store").get("c1") == "Ann"
        orders.pipe_input("o2", "c1:y", 20)
        customers.pipe_input("c1", None, 60)
        orders.pipe_input("o3", "c1:z", 30)
        assert out.read_key_values_to_list() == [("o1", "c1:x|None"), ("o2", "c1:y|Ann"), ("o3", "c1:z|None")]
        assert driver.get_key_value_store("customers-store").get("c1") is None


class _PutInStore(Processor):
    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = context.get_state_store("global-kv")

    def process(self, record: Record) -> None:
        self._store.put(record.key, record.value.upper())


class _ReadGlobal(Processor):
    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store: Any = context.get_state_store("global-kv")  # not connected: a global store

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(self._store.get(record.value)))


def _processor_api_global_store() -> Topology:
    topology = Topology()
    store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("global-kv"), S, S)
    with pytest.raises(TopologyError, match="must not have logging enabled"):  # Kafka Streams' rule
        topology.add_global_store(store, "g-source", "global-input", "g-proc", _PutInStore)
    topology.add_global_store(store.with_logging_disabled(), "g-source", "global-input", "g-proc", _PutInStore,
                              key_deserializer=S.deserializer, value_deserializer=S.deserializer)
    topology.add_source("in", "input", key_deserializer=S.deserializer, value_deserializer=S.deserializer)
    topology.add_processor("read", _ReadGlobal, "in")
    topology.add_sink("out", "output", "read", key_serializer=S.serializer, value_serializer=S.serializer)
    return topology


def test_add_global_store_runs_the_given_processor_and_every_processor_reads_the_store() -> None:
    topology = _processor_api_global_store()
    assert [s.id for s in topology.sub_topologies()] == [1]  # the global group is numbered, makes no tasks
    with TopologyTestDriver(topology, CONFIG) as driver:
        driver.create_input_topic("global-input").pipe_input("k", "value")
        driver.create_input_topic("input").pipe_input("x", "k")
        assert driver.create_output_topic("output").read_key_values_to_list() == [("x", "VALUE")]


def test_a_store_that_is_neither_connected_nor_global_is_still_refused() -> None:
    topology = _processor_api_global_store()
    topology.add_processor("bad", _ReadOther, "in")
    with pytest.raises(InvalidStateStoreError), TopologyTestDriver(topology, CONFIG):
        pass


class _ReadOther(Processor):
    def init(self, context: ProcessorContext) -> None:
        context.get_state_store("no-such-store")


def _global_only(tmp_path: Path) -> tuple[Topology, StreamsConfig]:
    builder = StreamsBuilder()
    builder.global_table("customers", Consumed(S, S), Materialized("customers-store"))
    builder.stream("orders").to("out")
    return builder.build(), StreamsConfig({**CONFIG, "application.id": "gs", "state.dir": str(tmp_path)})


def test_the_global_position_is_checkpointed_and_resumed(tmp_path: Path) -> None:
    topology, config = _global_only(tmp_path)
    updater = GlobalStateUpdater(topology, config, tmp_path / "gs", clock=lambda: 0)
    records = [RawRecord("customers", 1, off, 5, f"c{off}".encode(), b"v", ()) for off in range(3)]
    assert updater.update("customers", 1, records) == 3
    updater.close()
    again = GlobalStateUpdater(topology, config, tmp_path / "gs", clock=lambda: 0)
    try:
        assert again.offsets == {("customers", 1): 3}
        store: Any = again.stores["customers-store"]
        assert store.get("c2").value == "v"  # persistent: kept, so the topic is not read again
    finally:
        again.close()


def _fk_topology(left: bool) -> Topology:
    builder = StreamsBuilder()
    orders, customers = builder.table("orders", Consumed(S, S)), builder.table("customers", Consumed(S, S))
    join = orders.left_join if left else orders.join
    join(customers, lambda v: v.split(":")[0] if ":" in v else None, lambda o, c: f"{o}|{c}",
         TableJoined(name="fk")).to_stream().to("out")
    return builder.build()


@pytest.mark.parametrize("left", [False, True])
def test_foreign_key_join_follows_key_changes_and_deletes(left: bool) -> None:
    with TopologyTestDriver(_fk_topology(left), CONFIG, initial_wall_clock_time=0) as driver:
        orders, customers = driver.create_input_topic("orders"), driver.create_input_topic("customers")
        out = driver.create_output_topic("out")
        customers.pipe_input("c1", "Ann", 1)
        orders.pipe_input("o1", "c1:x", 2)
        orders.pipe_input("o2", "c2:y", 3)  # no customer c2 yet
        customers.pipe_input("c2", "Bob", 4)
        orders.pipe_input("o1", "c2:x", 5)  # the foreign key moves: o1 now joins Bob
        customers.pipe_input("c1", "Ann2", 6)  # o1 no longer subscribes to c1: nothing
        orders.pipe_input("o3", "nokey", 7)
        customers.pipe_input("c2", None, 8)
        got = out.read_records_to_list()
    rows = [(r.key, r.value, r.timestamp) for r in got]
    expected = [("o1", "c1:x|Ann", 2)]
    expected += [("o2", "c2:y|None", 3)] if left else []
    expected += [("o2", "c2:y|Bob", 4), ("o1", "c2:x|Bob", 5)]
    expected += [("o3", "nokey|None", 7)] if left else []
    # a deleted customer: tombstones (inner), or the left value alone (left join), in primary-key order
    expected += [("o1", "c2:x|None", 8), ("o2", "c2:y|None", 8)] if left else [("o1", None, 8), ("o2", None, 8)]
    assert rows == expected


def test_fk_join_topics_are_partitioned_like_the_tables_they_pair_with() -> None:
    plan = plan_internal_topics(_fk_topology(False), "app", {"orders": 3, "customers": 2, "out": 3})
    counts = {t.name: t.partitions for t in plan.internal_topics.values()}
    assert counts["app-fk-subscription-registration-topic"] == 2  # like the customers (the foreign keys)
    assert counts["app-fk-subscription-response-topic"] == 3  # back to the orders' partitions
    assert counts["app-fk-subscription-store-changelog"] == 2


def test_global_state_without_a_checkpoint_is_rebuilt_from_the_topic(tmp_path: Path) -> None:
    """A crash before the first checkpoint leaves store files no position vouches for: they are wiped
    and the topic is read from the beginning (a key deleted meanwhile must not survive)."""
    topology, config = _global_only(tmp_path)
    updater = GlobalStateUpdater(topology, config, tmp_path / "gs", clock=lambda: 0)
    updater.update("customers", 0, [RawRecord("customers", 0, 0, 5, b"c1", b"v", ())])
    updater._task.prepare_commit()  # the store holds c1, but no checkpoint was written (a crash)
    updater._task.close(clean=False)
    again = GlobalStateUpdater(topology, config, tmp_path / "gs", clock=lambda: 0)
    try:
        assert again.offsets == {}
        assert again.stores["customers-store"].get("c1") is None  # type: ignore[attr-defined]
    finally:
        again.close()


def test_a_response_for_an_older_left_value_is_dropped() -> None:
    """The response topic is read like any topic: a response whose hash is not the hash of the left
    row's current value answers a superseded subscription and gives no result (KIP-213)."""
    with TopologyTestDriver(_fk_topology(False), {**CONFIG, "application.id": "app"}) as driver:
        driver.create_input_topic("customers").pipe_input("c1", "Ann", 1)
        driver.create_input_topic("orders").pipe_input("o1", "c1:x", 2)
        out = driver.create_output_topic("out")
        assert out.read_key_values_to_list() == [("o1", "c1:x|Ann")]
        responses = driver.create_input_topic("app-fk-subscription-response-topic", S, ResponseWrapperSerializer(S))
        responses.pipe_input("o1", SubscriptionResponseWrapper(murmur3_hash128(b"c1:old"), "Stale"), 3)
        assert out.is_empty()
        responses.pipe_input("o1", SubscriptionResponseWrapper(murmur3_hash128(b"c1:x"), "Fresh"), 4)
        assert out.read_key_values_to_list() == [("o1", "c1:x|Fresh")]


@pytest.mark.parametrize("left", [True, False])
def test_a_global_left_join_keeps_a_record_whose_mapped_key_is_none(left: bool) -> None:
    """Kafka Streams 4.x (not 3.9.1): a left join with a global table joins a record whose key mapper
    gives None with no row, as it does a record with a null key; an inner join drops it; a null value is
    dropped by both (checked on Kafka Streams 4.4.0's own driver, tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md)."""
    builder = StreamsBuilder()
    table = builder.global_table("customers", Consumed(S, S), Materialized("customers-store"))
    orders = builder.stream("orders", Consumed(S, S))
    join = orders.left_join if left else orders.join
    join(table, lambda k, v: v[1:] if v is not None and v.startswith("k") else None, lambda o, c: f"{o}&{c}").to("out")
    with TopologyTestDriver(builder.build(), CONFIG, initial_wall_clock_time=0) as driver:
        driver.create_input_topic("customers").pipe_input("x", "X", 1)
        orders, out = driver.create_input_topic("orders"), driver.create_output_topic("out")
        for key, value in [("a", "kx"), ("b", "nomatch"), (None, "nomatch"), ("c", None), (None, "kx"), ("d", "ky")]:
            orders.pipe_input(key, value, 5)
        expected = [("a", "kx&X"), ("b", "nomatch&None"), (None, "nomatch&None"), (None, "kx&X"), ("d", "ky&None")]
        assert out.read_key_values_to_list() == (expected if left else [("a", "kx&X"), (None, "kx&X")])


@pytest.mark.parametrize("materialized", [Materialized(), Materialized(key_serde=S, value_serde=S),
                                          Materialized(caching=False, store_type="in_memory")])
def test_a_global_table_materialized_without_a_store_name_is_refused_at_build(materialized: Materialized) -> None:
    """Kafka Streams 4.x refuses `globalTable(topic, Materialized.with(...))` (no store name) when the
    topology is built (IllegalArgumentException: 'Global stores must pass in suppliers with exactly one
    store but got 0'; 3.9.1 built it with a generated name); a named store, or no Materialized, builds."""
    builder = StreamsBuilder()
    builder.global_table("customers", Consumed(S, S), materialized)
    with pytest.raises(TopologyError, match="exactly one store but got 0"):
        builder.build()
    for ok in (None, Materialized("customers-store")):
        builder = StreamsBuilder()
        builder.global_table("customers", Consumed(S, S), ok)
        assert builder.build() is not None
