"""Byte equality with Apicurio Registry's 3.x Java serializers, against a real Apicurio Registry 3.3.3 (the
`schema_registry3` fixture; Java 21+): the 3.x sibling of test_java_byte_equality.py (Apicurio 2.6.13).
The Java side is tests/java/registry_serdes3: Apicurio's 3.1.7 Kafka serdes (the newest 3.x serdes whose
whole dependency set Maven Central serves) configured for Confluent's wire format: magic byte 0, the 4-byte
content id (the id of Apicurio's Confluent API), no headers; for Protobuf, message indexes instead of
Apicurio's own `Ref` (`send-indexes` on, `send-type-ref` off).

Avro and JSON Schema: streamlet registers the schema, the Java serializer resolves that same registration
(same id), and the two write the same bytes; each side reads the other's.

Protobuf: the layouts agree except for one byte, pinned here. Apicurio's writer encodes the message-index
path [0] (the file's first message) as its general form `02 00` (count 1, index 0), where Confluent's
documented format, confluent-kafka and so streamlet write the single byte `00`; every other path is the same
bytes. Two things keep the two sides off one shared registration, also pinned: confluent-kafka registers a
Protobuf schema as a base64 FileDescriptorProto, which the 3.1.7 Java serdes cannot parse (they try .proto
text, then the raw bytes as a descriptor, never base64), so the Java side uses the same file registered as
.proto text under a subject of its own (another content, another id); and Apicurio 3.3.3 answers Confluent's
`format=serialized` with the descriptor's raw bytes in a JSON string rather than base64, so confluent-kafka's
`use.latest.version` cannot read a .proto text registration. Apicurio's 3.1.7 Java deserializer skips the
message indexes without using them: it reads a message only when told its type (here the message-type header
with DynamicMessage), and only a top-level one; a nested message's body is read by protobuf-java directly.
And the descriptor it builds from .proto text drops proto3 `optional`, so such a field explicitly set to its
default reads as unset (pinned for Order's `note`).
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from streamlet.schema_registry import GenericAvroSerde, KafkaJsonSchemaSerde, KafkaProtobufSerde
from streamlet.testing.local_registry import find_java_at_least
from tests.helpers.java_serdes import JavaSerdes, assert_java_writes_the_same, confluent_indexes, zigzag_indexes
from tests.helpers.maven import built_classpath
from tests.helpers.protobuf_messages import FILE_PROTO, ORDERS_PROTO_TEXT, Order, OrderKey
from tests.helpers.registry import get_json, register, registered_id, subject_of, unique_topic
from tests.schema_registry.test_java_byte_equality import (
    ORDER,
    ORDER_KEY,
    ORDER_KEYS,
    ORDERS,
    PAYMENT,
    PAYMENT_KEY,
    PAYMENT_KEYS,
    PAYMENTS,
    PROTO_CASES,
)

pytestmark = pytest.mark.registry

JAVA_DIR = Path(__file__).parents[1] / "java" / "registry_serdes3"
DESCRIPTOR = base64.b64encode(FILE_PROTO.SerializeToString()).decode()


@pytest.fixture(scope="module")
def java3(schema_registry3: str) -> Iterator[JavaSerdes]:
    if shutil.which("mvn") is None:
        pytest.skip("needs Maven")
    java = find_java_at_least(21)
    java_home = str(Path(java).parents[1])
    serdes = JavaSerdes(schema_registry3, built_classpath(JAVA_DIR, "streamlet-registry-serdes3-0.1.0.jar",
                                                          java_home=java_home),
                        "io.streamlet.registryserdes3.Serdes3Main", java=java)
    yield serdes
    serdes.close()


# -- Avro and JSON Schema: one registration, the same bytes ---------------------------------------------------

_PRIMITIVE_FITS: dict[str, Any] = {
    "null": lambda v: v is None, "boolean": lambda v: isinstance(v, bool), "string": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "long": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, float), "double": lambda v: isinstance(v, float),
}


def _tagged(schema: Any, value: Any, names: dict[str, Any], namespace: str = "") -> Any:
    """`value` in Avro's JSON encoding: a non-null union value as {branch's full name: value}, the first
    branch that fits (the rule the Java side of the 2.6 test uses too)."""
    if isinstance(schema, str):
        return value if schema in _PRIMITIVE_FITS else _tagged(names[schema], value, names, namespace)
    if isinstance(schema, list):
        for branch in schema:
            if _fits(branch, value, names):
                return None if branch == "null" else {_branch_name(branch, namespace):
                                                      _tagged(branch, value, names, namespace)}
        raise ValueError(f"no branch of {schema} fits {value!r}")
    kind = schema["type"]
    if kind in ("record", "enum"):
        names[schema["name"]] = schema
        namespace = schema.get("namespace", namespace)
    if kind == "record":
        return {f["name"]: _tagged(f["type"], value.get(f["name"], f.get("default")), names, namespace)
                for f in schema["fields"]}
    if kind == "array":
        return [_tagged(schema["items"], item, names, namespace) for item in value]
    if kind == "map":
        return {key: _tagged(schema["values"], item, names, namespace) for key, item in value.items()}
    return value


def _fits(schema: Any, value: Any, names: dict[str, Any]) -> bool:
    if isinstance(schema, str):
        return bool(_PRIMITIVE_FITS[schema](value)) if schema in _PRIMITIVE_FITS else _fits(names[schema], value, names)
    kind = schema["type"]
    if kind in ("record", "map"):
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "enum":
        return value in schema["symbols"]
    return bool(_PRIMITIVE_FITS[kind](value))


def _branch_name(branch: Any, namespace: str) -> str:
    if isinstance(branch, str):
        return branch
    if branch["type"] in ("record", "enum", "fixed"):
        space = branch.get("namespace", namespace)
        return f"{space}.{branch['name']}" if space else str(branch["name"])
    return str(branch["type"])


def _avro_json(schema: Any, value: Any) -> str:
    """`value` as Avro's JSON encoding, what Java's JSON decoder reads."""
    return json.dumps(_tagged(schema, value, {}))


@pytest.mark.parametrize(("is_key", "schema", "values"), [
    (False, ORDER, ORDERS), (True, ORDER_KEY, ORDER_KEYS), (True, "string", ["o-1", "", "ünïcode"]),
], ids=["value-record", "key-record", "key-string"])
def test_avro_bytes_equal_the_apicurio3_java_serializer(java3: JavaSerdes, schema_registry3: str, is_key: bool,
                                                        schema: Any, values: list[Any]) -> None:
    serde = GenericAvroSerde(schema, config={"schema.registry.url": schema_registry3}, is_key=is_key)
    assert_java_writes_the_same(java3, serde, schema_registry3, unique_topic("avro"), is_key, values, format="avro",
                                schema=json.dumps(schema), java_values=[_avro_json(schema, value) for value in values])


@pytest.mark.parametrize(("is_key", "schema", "values"), [
    (False, PAYMENT, PAYMENTS), (True, PAYMENT_KEY, PAYMENT_KEYS),
], ids=["value", "key"])
def test_json_schema_bytes_equal_the_apicurio3_java_serializer(
        java3: JavaSerdes, schema_registry3: str, is_key: bool, schema: dict[str, Any],
        values: list[dict[str, Any]]) -> None:
    serde = KafkaJsonSchemaSerde(schema, config={"schema.registry.url": schema_registry3}, is_key=is_key)
    assert_java_writes_the_same(java3, serde, schema_registry3, unique_topic("json"), is_key, values, format="json")


# -- Protobuf ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("message_class", "path", "values"), PROTO_CASES, ids=["value-first", "key-third",
                                                                                  "value-nested"])
def test_protobuf_bytes_against_the_apicurio3_java_serializer(
        java3: JavaSerdes, schema_registry3: str, message_class: type[Message], path: list[int],
        values: list[dict[str, Any]]) -> None:
    is_key = message_class is OrderKey
    config = {"schema.registry.url": schema_registry3}
    serde: KafkaProtobufSerde[Message] = KafkaProtobufSerde(message_class, config=config, is_key=is_key)
    messages = [json_format.ParseDict(value, message_class()) for value in values]
    bodies = [message.SerializeToString() for message in messages]

    # streamlet on Apicurio 3's Confluent API: it registers, frames with the registration's id and reads back.
    topic = unique_topic("proto")
    ours = [serde.serializer.serialize(topic, message) for message in messages]
    our_id = registered_id(schema_registry3, subject_of(topic, is_key))
    assert ours == [b"\x00" + struct.pack(">I", our_id) + confluent_indexes(path) + body for body in bodies]
    assert [serde.deserializer.deserialize(topic, data) for data in ours] == messages

    # The Java serializer, on the same file registered as .proto text (the form it parses).
    java_topic = unique_topic("proto-java")
    java_id = register(schema_registry3, subject_of(java_topic, is_key), ORDERS_PROTO_TEXT, "PROTOBUF")
    answer = java3.ask(format="protobuf", topic=java_topic, isKey=is_key, descriptor=DESCRIPTOR,
                       message=message_class.DESCRIPTOR.full_name, values=values)
    theirs = [bytes.fromhex(h) for h in answer["written"]]
    # Apicurio's layout: always the count then the indexes. After the id, that is streamlet's bytes exactly
    # except for the first message, where it writes 02 00 for Confluent's single 00.
    assert theirs == [b"\x00" + struct.pack(">I", java_id) + zigzag_indexes(path) + body for body in bodies]
    if path == [0]:
        assert [data[5:] for data in theirs] == [b"\x02" + data[5:] for data in ours]
    else:
        assert [data[5:] for data in theirs] == [data[5:] for data in ours]

    # streamlet reads the Java bytes, the 02 00 form included.
    assert [serde.deserializer.deserialize(java_topic, data) for data in theirs] == messages

    as_json = [json_format.MessageToDict(message) for message in messages]
    if message_class.DESCRIPTOR.containing_type is None:
        # The Java deserializer reads streamlet's layout framed with the id it can parse (Confluent's single 00
        # for the first message included), told the message type.
        ours_on_text = [data[:1] + struct.pack(">I", java_id) + data[5:] for data in ours]
        read = java3.ask(format="protobuf", topic=java_topic, isKey=is_key, readType=message_class.DESCRIPTOR.name,
                         read=[data.hex() for data in ours_on_text])
        assert read["read"] == [_as_apicurio_reads(message) for message in messages]
    # protobuf-java parses streamlet's bodies (what follows the indexes) as the message.
    read = java3.ask(format="protobuf-body", descriptor=DESCRIPTOR, message=message_class.DESCRIPTOR.full_name,
                     read=[data[5 + len(confluent_indexes(path)):].hex() for data in ours])
    assert read["read"] == as_json


def _as_apicurio_reads(message: Message) -> dict[str, Any]:
    """The message as Apicurio's 3.1.7 Java deserializer reads it: the descriptor it builds from .proto text
    drops proto3 `optional` (no field presence), so Order's `note` explicitly set to "" reads as unset."""
    seen = type(message)()
    seen.CopyFrom(message)
    if "note" in seen.DESCRIPTOR.fields_by_name and seen.HasField("note") and not seen.note:  # type: ignore[attr-defined]
        seen.ClearField("note")
    return json_format.MessageToDict(seen)


def test_apicurio3_java_serdes_cannot_parse_the_protobuf_registration_streamlet_makes(
        java3: JavaSerdes, schema_registry3: str) -> None:
    topic = unique_topic("proto")
    serde: KafkaProtobufSerde[Message] = KafkaProtobufSerde(Order, config={"schema.registry.url": schema_registry3})
    ours = serde.serializer.serialize(topic, Order(id="o-1"))
    assert ours is not None
    registered = get_json(f"{schema_registry3}/schemas/ids/{registered_id(schema_registry3, f'{topic}-value')}")
    assert base64.b64decode(registered["schema"]) == FILE_PROTO.SerializeToString()  # confluent-kafka's form

    written = java3.request(format="protobuf", topic=topic, descriptor=DESCRIPTOR,
                            message=Order.DESCRIPTOR.full_name, values=[{"id": "o-1"}])
    read = java3.request(format="protobuf", topic=topic, readType="Order", read=[ours.hex()])
    for answer in (written, read):
        assert "InvalidProtocolBufferException" in answer.get("error", "")


def test_apicurio3_answers_format_serialized_with_raw_descriptor_bytes(schema_registry3: str) -> None:
    """Confluent's API gives a Protobuf schema as a base64 FileDescriptorProto when asked `format=serialized`
    (what confluent-kafka asks for `use.latest.version`); Apicurio 3.3.3 puts the raw bytes in the JSON string."""
    topic = unique_topic("proto-text")
    schema_id = register(schema_registry3, f"{topic}-value", ORDERS_PROTO_TEXT, "PROTOBUF")
    with urllib.request.urlopen(f"{schema_registry3}/schemas/ids/{schema_id}?format=serialized",
                                timeout=10) as response:
        serialized = json.loads(response.read())["schema"]
    # Not base64: the descriptor's bytes themselves, those that are not UTF-8 replaced (so lost) by U+FFFD.
    assert serialized.startswith("\n") and "\ufffd" in serialized  # \n: field 1 (the file's name), length-delimited
    with pytest.raises(ValueError):
        base64.b64decode(serialized, validate=True)
