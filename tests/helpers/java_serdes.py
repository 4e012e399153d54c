"""A long-lived Java serde process for the byte-equality tests (tests/java/registry_serdes*: one JSON request
per line on stdin, one JSON answer per line on stdout), and Confluent's message-index encoding."""

from __future__ import annotations

import json
import subprocess
from typing import Any


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
