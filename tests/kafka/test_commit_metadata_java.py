"""streamlet's commit metadata against Kafka Streams 4.4.0's own `TopicPartitionMetadata`, both ways.

tests/java/commit_metadata (built here with Maven when its sources are newer than its jar) decodes the
strings streamlet encodes with Kafka Streams' `TopicPartitionMetadata.decode`, and encodes maps with
Kafka Streams' `ProcessorMetadata` and `TopicPartitionMetadata.encode` for streamlet to decode. Strings
that are not valid metadata are decoded by both and must come out alike.
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.kafka.commit_metadata import STREAMLET_KEY_PREFIX, TopicPartitionMetadata
from tests.helpers.maven import built_classpath

JAVA_DIR = Path(__file__).parents[1] / "java" / "commit_metadata"

pytestmark = pytest.mark.skipif(shutil.which("java") is None or shutil.which("mvn") is None,
                                reason="needs Java and Maven")

longs = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
keys = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
    st.from_regex(r"[A-Za-z0-9._-]{1,40}", fullmatch=True),  # store names
    st.builds(lambda s: STREAMLET_KEY_PREFIX + s, st.from_regex(r"[a-z:-]{1,30}", fullmatch=True)),
)
entries = st.lists(st.tuples(keys, longs), max_size=14, unique_by=lambda kv: kv[0])


class _KafkaStreams:
    """The Java check, one request per line."""

    def __init__(self, classpath: str) -> None:
        self._proc = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath,
             "io.streamlet.commitmetadata.CommitMetadataCheck"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self._lock = threading.Lock()

    def _ask(self, line: str) -> str:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        with self._lock:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline()
        if not answer:
            assert self._proc.stderr is not None
            raise RuntimeError(f"the Java check died: {self._proc.stderr.read()[-3000:]}")
        return answer.strip()

    def decode(self, text: str) -> tuple[int, dict[str, int]]:
        answer = json.loads(self._ask(f"decode {text.encode().hex()}"))
        return answer["partitionTime"], {bytes.fromhex(k).decode(): v for k, v in answer["metadata"]}

    def encode(self, partition_time: int, puts: list[tuple[str, int]]) -> str:
        return self._ask(" ".join(["encode", str(partition_time), *(f"{k.encode().hex()}={v}" for k, v in puts)]))

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=30)


@pytest.fixture(scope="module")
def kafka_streams() -> Iterator[_KafkaStreams]:
    check = _KafkaStreams(built_classpath(JAVA_DIR, "streamlet-commit-metadata-check-0.1.0.jar"))
    yield check
    check.close()


def _ours(text: str) -> tuple[int, dict[str, int]]:
    decoded = TopicPartitionMetadata.decode(text)
    return decoded.partition_time, dict(decoded.processor_metadata)


@settings(max_examples=150, deadline=None)
@given(partition_time=longs, puts=entries)
def test_both_write_the_same_string_and_read_each_others(kafka_streams: _KafkaStreams, partition_time: int,
                                                          puts: list[tuple[str, int]]) -> None:
    ours = TopicPartitionMetadata(partition_time, dict(puts)).encode()
    theirs = kafka_streams.encode(partition_time, puts)
    assert kafka_streams.decode(ours) == (partition_time, dict(puts))  # Kafka Streams reads ours
    assert _ours(theirs) == (partition_time, dict(puts))  # we read theirs
    assert ours == theirs  # the same bytes, entries in java.util.HashMap order included


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


_LONG = struct.Struct(">q")
ODD_STRINGS = [
    "",
    '{"stream_time":5,"partition_times":{"in:0":5},"processors":{}}',  # the Spark engine's JSON before issue 23
    "not base64 at all",
    "A",
    "AgAAAAAAAAAK",  # no padding needed
    "AgAAAAAAAAAKAA",  # missing padding
    "AgAAAAAAAAAKAA=",  # incomplete padding
    "AgAAAAAAAAAKAA==AA==",  # data after padding
    _b64(b""),
    _b64(b"\x01" + _LONG.pack(123)),
    _b64(b"\x01" + _LONG.pack(123) + b"trailing bytes"),
    _b64(b"\x01" + b"\x00" * 3),
    _b64(b"\x00" + _LONG.pack(5)),
    _b64(b"\x03" + _LONG.pack(5)),
    _b64(b"\xfe" + _LONG.pack(5)),
    _b64(b"\x02" + _LONG.pack(-1)),
    _b64(b"\x02" + _LONG.pack(77) + struct.pack(">i", 0)),
    _b64(b"\x02" + _LONG.pack(77) + struct.pack(">i", 1)),
    _b64(b"\x02" + _LONG.pack(77) + struct.pack(">i", -3)),
    _b64(b"\x02" + _LONG.pack(77) + struct.pack(">i", 1) + struct.pack(">i", 1) + b"k" + _LONG.pack(8) + b"junk"),
    _b64(b"\x02" + _LONG.pack(77) + struct.pack(">i", 2) + struct.pack(">i", 1) + b"k" + _LONG.pack(8)
         + struct.pack(">i", 1) + b"k" + _LONG.pack(3)),  # a repeated key: the last value wins
    _b64(b"\x02" + _LONG.pack(77) + struct.pack(">i", 1) + struct.pack(">i", -1) + _LONG.pack(8)),
    _b64(b"\x02" + _LONG.pack(77) + struct.pack(">i", 1) + struct.pack(">i", 9) + b"k" + _LONG.pack(8)),
    _b64(b"\x02" + _LONG.pack(77) + struct.pack(">i", 1) + struct.pack(">i", 1) + b"k" + b"\x00" * 7),
]


@pytest.mark.parametrize("text", ODD_STRINGS)
def test_odd_strings_read_alike(kafka_streams: _KafkaStreams, text: str) -> None:
    assert _ours(text) == kafka_streams.decode(text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=60))
def test_arbitrary_bytes_read_alike(kafka_streams: _KafkaStreams, raw: bytes) -> None:
    text = _b64(raw)
    assert _ours(text) == kafka_streams.decode(text)
