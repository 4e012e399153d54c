"""`SpecificAvroSerde(MyType)` for dataclasses, pydantic models and msgspec structs: the schema derived from
the type, round trips through `mock://`, the same bytes from every flavour, evolution, the driver, and a
pydantic model's schema registering and evolving on the real registry."""

from __future__ import annotations

import datetime
import json
import pickle
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings

from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder
from streamlet.errors import ConfigError, SerializationError
from streamlet.schema_registry import SpecificAvroSerde, avro_schema_of, drop_scope
from streamlet.testing import TopologyTestDriver
from tests.helpers.typed_records import ALL_FLAVOURS, FLAVOURS, Kind, build, flavour_param, order_values

FLAVOUR_PARAMS = [flavour_param(name) for name in ALL_FLAVOURS]
MODULE = "tests.helpers.typed_records"


def expected_schema(order: str, line: str) -> dict[str, Any]:
    """The Avro schema the brief's mapping gives for the order shape, written out by hand."""
    return {"type": "record", "name": order, "namespace": MODULE, "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "namespace": MODULE, "symbols": ["CARD", "CASH"]}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "lines", "type": {"type": "array", "items": {
            "type": "record", "name": line, "namespace": MODULE,
            "fields": [{"name": "sku", "type": "string"}, {"name": "quantity", "type": "long"}]}}},
        {"name": "tags", "type": {"type": "map", "values": "long"}, "default": {}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "ref", "type": ["null", {"type": "string", "logicalType": "uuid"}], "default": None},
    ]}


@pytest.fixture
def url() -> Iterator[str]:
    scope = f"typed-{uuid.uuid4().hex}"
    yield f"mock://{scope}"
    drop_scope(scope)


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_derived_schema(flavour: str) -> None:
    order_type, line_type = FLAVOURS[flavour]
    assert avro_schema_of(order_type) == expected_schema(order_type.__name__, line_type.__name__)


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
@settings(max_examples=40, deadline=None)
@given(values=order_values)
def test_round_trip(flavour: str, values: dict[str, Any]) -> None:
    scope = f"typed-{uuid.uuid4().hex}"
    try:
        order = build(flavour, values)
        serde = SpecificAvroSerde(type(order), config={"schema.registry.url": f"mock://{scope}"})
        data = serde.serializer.serialize("orders", order)
        assert data is not None and data[0] == 0
        assert serde.deserializer.deserialize("orders", data) == order
    finally:
        drop_scope(scope)


@pytest.mark.skipif(len(FLAVOURS) < 2, reason="pydantic and msgspec are not installed")
@settings(max_examples=25, deadline=None)
@given(values=order_values)
def test_every_flavour_writes_the_same_body(values: dict[str, Any]) -> None:
    """The flavours' schemas differ only in their record names: the same values are the same Avro body."""
    scope = f"typed-{uuid.uuid4().hex}"
    config = {"schema.registry.url": f"mock://{scope}"}
    try:
        bodies = set()
        for name in FLAVOURS:
            data = SpecificAvroSerde(FLAVOURS[name][0], config=config).serializer.serialize(
                f"orders-{name}", build(name, values))
            assert data is not None
            bodies.add(data[5:])
        assert len(bodies) == 1
    finally:
        drop_scope(scope)


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_explicit_schema_is_taken(flavour: str, url: str) -> None:
    line_type = FLAVOURS[flavour][1]
    schema = {"type": "record", "name": "OrderLine", "namespace": "shop",
              "fields": [{"name": "sku", "type": "string"}, {"name": "quantity", "type": "int"}]}
    serde = SpecificAvroSerde(line_type, schema=json.dumps(schema), config={"schema.registry.url": url})
    line = line_type(sku="a", quantity=3)
    data = serde.serializer.serialize("lines", line)
    assert data is not None and data[5:] == b"\x02a\x06"  # int 3 zig-zag, after the string "a"
    assert serde.deserializer.deserialize("lines", data) == line


def _evolving(flavour: str) -> tuple[type, type]:
    """Two versions of one record type (same name): the second adds a field with a default."""
    if flavour == "dataclass":
        @dataclass
        class Reading:
            sensor: str
            value: float

        v1 = Reading

        @dataclass  # type: ignore[no-redef]
        class Reading:
            sensor: str
            value: float
            unit: str = "C"
            kind: Kind = Kind.CARD

        return v1, Reading
    if flavour == "pydantic":
        import pydantic

        class Reading(pydantic.BaseModel):  # type: ignore[no-redef]
            sensor: str
            value: float

        v1 = Reading

        class Reading(pydantic.BaseModel):  # type: ignore[no-redef]
            sensor: str
            value: float
            unit: str = "C"
            kind: Kind = Kind.CARD

        return v1, Reading
    import msgspec

    class Reading(msgspec.Struct):  # type: ignore[no-redef]
        sensor: str
        value: float

    v1 = Reading

    class Reading(msgspec.Struct):  # type: ignore[no-redef]
        sensor: str
        value: float
        unit: str = "C"
        kind: Kind = Kind.CARD

    return v1, Reading


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_evolution(flavour: str, url: str) -> None:
    v1, v2 = _evolving(flavour)
    assert avro_schema_of(v2)["fields"][2:] == [
        {"name": "unit", "type": "string", "default": "C"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "namespace": MODULE, "symbols": ["CARD", "CASH"]},
         "default": "CARD"}]
    old, new = (SpecificAvroSerde(v, config={"schema.registry.url": url}) for v in (v1, v2))
    old_bytes = old.serializer.serialize("readings", v1(sensor="s", value=1.5))
    new_bytes = new.serializer.serialize("readings", v2(sensor="t", value=2.5, unit="F", kind=Kind.CASH))
    assert new.deserializer.deserialize("readings", old_bytes) == v2(sensor="s", value=1.5)  # the defaults
    assert old.deserializer.deserialize("readings", new_bytes) == v1(sensor="t", value=2.5)  # dropped


def test_types_without_an_avro_mapping_name_the_field() -> None:
    @dataclass
    class Loose:
        when: datetime.time

    with pytest.raises(ConfigError, match=r"Loose\.when"):
        SpecificAvroSerde(Loose)

    @dataclass
    class Price:
        amount: Decimal

    with pytest.raises(ConfigError, match="max_digits and decimal_places"):
        SpecificAvroSerde(Price)
    with pytest.raises(ConfigError, match="dataclass, pydantic model or msgspec struct"):
        SpecificAvroSerde(dict)


def test_an_instance_of_another_type_is_a_serialization_error(url: str) -> None:
    order_type = FLAVOURS["dataclass"][0]
    serde = SpecificAvroSerde(order_type, config={"schema.registry.url": url})
    with pytest.raises(SerializationError, match="expects an instance"):
        serde.serializer.serialize("orders", {"id": "o"})


def test_recursive_type(url: str) -> None:
    @dataclass
    class Node:
        name: str
        children: list[Node]
        parent: Node | None = None

    schema = avro_schema_of(Node)
    assert schema["fields"][1]["type"] == {"type": "array", "items": f"{Node.__module__}.Node"}
    serde = SpecificAvroSerde(Node, config={"schema.registry.url": url})
    tree = Node("root", [Node("a", [], Node("p", [])), Node("b", [Node("c", [])])])
    assert serde.deserializer.deserialize("trees", serde.serializer.serialize("trees", tree)) == tree


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_configured_serde_pickles_and_copies_share_their_configuration(flavour: str, url: str) -> None:
    """As the Spark engine ships a topology to its workers for each batch: a copy comes configured, and the
    copies of one serde in one process share what the first copy configured."""
    v1 = FLAVOURS[flavour][1]  # a module-level type: pickled by reference
    value = v1(sku="a", quantity=1)
    serde = SpecificAvroSerde(v1, config={"schema.registry.url": url})
    data = serde.serializer.serialize("lines", value)
    shipped = pickle.dumps(serde)
    first, second = pickle.loads(shipped), pickle.loads(shipped)
    assert first.deserializer.deserialize("lines", data) == value
    assert second.serializer.serialize("lines", value) == data
    assert first._state.serializer is second._state.serializer is not serde._state.serializer
    assert pickle.loads(pickle.dumps(SpecificAvroSerde(v1)))._state.serializer is None  # not configured: stays so


@pytest.mark.parametrize("flavour", FLAVOUR_PARAMS)
def test_driver_with_the_application_registry(flavour: str, url: str) -> None:
    order_type, line_type = FLAVOURS[flavour]
    builder = StreamsBuilder()
    (builder.stream("orders", Consumed(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(order_type)))
        .flat_map_values(lambda order: order.lines)
        .group_by(lambda _key, line: line.sku,
                  Grouped(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(line_type)))
        .reduce(lambda total, line: type(line)(sku=line.sku, quantity=total.quantity + line.quantity),
                Materialized("totals", key_serde=Serdes.String(), value_serde=SpecificAvroSerde(line_type)))
        .to_stream()
        .to("totals", Produced(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(line_type))))
    config = {"application.id": "typed-avro", "statestore.cache.max.bytes": 0, "schema.registry.url": url}
    values = {"id": "o", "amount": 1.0, "kind": Kind.CARD, "at": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
              "day": datetime.date(2026, 1, 1), "price": Decimal("1.00"),
              "lines": [{"sku": "a", "quantity": 1}, {"sku": "b", "quantity": 3}, {"sku": "a", "quantity": 4}]}
    with TopologyTestDriver(builder.build(), config) as driver:
        orders = driver.create_input_topic("orders", Serdes.String(),
                                           SpecificAvroSerde(order_type, config={"schema.registry.url": url}))
        totals = driver.create_output_topic("totals", Serdes.String(),
                                            SpecificAvroSerde(line_type, config={"schema.registry.url": url}))
        orders.pipe_input("o", build(flavour, values))
        got = totals.read_key_values_to_list()
        stored = driver.get_key_value_store("totals").get("a")
    def line(sku: str, quantity: int) -> Any:
        return line_type(sku=sku, quantity=quantity)

    assert got == [("a", line("a", 1)), ("b", line("b", 3)), ("a", line("a", 5))]
    assert stored == line("a", 5)


@pytest.mark.registry
def test_pydantic_schema_registers_and_evolves_on_the_real_registry(schema_registry: str) -> None:
    pytest.importorskip("pydantic")
    from confluent_kafka.schema_registry import SchemaRegistryClient

    v1, v2 = _evolving("pydantic")
    topic = f"readings-{uuid.uuid4().hex[:10]}"
    config = {"schema.registry.url": schema_registry}
    client = SchemaRegistryClient({"url": schema_registry})
    old_bytes = SpecificAvroSerde(v1, config=config).serializer.serialize(topic, v1(sensor="s", value=1.0))
    client.set_compatibility(f"{topic}-value", "BACKWARD")
    new = SpecificAvroSerde(v2, config=config)
    new_bytes = new.serializer.serialize(topic, v2(sensor="t", value=2.0, unit="F"))
    assert old_bytes is not None and new_bytes is not None
    versions = client.get_versions(f"{topic}-value")
    assert versions == [1, 2]
    registered = json.loads(client.get_version(f"{topic}-value", 2).schema.schema_str)
    assert registered["fields"] == avro_schema_of(v2)["fields"]  # the derived schema is what registered
    assert struct.unpack(">I", new_bytes[1:5])[0] == client.get_version(f"{topic}-value", 2).schema_id
    assert new.deserializer.deserialize(topic, old_bytes) == v2(sensor="s", value=1.0)
    assert SpecificAvroSerde(v1, config=config).deserializer.deserialize(topic, new_bytes) == v1(sensor="t", value=2.0)

    import pydantic

    class Reading(pydantic.BaseModel):  # a required field added: not backward compatible
        sensor: str
        value: float
        site: str

    with pytest.raises(SerializationError, match="HTTP 409"):
        SpecificAvroSerde(Reading, config=config).serializer.serialize(topic, Reading(sensor="u", value=0, site="x"))
