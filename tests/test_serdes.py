"""Serdes: byte layouts of Kafka's Java serdes, None handling, clear errors on bad input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamlet.errors import SerializationError
from streamlet.serdes import Serde, Serdes, resolve_serde


def roundtrip(serde: Serde[object], value: object) -> object:
    return serde.deserializer.deserialize("t", serde.serializer.serialize("t", value))


def test_long_is_eight_byte_big_endian_twos_complement() -> None:
    ser = Serdes.Long().serializer
    assert ser.serialize("t", 1) == b"\x00\x00\x00\x00\x00\x00\x00\x01"
    assert ser.serialize("t", -1) == b"\xff" * 8
    assert ser.serialize("t", 2**63 - 1) == b"\x7f" + b"\xff" * 7
    with pytest.raises(SerializationError):
        ser.serialize("t", 2**63)


def test_integer_short_double_float_layouts() -> None:
    assert Serdes.Integer().serializer.serialize("t", -2) == b"\xff\xff\xff\xfe"
    assert Serdes.Short().serializer.serialize("t", 258) == b"\x01\x02"
    assert Serdes.Double().serializer.serialize("t", 1.5) == bytes.fromhex("3ff8000000000000")
    assert Serdes.Float().serializer.serialize("t", 1.5) == bytes.fromhex("3fc00000")


def test_string_is_utf8_and_bytes_pass_through() -> None:
    assert Serdes.String().serializer.serialize("t", "ké") == "ké".encode()
    assert Serdes.Bytes().serializer.serialize("t", b"\x00\x01") == b"\x00\x01"


def test_none_maps_to_none_both_ways() -> None:
    for serde in (Serdes.String(), Serdes.Long(), Serdes.Integer(), Serdes.Double(), Serdes.Json(), Serdes.Bytes()):
        assert serde.serializer.serialize("t", None) is None
        assert serde.deserializer.deserialize("t", None) is None


def test_wrong_sizes_and_types_fail_clearly() -> None:
    with pytest.raises(SerializationError, match="not 8"):
        Serdes.Long().deserializer.deserialize("t", b"\x00\x01")
    with pytest.raises(SerializationError):
        Serdes.Long().serializer.serialize("t", "12")
    with pytest.raises(SerializationError):
        Serdes.String().deserializer.deserialize("t", b"\xff\xfe")
    with pytest.raises(SerializationError):
        Serdes.Json().deserializer.deserialize("t", b"{not json")
    with pytest.raises(SerializationError):
        Serdes.Long().serializer.serialize("t", True)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_long_roundtrip_and_matches_struct(n: int) -> None:
    assert roundtrip(Serdes.Long(), n) == n
    assert Serdes.Long().serializer.serialize("t", n) == struct.pack(">q", n)


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
                    lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=10))
def test_json_roundtrip(value: object) -> None:
    assert roundtrip(Serdes.Json(), value) == value


def test_resolve_serde_accepts_instances_classes_and_java_names() -> None:
    assert isinstance(resolve_serde(Serdes.Long), Serdes.Long)
    assert isinstance(resolve_serde(Serdes.String()), Serdes.String)
    assert isinstance(resolve_serde("org.apache.kafka.common.serialization.Serdes$LongSerde"), Serdes.Long)
    assert isinstance(resolve_serde("String"), Serdes.String)
    assert resolve_serde(None) is None
    with pytest.raises(SerializationError, match="unknown serde"):
        resolve_serde("Avro")
