"""A long-lived Java serde process for the byte-equality tests (tests/java/registry_serdes*: one JSON request
per line on stdin, one JSON answer per line on stdout), and Confluent's message-index encoding."""

from __future__ import annotations

import json
import struct
import subprocess
from typing import Any

from tests.helpers.registry import get_json


class JavaSerdes:
    """The Java filter `main_class` on `classpath`, run by `java`; every request carries `registry`."""

    def __init__(self, registry: str, classpath: str, main_class: str, java: str = "java") -> None:
        self.registry = registry
        self.process = subprocess.Popen(
            [java, "-cp", classpath, main_class],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8")

    def request(self, **request: Any) -> dict[str, Any]:
        """The answer to one request, as it came (`{"error": ...}` when the Java side threw)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"registry": self.registry, **request}) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def ask(self, **request: Any) -> dict[str, Any]:
        """The answer to one request that must succeed."""
        answer = self.request(**request)
        assert "error" not in answer, answer["error"]
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def varint(value: int) -> bytes:
    """Protobuf's unsigned base-128 varint."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def zigzag_indexes(path: list[int]) -> bytes:
    """A message-index path as the count then each index, zigzag varints: Confluent's general encoding."""
    return b"".join(varint((n << 1) ^ (n >> 63)) for n in [len(path), *path])


def confluent_indexes(path: list[int]) -> bytes:
    """Confluent's documented message-index encoding: [0] (the file's first message) as a single 0, else
    `zigzag_indexes(path)`."""
    return b"\x00" if path == [0] else zigzag_indexes(path)


def assert_java_writes_the_same(java: JavaSerdes, serde: Any, registry: str, topic: str, is_key: bool,
                                values: list[Any], java_values: list[Any] | None = None, reader: Any = None,
                                **request: Any) -> None:
    """streamlet's `serde` and the Java serializer write the same bytes for `values` on `topic`, both framing
    them with the id of the one registration streamlet made; the Java deserializer reads streamlet's bytes and
    streamlet reads Java's, each to `values`. `java_values` are the values as the Java side takes them when
    not as `values`; `request` is the rest of the Java request (format, schema); `reader` is the serde that
    reads Java's bytes when not `serde`."""
    ours = [serde.serializer.serialize(topic, value) for value in values]
    assert all(data is not None for data in ours)
    subject = f"{topic}-{'key' if is_key else 'value'}"
    schema_id = int(get_json(f"{registry}/subjects/{subject}/versions/latest")["id"])
    assert {data[1:5] for data in ours} == {struct.pack(">I", schema_id)}

    answer = java.ask(topic=topic, isKey=is_key, values=values if java_values is None else java_values,
                      read=[data.hex() for data in ours], **request)
    assert answer["written"] == [data.hex() for data in ours]  # the same bytes, value by value
    assert answer["read"] == values  # Java reads ours
    reader = serde if reader is None else reader
    assert [reader.deserializer.deserialize(topic, bytes.fromhex(h)) for h in answer["written"]] == values
