"""The commit metadata codec on its own: Kafka Streams' layout, its tolerant reading, and the size guard.
Byte-level agreement with Kafka Streams itself is test_commit_metadata_java.py's."""

from __future__ import annotations

import base64
import logging
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamlet.kafka import commit_metadata as cm
from streamlet.kafka.commit_metadata import TopicPartitionMetadata

longs = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
keys = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
maps = st.dictionaries(keys, longs, max_size=12)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_layout_is_version_time_then_entries() -> None:
    text = TopicPartitionMetadata(59_000, {"counts-store": 50_000}).encode()
    raw = base64.b64decode(text)
    assert raw == (b"\x02" + struct.pack(">q", 59_000) + struct.pack(">i", 1) + struct.pack(">i", 12)
                   + b"counts-store" + struct.pack(">q", 50_000))
    assert base64.b64decode(TopicPartitionMetadata(7, {}).encode()) == b"\x02" + struct.pack(">q", 7)


@given(longs, maps)
def test_round_trip(partition_time: int, entries: dict[str, int]) -> None:
    decoded = TopicPartitionMetadata.decode(TopicPartitionMetadata(partition_time, entries).encode())
    assert decoded == TopicPartitionMetadata(partition_time, entries)


def test_version_1_has_a_partition_time_only() -> None:
    assert TopicPartitionMetadata.decode(_b64(b"\x01" + struct.pack(">q", 42) + b"ignored")) == \
        TopicPartitionMetadata(42, {})


@pytest.mark.parametrize("text", [
    "",
    '{"stream_time": 5, "partition_times": {"in:0": 5}}',  # the Spark engine's JSON before issue 23
    "not base64!",
    "A",  # one character cannot be base64
    _b64(b""),
    _b64(b"\x03" + struct.pack(">q", 1)),  # a future version
    _b64(b"\xff" + struct.pack(">q", 1)),
    _b64(b"\x02" + b"\x00" * 7),  # too short for the partition time
])
def test_unreadable_strings_are_no_metadata(text: str) -> None:
    assert TopicPartitionMetadata.decode(text, "t-0") == TopicPartitionMetadata(-1, {})


@pytest.mark.parametrize("tail", [
    struct.pack(">i", 1),  # one entry announced, none there
    struct.pack(">i", -1),
    struct.pack(">i", 1) + struct.pack(">i", 50) + b"short" + struct.pack(">q", 1),
    struct.pack(">i", 1) + struct.pack(">i", 1) + b"k" + b"\x00" * 3,  # value cut short
])
def test_unreadable_processor_metadata_keeps_the_partition_time(tail: bytes) -> None:
    assert TopicPartitionMetadata.decode(_b64(b"\x02" + struct.pack(">q", 9) + tail)) == TopicPartitionMetadata(9, {})


def test_missing_padding_is_accepted_as_java_does() -> None:
    text = TopicPartitionMetadata(5, {"a": 1}).encode()
    assert text.endswith("=")
    assert TopicPartitionMetadata.decode(text.rstrip("=")) == TopicPartitionMetadata(5, {"a": 1})


def test_an_unreadable_string_is_logged_once_per_partition(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=cm.__name__):
        for _ in range(3):
            TopicPartitionMetadata.decode("{json}", "once-topic-0")
        TopicPartitionMetadata.decode("{json}", "once-topic-1")
    assert [r.getMessage().split(" is ")[0] for r in caplog.records] == [
        "the committed offset metadata of once-topic-0", "the committed offset metadata of once-topic-1"]


def test_values_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="64 bits"):
        TopicPartitionMetadata(1 << 63, {}).encode()
    with pytest.raises(ValueError, match="64 bits"):
        TopicPartitionMetadata(0, {"k": -(1 << 63) - 1}).encode()


def test_merge_keeps_the_larger_value_per_key() -> None:
    merged = {"a": 5, "b": 1}
    cm.merge_processor_metadata(merged, {"a": 3, "b": 4, "c": -7})
    assert merged == {"a": 5, "b": 4, "c": -7}


def test_java_hashmap_order() -> None:
    # String.hashCode: "a" = 97, "b" = 98 -> buckets 1 and 2 of 16; "zz" = 122 * 31 + 122 = 3904 -> bucket 0.
    assert cm.java_hashmap_order(["b", "a", "zz"]) == ["zz", "a", "b"]
    # 13 keys grow the table to 32 buckets: "q" (113) lands in bucket 17, after "a" (97, bucket 1).
    assert cm.java_hashmap_order([*(f"k{i}" for i in range(11)), "q", "a"]).index("q") > \
        cm.java_hashmap_order([*(f"k{i}" for i in range(11)), "q", "a"]).index("a")


def test_fit_to_limit_drops_streamlet_entries_first_then_all_metadata() -> None:
    kafka_streams = {f"store-{i}": i for i in range(3)}
    extras = {f"{cm.STREAMLET_KEY_PREFIX}wall-punctuation:{i}": i for i in range(200)}
    meta = TopicPartitionMetadata(10, {**kafka_streams, **extras})
    assert len(meta.encode()) > cm.METADATA_LIMIT
    assert TopicPartitionMetadata.decode(cm.fit_to_limit(meta)) == TopicPartitionMetadata(10, kafka_streams)
    huge = TopicPartitionMetadata(10, {f"store-{i:04}-{'x' * 30}": i for i in range(200)})
    assert TopicPartitionMetadata.decode(cm.fit_to_limit(huge, where="t-0")) == TopicPartitionMetadata(10, {})
    small = TopicPartitionMetadata(10, {"s": 1})
    assert cm.fit_to_limit(small) == small.encode()
