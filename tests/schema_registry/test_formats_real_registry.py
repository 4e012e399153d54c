"""KafkaProtobufSerde and KafkaJsonSchemaSerde against the real registry (Apicurio Registry serving Confluent's
API, the `schema_registry` fixture): registration under the subject and framing with its id, a fresh reader
(another process's client) reading by id, and evolution through the registry's versions."""

from __future__ import annotations

import json
import struct
import uuid

import pytest

from streamlet.schema_registry import KafkaJsonSchemaSerde, KafkaProtobufSerde
from tests.helpers.protobuf_messages import ORDERS_PROTO_TEXT, Address, Order, OrderKey, OrderV2
from tests.helpers.registry import get_json, register

pytestmark = pytest.mark.registry


def _topic() -> str:
    return f"formats-{uuid.uuid4().hex[:10]}"


def _fresh_client_config(schema_registry: str) -> dict[str, str]:
    """A config naming the same registry by another URL string, so it gets a client (and caches) of its own."""
    return {"schema.registry.url": schema_registry + "/"}


def test_protobuf_registers_frames_and_reads_back(schema_registry: str) -> None:
    topic = _topic()
    value_serde = KafkaProtobufSerde(Order, config={"schema.registry.url": schema_registry})
    key_serde = KafkaProtobufSerde(OrderKey, config={"schema.registry.url": schema_registry}, is_key=True)
    order = Order(id="o-1", amount=3.5, ship_to=Address(city="Bern"), tags=["x"])
    value = value_serde.serializer.serialize(topic, order)
    key = key_serde.serializer.serialize(topic, OrderKey(id="o-1", region=2))
    assert value is not None and key is not None
    latest = get_json(f"{schema_registry}/subjects/{topic}-value/versions/latest")
    assert latest["schemaType"] == "PROTOBUF"
    assert value[:5] == b"\x00" + struct.pack(">I", latest["id"]) and value[5:6] == b"\x00"
    key_id = get_json(f"{schema_registry}/subjects/{topic}-key/versions/latest")["id"]
    assert key[:7] == b"\x00" + struct.pack(">I", key_id) + b"\x02\x04"  # OrderKey: the file's third message
    config = _fresh_client_config(schema_registry)
    assert KafkaProtobufSerde(Order, config=config).deserializer.deserialize(topic, value) == order
    assert KafkaProtobufSerde(OrderKey, config=config, is_key=True).deserializer.deserialize(topic, key) == \
        OrderKey(id="o-1", region=2)


def test_protobuf_evolution_through_the_registry(schema_registry: str) -> None:
    topic = _topic()
    config = {"schema.registry.url": schema_registry}
    old_bytes = KafkaProtobufSerde(Order, config=config).serializer.serialize(topic, Order(id="o-1", amount=1.0))
    new = KafkaProtobufSerde(OrderV2, config=config)
    new_bytes = new.serializer.serialize(topic, OrderV2(id="o-2", amount=2.0, channel="web"))
    assert old_bytes is not None and new_bytes is not None and old_bytes[1:5] != new_bytes[1:5]
    assert get_json(f"{schema_registry}/subjects/{topic}-value/versions") == [1, 2]
    assert new.deserializer.deserialize(topic, old_bytes) == OrderV2(id="o-1", amount=1.0)
    old_reader = KafkaProtobufSerde(Order, config=_fresh_client_config(schema_registry))
    read = old_reader.deserializer.deserialize(topic, new_bytes)
    assert (read.id, read.amount) == ("o-2", 2.0)


def test_protobuf_reads_records_whose_schema_was_registered_as_proto_text(schema_registry: str) -> None:
    """A Java serde registers the .proto text (confluent-kafka registers the base64 descriptor); the reader
    needs only the id to be the registry's."""
    topic = _topic()
    schema_id = register(schema_registry, f"{topic}-value", ORDERS_PROTO_TEXT, "PROTOBUF")
    order = Order(id="o-9", amount=9.0, tags=["t"])
    data = b"\x00" + struct.pack(">I", schema_id) + b"\x00" + order.SerializeToString()
    assert KafkaProtobufSerde(Order, config={"schema.registry.url": schema_registry}).deserializer.deserialize(
        topic, data) == order


V1 = {"type": "object", "title": "Payment", "properties": {"id": {"type": "string"}, "cents": {"type": "integer"}},
      "required": ["id", "cents"]}
V2 = {**V1, "properties": {**V1["properties"], "currency": {"type": "string"}}}


def test_json_schema_registers_validates_and_evolves(schema_registry: str) -> None:
    topic = _topic()
    config = {"schema.registry.url": schema_registry}
    v1 = KafkaJsonSchemaSerde(V1, config=config)
    old_bytes = v1.serializer.serialize(topic, {"id": "p-1", "cents": 5})
    latest = get_json(f"{schema_registry}/subjects/{topic}-value/versions/latest")
    assert latest["schemaType"] == "JSON" and json.loads(latest["schema"]) == V1
    assert old_bytes == b"\x00" + struct.pack(">I", latest["id"]) + b'{"id":"p-1","cents":5}'
    new_bytes = KafkaJsonSchemaSerde(V2, config=config).serializer.serialize(
        topic, {"id": "p-2", "cents": 7, "currency": "CHF"})
    assert new_bytes is not None and old_bytes[1:5] != new_bytes[1:5]
    assert get_json(f"{schema_registry}/subjects/{topic}-value/versions") == [1, 2]
    reader = KafkaJsonSchemaSerde(config=_fresh_client_config(schema_registry))
    assert reader.deserializer.deserialize(topic, old_bytes) == {"id": "p-1", "cents": 5}
    assert reader.deserializer.deserialize(topic, new_bytes) == {"id": "p-2", "cents": 7, "currency": "CHF"}
