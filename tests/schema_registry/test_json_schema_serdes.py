"""KafkaJsonSchemaSerde against the in-process `mock://` registry: Confluent's wire format, validation on write,
keys, dataclasses, configuration and errors; and the JSON text it writes (Jackson's form) reading back to the
value it was."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamlet.errors import ConfigError, SerializationError
from streamlet.schema_registry import KafkaJsonSchemaSerde
from streamlet.schema_registry.json_schema import java_json
from tests.helpers.registry import latest_id, mock_scope_url

ORDER = {"type": "object", "title": "Order",
         "properties": {"id": {"type": "string"}, "amount": {"type": "number"},
                        "note": {"type": ["string", "null"]}, "tags": {"type": "array", "items": {"type": "string"}}},
         "required": ["id", "amount"], "additionalProperties": False}


@pytest.fixture
def url() -> Iterator[str]:
    yield from mock_scope_url()


def test_wire_format_is_magic_id_compact_utf8_json(url: str) -> None:
    serde = KafkaJsonSchemaSerde(ORDER, config={"schema.registry.url": url})
    value = {"id": "ö-1", "amount": 12.5, "note": None, "tags": ["a", "b"]}
    data = serde.serializer.serialize("orders", value)
    expected_body = '{"id":"ö-1","amount":12.5,"note":null,"tags":["a","b"]}'.encode()
    assert data == b"\x00" + struct.pack(">I", latest_id(url, "orders-value")) + expected_body
    assert serde.deserializer.deserialize("orders", data) == value


def test_a_value_that_does_not_fit_is_refused_naming_the_topic(url: str) -> None:
    serde = KafkaJsonSchemaSerde(ORDER, config={"schema.registry.url": url})
    for bad in ({"id": "o-1"}, {"id": 1, "amount": 1}, {"id": "o", "amount": 1, "extra": True}):
        with pytest.raises(SerializationError, match="KafkaJsonSchemaSerde: the value does not fit the schema "
                                                     "for topic 'orders', subject 'orders-value'"):
            serde.serializer.serialize("orders", bad)


def test_keys_and_a_reader_without_a_schema(url: str) -> None:
    key_schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    keys = KafkaJsonSchemaSerde(key_schema, config={"schema.registry.url": url}, is_key=True)
    data = keys.serializer.serialize("orders", {"id": "k"})
    assert data is not None and struct.unpack(">I", data[1:5])[0] == latest_id(url, "orders-key")
    reader = KafkaJsonSchemaSerde(config={"schema.registry.url": url}, is_key=True)
    assert reader.deserializer.deserialize("orders", data) == {"id": "k"}
    with pytest.raises(SerializationError, match="has no schema to write with"):
        reader.serializer.serialize("orders", {"id": "k"})
    assert keys.serializer.serialize("orders", None) is None


@dataclass
class Payment:
    json_schema = json.dumps({"type": "object", "properties": {
        "id": {"type": "string"}, "cents": {"type": "integer"}, "labels": {"type": "object"}},
        "required": ["id", "cents"]})
    id: str
    cents: int
    labels: dict[str, str] = field(default_factory=dict)


def test_a_dataclass_with_its_schema(url: str) -> None:
    serde = KafkaJsonSchemaSerde(Payment, config={"schema.registry.url": url})
    data = serde.serializer.serialize("payments", Payment("p-1", 250, {"a": "b"}))
    assert data is not None and data[5:] == b'{"id":"p-1","cents":250,"labels":{"a":"b"}}'
    assert serde.deserializer.deserialize("payments", data) == Payment("p-1", 250, {"a": "b"})
    with pytest.raises(SerializationError, match="expects a Payment, got dict"):
        serde.serializer.serialize("payments", {"id": "p"})
    with pytest.raises(ConfigError, match="json_schema"):
        KafkaJsonSchemaSerde(int)
    assert repr(serde) == "KafkaJsonSchemaSerde(Payment)"


def test_configured_from_the_application_and_bad_input_named(url: str) -> None:
    serde = KafkaJsonSchemaSerde(ORDER)
    with pytest.raises(SerializationError, match="not configured"):
        serde.deserializer.deserialize("orders", b"\x00\x00\x00\x00\x01{}")
    serde.configure_from_application({"schema.registry.url": url}, False)
    data = serde.serializer.serialize("orders", {"id": "o", "amount": 1})
    assert data is not None
    with pytest.raises(SerializationError, match="unknown magic byte 7b"):
        serde.deserializer.deserialize("orders", data[5:])
    with pytest.raises(SerializationError, match=r"topic 'orders'.*schema id \d+"):
        serde.deserializer.deserialize("orders", data[:5] + b'{"id": 5, "amount": 1}')  # fails its writer schema


# Jackson's rendering, written out by hand from Java's Double.toString rules (plain between 10^-3 and 10^7,
# else d.dddE<n>; at least one digit after the point).
@pytest.mark.parametrize(("value", "text"), [
    (1e7, "1.0E7"), (9999999.5, "9999999.5"), (0.001, "0.001"), (0.000999, "9.99E-4"), (-1e-7, "-1.0E-7"),
    (3.0, "3.0"), (-0.0, "-0.0"), (1e300, "1.0E300"), (5e-324, "4.9E-324"), (2.0 ** 70, "1.1805916207174113E21"),
    ("a\u001fb\n\"\\", '"a\\u001Fb\\n\\"\\\\"'), ({"k": [1, True, None]}, '{"k":[1,true,null]}'),
])
def test_java_json_writes_what_jackson_writes(value: Any, text: str) -> None:
    assert java_json(value) == text


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    _containers, max_leaves=20)


@given(_json_values)
def test_java_json_reads_back_to_the_value(value: Any) -> None:
    back = json.loads(java_json(value))
    assert back == value
    assert json.dumps(back) == json.dumps(value)  # -0.0 stays -0.0, 1.0 stays a float


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_doubles_read_back_exactly(number: float) -> None:
    text = java_json(number)
    assert float(text) == number and math.copysign(1.0, float(text)) == math.copysign(1.0, number)
    assert "." in text and "e" not in text and "+" not in text
