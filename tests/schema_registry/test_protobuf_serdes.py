"""KafkaProtobufSerde against the in-process `mock://` registry: Confluent's wire format with its message
indexes, key and value subjects, the subject strategies, evolution, configuration and errors."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from google.protobuf.message import Message

from streamlet.errors import ConfigError, SerializationError
from streamlet.schema_registry import KafkaProtobufSerde
from tests.helpers.protobuf_messages import Address, Order, OrderKey, OrderLine, OrderV2
from tests.helpers.registry import latest_id, mock_scope_url


@pytest.fixture
def url() -> Iterator[str]:
    yield from mock_scope_url()


def _order() -> Message:
    order = Order(id="o-1", amount=2.5, ship_to=Address(street="1 Main", city="Bern"), tags=["a"], status=2,
                  lines=[OrderLine(sku="s", qty=3)])
    order.counts["x"] = 7
    order.note = ""
    return order


# Confluent's documented indexes, written out: [0] is one 0 byte; else the count, then each index, as
# zigzag varints (1 -> 0x02, 2 -> 0x04).
@pytest.mark.parametrize(("message", "indexes"), [
    (_order(), b"\x00"),                          # the file's first message
    (Address(street="s", city="c"), b"\x02\x02"),  # its second: [1]
    (OrderKey(id="k", region=5), b"\x02\x04"),     # its third: [2]
    (OrderLine(sku="s", qty=1), b"\x04\x00\x00"),  # the first message nested in the first: [0, 0]
], ids=["first", "second", "third", "nested"])
def test_wire_format_is_magic_id_indexes_body(url: str, message: Message, indexes: bytes) -> None:
    serde: KafkaProtobufSerde[Message] = KafkaProtobufSerde(type(message), config={"schema.registry.url": url})
    data = serde.serializer.serialize("orders", message)
    schema_id = latest_id(url, "orders-value")
    assert data == b"\x00" + struct.pack(">I", schema_id) + indexes + message.SerializeToString()
    assert serde.deserializer.deserialize("orders", data) == message


def test_keys_register_under_the_key_subject_and_none_is_none(url: str) -> None:
    serde = KafkaProtobufSerde(OrderKey, config={"schema.registry.url": url}, is_key=True)
    data = serde.serializer.serialize("orders", OrderKey(id="k-1"))
    assert data is not None and struct.unpack(">I", data[1:5])[0] == latest_id(url, "orders-key")
    assert serde.deserializer.deserialize("orders", data) == OrderKey(id="k-1")
    assert serde.serializer.serialize("orders", None) is None
    assert serde.deserializer.deserialize("orders", None) is None


def test_record_name_strategy_uses_the_full_message_name(url: str) -> None:
    serde = KafkaProtobufSerde(Order, config={"schema.registry.url": url,
                                              "value.subject.name.strategy": "RecordNameStrategy"})
    data = serde.serializer.serialize("orders", _order())
    assert data is not None and struct.unpack(">I", data[1:5])[0] == latest_id(url, "streamlet.test.Order")


def test_evolution_both_ways(url: str) -> None:
    config = {"schema.registry.url": url}
    old = KafkaProtobufSerde(Order, config=config)
    new = KafkaProtobufSerde(OrderV2, config=config)
    old_bytes = old.serializer.serialize("orders", Order(id="o-1", amount=1.0))
    new_bytes = new.serializer.serialize("orders", OrderV2(id="o-2", amount=2.0, channel="web"))
    assert old_bytes is not None and new_bytes is not None and old_bytes[1:5] != new_bytes[1:5]
    assert new.deserializer.deserialize("orders", old_bytes) == OrderV2(id="o-1", amount=1.0)  # added: default
    read_old = old.deserializer.deserialize("orders", new_bytes)
    assert (read_old.id, read_old.amount) == ("o-2", 2.0)
    assert read_old.SerializeToString() == new_bytes[6:]  # the unknown field is kept, written back as it came


def test_application_config_configures_it_and_by_hand_wins(url: str) -> None:
    serde = KafkaProtobufSerde(Order)
    assert not serde.configured
    with pytest.raises(SerializationError, match="KafkaProtobufSerde is not configured"):
        serde.serializer.serialize("orders", _order())
    serde.configure_from_application({"schema.registry.url": url}, False)
    assert serde.configured
    data = serde.serializer.serialize("orders", _order())
    assert data is not None and struct.unpack(">I", data[1:5])[0] == latest_id(url, "orders-value")
    by_hand = KafkaProtobufSerde(Order, config={"schema.registry.url": url})
    by_hand.configure_from_application({"schema.registry.url": "mock://elsewhere"}, True)
    assert by_hand.deserializer.deserialize("orders", data) == _order()


def test_errors_name_the_topic_and_schema_id(url: str) -> None:
    serde = KafkaProtobufSerde(Order, config={"schema.registry.url": url})
    with pytest.raises(SerializationError,
                       match="KafkaProtobufSerde: the value does not fit the schema for topic 'orders'"):
        serde.serializer.serialize("orders", OrderKey(id="k"))  # type: ignore[arg-type]
    with pytest.raises(SerializationError, match="unknown magic byte 01 .* topic 'orders'"):
        serde.deserializer.deserialize("orders", b"\x01\x00\x00\x00\x01\x00")
    data = serde.serializer.serialize("orders", _order())
    assert data is not None
    with pytest.raises(SerializationError, match=r"topic 'orders'.*schema id \d+"):
        serde.deserializer.deserialize("orders", data[:6] + b"\xff\xff")  # a body that is no Order
    with pytest.raises(ConfigError, match="needs a generated Protobuf message class"):
        KafkaProtobufSerde(dict)  # type: ignore[type-var]
    assert repr(serde) == "KafkaProtobufSerde(streamlet.test.Order)"


def test_an_unknown_schema_id_is_named(url: str) -> None:
    serde = KafkaProtobufSerde(Order, config={"schema.registry.url": url})
    data = serde.serializer.serialize("orders", _order())
    assert data is not None
    unknown = b"\x00" + struct.pack(">I", 4242) + data[5:]
    with pytest.raises(SerializationError, match="schema id 4242 of a record of topic 'orders' could not be fetched"):
        serde.deserializer.deserialize("orders", unknown)


def test_a_class_of_googles_common_protos(url: str) -> None:
    """A message whose file the Protobuf runtime's own pools already hold (google/type/money.proto) reads back:
    the reader parses with the class and does not rebuild the writer's file."""
    from google.type.money_pb2 import Money

    serde = KafkaProtobufSerde(Money, config={"schema.registry.url": url})
    money = Money(currency_code="CHF", units=12, nanos=5)
    data = serde.serializer.serialize("payments", money)
    assert data is not None and data[5:] == b"\x00" + money.SerializeToString()
    assert serde.deserializer.deserialize("payments", data) == money
