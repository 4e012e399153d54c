"""GenericAvroSerde and SpecificAvroSerde against the in-process `mock://` registry: wire format, subjects,
strategies, schema evolution, bad input."""

from __future__ import annotations

import io
import json
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import fastavro
import pytest

from streamlet.errors import ConfigError, SerializationError
from streamlet.schema_registry import GenericAvroSerde, SpecificAvroSerde, avro_schema_of, drop_scope
from streamlet.schema_registry.client import RegistrySettings, registry_client

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"}]}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}


@dataclass
class Order:
    avro_schema = json.dumps(ORDER_V2)
    id: str
    amount: float
    currency: str = "EUR"


@dataclass
class Line:
    sku: str
    quantity: int


@dataclass
class Basket:
    owner: str
    lines: list[Line]
    note: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def url() -> Iterator[str]:
    scope = f"unit-{uuid.uuid4().hex}"
    yield f"mock://{scope}"
    drop_scope(scope)


def _client(url: str):  # type: ignore[no-untyped-def]
    return registry_client(RegistrySettings.from_config({"schema.registry.url": url}))


def _body(schema: dict, value: dict) -> bytes:  # type: ignore[type-arg]
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def test_generic_round_trip_and_wire_format(url: str) -> None:
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url})
    value = {"id": "o-1", "amount": 12.5}
    data = serde.serializer.serialize("orders", value)
    assert data is not None
    schema_id = _client(url).get_latest_version("orders-value").schema_id
    assert data[0] == 0 and struct.unpack(">I", data[1:5])[0] == schema_id
    assert data[5:] == _body(ORDER_V1, value)
    assert serde.deserializer.deserialize("orders", data) == value
    assert serde.serializer.serialize("orders", None) is None and serde.deserializer.deserialize("orders", None) is None


def test_keys_and_values_register_under_their_own_subjects(url: str) -> None:
    key = GenericAvroSerde("string", config={"schema.registry.url": url}, is_key=True)
    value = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url})
    key_bytes = key.serializer.serialize("orders", "o-1")
    value.serializer.serialize("orders", {"id": "o-1", "amount": 1.0})
    assert sorted(_client(url).get_subjects()) == ["orders-key", "orders-value"]
    assert key_bytes is not None and key_bytes[5:] == _body("string", "o-1")  # type: ignore[arg-type]
    assert key.deserializer.deserialize("orders", key_bytes) == "o-1"


@pytest.mark.parametrize(("strategy", "subject"), [
    ("TopicNameStrategy", "orders-value"),
    ("io.confluent.kafka.serializers.subject.RecordNameStrategy", "shop.Order"),
    ("TopicRecordNameStrategy", "orders-shop.Order"),
])
def test_subject_name_strategies(url: str, strategy: str, subject: str) -> None:
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url, "value.subject.name.strategy": strategy})
    data = serde.serializer.serialize("orders", {"id": "o-1", "amount": 1.0})
    assert _client(url).get_subjects() == [subject]
    assert serde.deserializer.deserialize("orders", data) == {"id": "o-1", "amount": 1.0}


def test_key_strategy_applies_to_keys_only(url: str) -> None:
    config = {"schema.registry.url": url, "key.subject.name.strategy": "RecordNameStrategy"}
    GenericAvroSerde(ORDER_V1, config=config, is_key=True).serializer.serialize("t", {"id": "k", "amount": 0.0})
    GenericAvroSerde(ORDER_V1, config=config).serializer.serialize("t", {"id": "v", "amount": 0.0})
    assert sorted(_client(url).get_subjects()) == ["shop.Order", "t-value"]


def test_unknown_strategy_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="value.subject.name.strategy"):
        GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url, "value.subject.name.strategy": "Nope"})


def test_specific_round_trip(url: str) -> None:
    serde = SpecificAvroSerde(Order, config={"schema.registry.url": url})
    data = serde.serializer.serialize("orders", Order("o-1", 3.0, "USD"))
    assert data is not None and data[5:] == _body(ORDER_V2, {"id": "o-1", "amount": 3.0, "currency": "USD"})
    assert serde.deserializer.deserialize("orders", data) == Order("o-1", 3.0, "USD")


def test_evolution_added_field_with_default(url: str) -> None:
    old = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url})
    written = old.serializer.serialize("orders", {"id": "o-1", "amount": 2.0})
    new = SpecificAvroSerde(Order, config={"schema.registry.url": url})
    assert new.deserializer.deserialize("orders", written) == Order("o-1", 2.0, "EUR")


def test_evolution_removed_field(url: str) -> None:
    new = SpecificAvroSerde(Order, config={"schema.registry.url": url})
    written = new.serializer.serialize("orders", Order("o-1", 2.0, "USD"))
    old_reader = GenericAvroSerde(reader_schema=ORDER_V1, config={"schema.registry.url": url})
    assert old_reader.deserializer.deserialize("orders", written) == {"id": "o-1", "amount": 2.0}
    # Without a reader schema a record comes back as its writer wrote it.
    writer_view = GenericAvroSerde(config={"schema.registry.url": url})
    assert writer_view.deserializer.deserialize("orders", written) == {"id": "o-1", "amount": 2.0, "currency": "USD"}


def test_derived_schema_nested_records(url: str) -> None:
    schema = avro_schema_of(Basket)
    assert schema["name"] == "Basket" and [f["name"] for f in schema["fields"]] == ["owner", "lines", "note", "tags"]
    assert schema["fields"][2] == {"name": "note", "type": ["null", "string"], "default": None}
    serde = SpecificAvroSerde(Basket, config={"schema.registry.url": url})
    basket = Basket("ann", [Line("a", 2), Line("b", 1)], None, {"k": "v"})
    assert serde.deserializer.deserialize("baskets", serde.serializer.serialize("baskets", basket)) == basket


def test_registration_is_cached(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The serializer registers (or looks up) a subject's schema once; reading by id is cached by the real
    registry client (the mock keeps its schemas in memory): tests/schema_registry/test_real_registry.py
    counts the HTTP requests."""
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url})
    first = serde.serializer.serialize("orders", {"id": "o-0", "amount": 0.0})
    serde.deserializer.deserialize("orders", first)
    client = _client(url)
    calls: list[str] = []
    for name in ("register_schema", "register_schema_full_response", "lookup_schema", "get_latest_version"):
        original = getattr(client, name)
        monkeypatch.setattr(client, name, lambda *a, _n=name, _o=original, **k: (calls.append(_n), _o(*a, **k))[1])
    for index in range(100):
        data = serde.serializer.serialize("orders", {"id": f"o-{index}", "amount": float(index)})
        serde.deserializer.deserialize("orders", data)
    assert calls == []


def test_unknown_schema_id_names_the_id(url: str) -> None:
    serde = GenericAvroSerde(config={"schema.registry.url": url})
    with pytest.raises(SerializationError, match="schema id 4242"):
        serde.deserializer.deserialize("orders", b"\x00" + struct.pack(">I", 4242) + b"\x02a")


def test_wrong_magic_byte(url: str) -> None:
    serde = GenericAvroSerde(config={"schema.registry.url": url})
    with pytest.raises(SerializationError, match="magic byte 07"):
        serde.deserializer.deserialize("orders", b"\x07" + struct.pack(">I", 1) + b"\x02a")
    with pytest.raises(SerializationError, match="magic byte"):
        serde.deserializer.deserialize("orders", b"plain text")


def test_body_that_does_not_match_names_the_id(url: str) -> None:
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url})
    data = serde.serializer.serialize("orders", {"id": "o-1", "amount": 1.0})
    assert data is not None
    with pytest.raises(SerializationError, match=f"schema id {struct.unpack('>I', data[1:5])[0]}"):
        serde.deserializer.deserialize("orders", data[:5] + b"\x7f")


def test_value_that_does_not_fit_the_schema(url: str) -> None:
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url})
    with pytest.raises(SerializationError, match="does not fit the schema for topic 'orders', subject 'orders-value'"):
        serde.serializer.serialize("orders", {"id": 7})


def test_not_configured_and_no_schema() -> None:
    with pytest.raises(SerializationError, match="not configured"):
        GenericAvroSerde(ORDER_V1).serializer.serialize("orders", {"id": "o", "amount": 1.0})
    with pytest.raises(ConfigError, match="schema.registry.url"):
        GenericAvroSerde(ORDER_V1, config={})
    with pytest.raises(SerializationError, match="no schema to write with"):
        GenericAvroSerde(config={"schema.registry.url": "mock://x"}).serializer.serialize("t", {"a": 1})


def test_auto_register_off_needs_a_registered_schema(url: str) -> None:
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url, "auto.register.schemas": "false"})
    with pytest.raises(SerializationError, match="registry"):
        serde.serializer.serialize("orders", {"id": "o", "amount": 1.0})
    GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url}).serializer.serialize(
        "orders", {"id": "o", "amount": 1.0})
    assert serde.serializer.serialize("orders", {"id": "o", "amount": 1.0}) is not None


def test_use_latest_version_writes_with_the_registered_schema(url: str) -> None:
    GenericAvroSerde(ORDER_V2, config={"schema.registry.url": url}).serializer.serialize(
        "orders", {"id": "o", "amount": 1.0, "currency": "USD"})
    latest = GenericAvroSerde(config={"schema.registry.url": url, "use.latest.version": True,
                                      "auto.register.schemas": False})
    data = latest.serializer.serialize("orders", {"id": "o", "amount": 1.0, "currency": "GBP"})
    assert latest.deserializer.deserialize("orders", data)["currency"] == "GBP"  # type: ignore[index]


def test_configured_by_hand_wins_over_the_application(url: str) -> None:
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url})
    serde.configure_from_application({"schema.registry.url": "mock://elsewhere"}, False)
    serde.serializer.serialize("orders", {"id": "o", "amount": 1.0})
    assert _client(url).get_subjects() == ["orders-value"]


def test_user_info_is_never_shown() -> None:
    settings = RegistrySettings.from_config({"schema.registry.url": "http://127.0.0.1:1",
                                             "basic.auth.user.info": "user:s3cret"})
    assert "s3cret" not in repr(settings)
    from streamlet.config import StreamsConfig
    shown = repr(StreamsConfig({"application.id": "a", "basic.auth.user.info": "user:s3cret"}))
    assert "s3cret" not in shown
    with pytest.raises(ConfigError, match="user:password"):
        RegistrySettings.from_config({"schema.registry.url": "http://h:1", "basic.auth.user.info": "nocolon"})


def test_importing_streamlet_imports_no_registry_client() -> None:
    """An application without schemas loads neither this package nor confluent-kafka nor fastavro."""
    import subprocess
    import sys

    code = ("import sys, streamlet, streamlet.testing, streamlet.cli.main; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('confluent_kafka', 'fastavro') "
            "or m.startswith('streamlet.schema_registry')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
