"""Byte equality with the Java serializers, against the real registry (Apicurio 2.6.13, the `schema_registry`
fixture): for the same registered schema and value, streamlet's serde writes the bytes Apicurio's Java serde
(2.6.13.Final, configured for Confluent's wire format: tests/java/registry_serdes) writes, and each side reads
the other's bytes back to the value. Avro (generic records, and specific records: a dataclass here, the
class Avro's Maven plugin generates there, from one .avsc) and JSON Schema, keys and values.

Protobuf is compared where the two can agree: Apicurio 2.6.13's Java Protobuf serializer does not write
Confluent's message indexes (it writes its own length-delimited `Ref` message naming the type), and it cannot
parse a schema registered in the base64 descriptor form confluent-kafka registers; so for Protobuf the test
pins both layouts exactly (streamlet: Confluent's documented `00 id indexes body`; Apicurio: `00 id Ref body`)
and asserts the Protobuf bodies are the same bytes protobuf-java writes, with each side's reader given the
other's body.

Confluent's own Protobuf serializer (its official JavaScript client; Confluent's Java serializer itself is not
served here) writes streamlet's bytes exactly, message indexes included, and shares its registration:
test_confluent_js_byte_equality.py, which also compares Avro and JSON Schema with it.
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from streamlet.schema_registry import GenericAvroSerde, KafkaJsonSchemaSerde, KafkaProtobufSerde, SpecificAvroSerde
from tests.helpers.java_serdes import JavaSerdes, assert_java_writes_the_same, confluent_indexes, varint
from tests.helpers.maven import built_classpath
from tests.helpers.protobuf_messages import FILE_PROTO, ORDERS_PROTO_TEXT, Order, OrderKey, OrderLine
from tests.helpers.registry import register, registered_id, unique_topic

pytestmark = pytest.mark.registry

JAVA_DIR = Path(__file__).parents[1] / "java" / "registry_serdes"


@pytest.fixture(scope="module")
def java(schema_registry: str) -> Iterator[JavaSerdes]:
    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("needs Java and Maven")
    serdes = JavaSerdes(schema_registry, built_classpath(JAVA_DIR, "streamlet-registry-serdes-0.1.0.jar"),
                        "io.streamlet.registryserdes.SerdesMain")
    yield serdes
    serdes.close()


# -- Avro --------------------------------------------------------------------------------------------------

ORDER = {
    "type": "record", "name": "Order", "namespace": "shop.java",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "quantity", "type": "int"},
        {"name": "paid", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "discount", "type": ["null", "long", "string"], "default": None},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "ship_to", "type": ["null", {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": "string"}, {"name": "city", "type": "string"}]}], "default": None},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "long"}]}}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "labels", "type": {"type": "map", "values": ["null", "string"]}},
    ],
}
ORDERS: list[dict[str, Any]] = [
    {"id": "o-1", "amount": 12.5, "quantity": 3, "paid": True, "note": None, "discount": None, "status": "NEW",
     "ship_to": None, "lines": [], "counts": {}, "labels": {}},
    {"id": "ö-2 ✓", "amount": -0.1, "quantity": -7, "paid": False, "note": "fragile", "discount": 5,
     "status": "PAID", "ship_to": {"street": "1 Main St", "city": "Zürich"},
     "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2 ** 40}], "counts": {"x": 1, "y": -2 ** 33},
     "labels": {"gift": "yes", "none": None}},
    {"id": "", "amount": 1e300, "quantity": 2 ** 31 - 1, "paid": True, "note": "", "discount": "SUMMER",
     "status": "SHIPPED", "ship_to": {"street": "", "city": ""}, "lines": [{"sku": "", "qty": 0}],
     "counts": {"": 0}, "labels": {"k": ""}},
]
ORDER_KEY = {"type": "record", "name": "OrderKey", "namespace": "shop.java",
             "fields": [{"name": "id", "type": "string"}, {"name": "region", "type": ["null", "int"]}]}
ORDER_KEYS: list[dict[str, Any]] = [{"id": "o-1", "region": None}, {"id": "o-2", "region": 44}]


@pytest.mark.parametrize(("is_key", "schema", "values"), [
    (False, ORDER, ORDERS), (True, ORDER_KEY, ORDER_KEYS), (True, "string", ["o-1", "", "ünïcode"]),
    (False, "long", [0, -1, 2 ** 62]),
], ids=["value-record", "key-record", "key-string", "value-long"])
def test_generic_avro_bytes_equal_the_java_serializer(java: JavaSerdes, schema_registry: str, is_key: bool,
                                                      schema: Any, values: list[Any]) -> None:
    serde = GenericAvroSerde(schema, config={"schema.registry.url": schema_registry}, is_key=is_key)
    reader = GenericAvroSerde(config={"schema.registry.url": schema_registry}, is_key=is_key)  # the writer's schema
    assert_java_writes_the_same(java, serde, schema_registry, unique_topic("avro"), is_key, values, reader=reader,
                                format="avro", schema=json.dumps(schema))


@dataclass
class Shipment:
    # The schema of Java's generated specific record class io.streamlet.registryserdes.avro.Shipment.
    avro_schema = (JAVA_DIR / "src" / "main" / "avro" / "Shipment.avsc").read_text()
    id: str
    weight: float
    parcels: int
    express: bool = False
    carrier: str | None = None
    tags: list[str] = field(default_factory=list)
    dims: dict[str, float] = field(default_factory=dict)


@pytest.mark.parametrize("is_key", [False, True], ids=["value", "key"])
def test_specific_avro_bytes_equal_the_java_serializer(java: JavaSerdes, schema_registry: str,
                                                       is_key: bool) -> None:
    topic = unique_topic("specific")
    shipments = [Shipment("s-1", 2.5, 1), Shipment("s-2", 0.0, 40, True, "DHL", ["fragile", "up"],
                                                    {"h": 1.5, "w": 2.0})]
    serde = SpecificAvroSerde(Shipment, config={"schema.registry.url": schema_registry}, is_key=is_key)
    ours = [serde.serializer.serialize(topic, shipment) for shipment in shipments]
    as_json = [{"id": s.id, "weight": s.weight, "parcels": s.parcels, "express": s.express, "carrier": s.carrier,
                "tags": s.tags, "dims": s.dims} for s in shipments]
    answer = java.ask(format="avro-specific", topic=topic, isKey=is_key, values=as_json,
                      read=[data.hex() for data in ours if data])
    assert answer["written"] == [data.hex() for data in ours if data]
    assert answer["read"] == as_json
    assert answer["classes"] == ["io.streamlet.registryserdes.avro.Shipment"] * len(shipments)
    assert [serde.deserializer.deserialize(topic, bytes.fromhex(h)) for h in answer["written"]] == shipments


# -- JSON Schema ---------------------------------------------------------------------------------------------

PAYMENT = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Payment", "type": "object",
    "properties": {
        "id": {"type": "string"},
        "amount": {"type": "number"},
        "count": {"type": "integer"},
        "memo": {"type": ["string", "null"]},
        "method": {"oneOf": [
            {"type": "object", "properties": {"card": {"type": "string"}}, "required": ["card"]},
            {"type": "object", "properties": {"iban": {"type": "string"}}, "required": ["iban"]}]},
        "payer": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                  "required": ["name"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "fees": {"type": "object", "additionalProperties": {"type": "number"}},
    },
    "required": ["id", "amount"],
}
PAYMENTS: list[dict[str, Any]] = [
    {"id": "p-1", "amount": 10},
    {"id": "p-2 ✓", "amount": 10.25, "count": -3, "memo": None, "method": {"card": "4111"},
     "payer": {"name": "Zoë", "age": 40}, "tags": ["a", "b"], "fees": {"bank": 0.5, "fx": 1}},
    {"fees": {}, "tags": [], "memo": "line\nbreak \"quoted\" \\ tab\t \u001f \u2028 /", "method": {"iban": "CH93"},
     "amount": -1e-7, "id": ""},
    # Doubles where Java's Double.toString and Python's repr differ: 1.0E7 / 10000000.0, 9.99E-4 / 0.000999, ...
    {"id": "p-4", "amount": 1e7, "fees": {"a": 0.000999, "b": 1e300, "c": -0.0, "d": 3.0, "e": 123456.789,
                                          "f": 9999999.5, "g": 0.001, "h": 2.0 ** 70, "i": 5e-324, "k": -2e22}},
]
PAYMENT_KEY = {"type": "object", "properties": {"id": {"type": "string"}, "shard": {"type": ["integer", "null"]}},
               "required": ["id"]}
PAYMENT_KEYS: list[dict[str, Any]] = [{"id": "p-1", "shard": None}, {"shard": 7, "id": "p-2"}]


@pytest.mark.parametrize(("is_key", "schema", "values"), [
    (False, PAYMENT, PAYMENTS), (True, PAYMENT_KEY, PAYMENT_KEYS),
], ids=["value", "key"])
def test_json_schema_bytes_equal_the_java_serializer(java: JavaSerdes, schema_registry: str, is_key: bool,
                                                     schema: dict[str, Any], values: list[dict[str, Any]]) -> None:
    serde = KafkaJsonSchemaSerde(schema, config={"schema.registry.url": schema_registry}, is_key=is_key)
    assert_java_writes_the_same(java, serde, schema_registry, unique_topic("json"), is_key, values, format="json")


# -- Protobuf ------------------------------------------------------------------------------------------------

# One entry per map: Protobuf leaves the order of a map's entries on the wire undefined (protobuf-java writes
# them in insertion order, the Python runtime in its own), so only a map of one entry has one encoding.
PROTO_CASES: list[tuple[type[Message], list[int], list[dict[str, Any]]]] = [
    (Order, [0], [{"id": "o-1"}, {"id": "o-2 ✓", "amount": 2.5, "shipTo": {"street": "1 Main", "city": "Zürich"},
                                  "counts": {"b": "-9000000000"}, "tags": ["x", ""], "note": "",
                                  "status": "PAID", "lines": [{"sku": "s", "qty": 2}, {"sku": "t", "qty": -1}]}]),
    (OrderKey, [2], [{"id": "k-1"}, {"id": "k-2", "region": 44}]),
    (OrderLine, [0, 0], [{"sku": "nested", "qty": 7}]),
]


@pytest.mark.parametrize(("message_class", "path", "values"), PROTO_CASES, ids=["value-first", "key-third",
                                                                                  "value-nested"])
def test_protobuf_layouts_and_bodies_against_the_java_serializer(
        java: JavaSerdes, schema_registry: str, message_class: type[Message], path: list[int],
        values: list[dict[str, Any]]) -> None:
    is_key = message_class is OrderKey
    topic = unique_topic("proto")
    config = {"schema.registry.url": schema_registry}
    serde: KafkaProtobufSerde[Message] = KafkaProtobufSerde(message_class, config=config, is_key=is_key)
    messages = [json_format.ParseDict(value, message_class()) for value in values]
    ours = [serde.serializer.serialize(topic, message) for message in messages]
    subject = f"{topic}-{'key' if is_key else 'value'}"
    our_id = registered_id(schema_registry, subject)
    bodies = [message.SerializeToString() for message in messages]
    # Confluent's documented layout, exactly: magic 0, the id, the message indexes, the body.
    assert ours == [b"\x00" + struct.pack(">I", our_id) + confluent_indexes(path) + body for body in bodies]

    # Apicurio's Java serde needs the schema as .proto text: register it under a topic of its own.
    java_topic = unique_topic("proto-java")
    java_subject = f"{java_topic}-{'key' if is_key else 'value'}"
    java_id = register(schema_registry, java_subject, ORDERS_PROTO_TEXT, "PROTOBUF")
    answer = java.ask(format="protobuf", topic=java_topic, isKey=is_key,
                      descriptor=base64.b64encode(FILE_PROTO.SerializeToString()).decode(),
                      message=message_class.DESCRIPTOR.full_name, values=values)
    name = message_class.DESCRIPTOR.name.encode()
    ref = b"\x0a" + varint(len(name)) + name  # Apicurio's Ref { string name = 1; }, length-delimited
    assert answer["written"] == [(b"\x00" + struct.pack(">I", java_id) + varint(len(ref)) + ref + body).hex()
                                 for body in bodies]
    # Each side's parser reads the other's body to the same message.
    for hex_bytes, message in zip(answer["written"], messages, strict=True):
        java_body = bytes.fromhex(hex_bytes)[5 + 1 + len(ref):]
        assert message_class.FromString(java_body) == message
    read_back = java.ask(format="protobuf-body", descriptor=base64.b64encode(FILE_PROTO.SerializeToString()).decode(),
                         message=message_class.DESCRIPTOR.full_name, topic=topic,
                         read=[data[5 + len(confluent_indexes(path)):].hex() for data in ours if data])
    assert read_back["read"] == [json_format.MessageToDict(message) for message in messages]
