"""The Avro serdes against a real registry (Apicurio Registry serving Confluent's API, the `schema_registry`
fixture): registration and ids, the subject strategies, evolution through the registry, an incompatible
schema refused with the registry's own message, and no registry round trip per record."""

from __future__ import annotations

import json
import struct
import urllib.request
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from streamlet.errors import SerializationError
from streamlet.schema_registry import GenericAvroSerde, SpecificAvroSerde
from streamlet.schema_registry.client import RegistrySettings, registry_client
from tests.schema_registry.test_avro_serdes import ORDER_V1, Order, _body

pytestmark = pytest.mark.registry


def _topic() -> str:
    return f"orders-{uuid.uuid4().hex[:10]}"


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_registers_under_the_topic_subject_and_frames_with_its_id(schema_registry: str) -> None:
    topic = _topic()
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": schema_registry})
    value = {"id": "o-1", "amount": 4.25}
    data = serde.serializer.serialize(topic, value)
    assert data is not None
    latest = _get(f"{schema_registry}/subjects/{topic}-value/versions/latest")
    assert data[0] == 0 and struct.unpack(">I", data[1:5])[0] == latest["id"]
    assert json.loads(latest["schema"])["name"] == "Order"
    assert data[5:] == _body(ORDER_V1, value)
    # Another process (a fresh client) reads it back through the registry.
    reader = GenericAvroSerde(config={"schema.registry.url": schema_registry})
    assert reader.deserializer.deserialize(topic, data) == value


@pytest.mark.parametrize(("strategy", "subject"), [
    ("TopicNameStrategy", "{topic}-value"),
    ("RecordNameStrategy", "{record}"),
    ("TopicRecordNameStrategy", "{topic}-{record}"),
])
def test_subject_strategies(schema_registry: str, strategy: str, subject: str) -> None:
    topic = _topic()
    record = f"shop{uuid.uuid4().hex[:8]}.Order"  # own record name: the registry is shared by the session
    schema = {**ORDER_V1, "namespace": record.split(".")[0]}
    serde = GenericAvroSerde(schema, config={"schema.registry.url": schema_registry,
                                             "value.subject.name.strategy": strategy})
    data = serde.serializer.serialize(topic, {"id": "o", "amount": 1.0})
    expected = subject.format(topic=topic, record=record)
    assert expected in _get(f"{schema_registry}/subjects")
    assert serde.deserializer.deserialize(topic, data) == {"id": "o", "amount": 1.0}


def test_evolution_through_the_registry(schema_registry: str) -> None:
    topic = _topic()
    config = {"schema.registry.url": schema_registry}
    old_bytes = GenericAvroSerde(ORDER_V1, config=config).serializer.serialize(topic, {"id": "o-1", "amount": 1.0})
    new = SpecificAvroSerde(Order, config=config)
    new_bytes = new.serializer.serialize(topic, Order("o-2", 2.0, "USD"))
    assert old_bytes is not None and new_bytes is not None and old_bytes[1:5] != new_bytes[1:5]
    assert _get(f"{schema_registry}/subjects/{topic}-value/versions") == [1, 2]
    assert new.deserializer.deserialize(topic, old_bytes) == Order("o-1", 1.0, "EUR")  # added field: default
    old_reader = GenericAvroSerde(reader_schema=ORDER_V1, config=config)
    assert old_reader.deserializer.deserialize(topic, new_bytes) == {"id": "o-2", "amount": 2.0}  # removed field


def test_incompatible_schema_is_refused_with_the_registry_message(schema_registry: str) -> None:
    topic = _topic()
    config = {"schema.registry.url": schema_registry}
    GenericAvroSerde(ORDER_V1, config=config).serializer.serialize(topic, {"id": "o-1", "amount": 1.0})
    SchemaRegistryClient({"url": schema_registry}).set_compatibility(f"{topic}-value", "BACKWARD")
    incompatible = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "shop", "type": "string"}]}  # no default
    with pytest.raises(SerializationError, match=r"refused the schema.*HTTP 409") as failure:
        GenericAvroSerde(incompatible, config=config).serializer.serialize(
            topic, {"id": "o-2", "amount": 1.0, "shop": "x"})
    assert topic in str(failure.value)
    print(failure.value)  # the registry's own words, for the test log


def test_unknown_schema_id_names_it(schema_registry: str) -> None:
    serde = GenericAvroSerde(config={"schema.registry.url": schema_registry})
    with pytest.raises(SerializationError, match="schema id 987654"):
        serde.deserializer.deserialize(_topic(), b"\x00" + struct.pack(">I", 987654) + b"\x02a")


def test_no_registry_round_trip_per_record(schema_registry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    topic = _topic()
    config = {"schema.registry.url": schema_registry}
    serde = SpecificAvroSerde(Order, config=config)
    rest = registry_client(RegistrySettings.from_config(config))._rest_client
    requests: list[str] = []
    original = rest.send_request
    monkeypatch.setattr(rest, "send_request", lambda url, *a, **k: (requests.append(url), original(url, *a, **k))[1])
    serde.deserializer.deserialize(topic, serde.serializer.serialize(topic, Order("warm", 0.0)))
    assert requests  # the first record of a new subject registers its schema
    requests.clear()
    for index in range(200):
        data = serde.serializer.serialize(topic, Order(f"o-{index}", float(index)))
        assert serde.deserializer.deserialize(topic, data) == Order(f"o-{index}", float(index))
    assert requests == []
