"""The partitioner against vectors produced by the real Java client (tests/java/vectors, kafka-clients 3.9.1)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamlet import partitioner
from streamlet.partitioner import NullKeyPartitioner, default_partition, murmur2, to_positive

VECTORS_PATH = Path(__file__).with_name("murmur2_vectors.json")
FIXTURE: dict[str, Any] = json.loads(VECTORS_PATH.read_text())
VECTORS: list[dict[str, Any]] = FIXTURE["vectors"]
PARTITION_COUNTS: list[int] = FIXTURE["partition_counts"]


def _key(vector: dict[str, Any]) -> bytes:
    return bytes.fromhex(vector["key_hex"])


def test_fixture_covers_the_interesting_keys() -> None:
    lengths = {len(_key(v)) for v in VECTORS}
    assert set(range(18)) <= lengths  # empty and every tail length over several words
    assert max(lengths) >= 60  # random keys spanning many words
    assert any(v["murmur2"] < 0 for v in VECTORS) and any(v["murmur2"] > 0 for v in VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["key_hex"][:24] or "empty")
def test_murmur2_matches_java(vector: dict[str, Any]) -> None:
    assert murmur2(_key(vector)) == vector["murmur2"]
    assert to_positive(vector["murmur2"]) == vector["to_positive"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["key_hex"][:24] or "empty")
def test_default_partition_matches_java_producer(vector: dict[str, Any]) -> None:
    key = _key(vector)
    for _ in range(2):  # second round is served by the memo table for short keys
        got = [default_partition(key, n) for n in PARTITION_COUNTS]
        assert got == vector["partitions"]
    assert [default_partition(bytearray(key), n) for n in PARTITION_COUNTS] == vector["partitions"]


def test_keys_longer_than_the_precompiled_unpackers() -> None:
    """Keys of 256+ bytes take the uncached struct path; they must agree with a plain reference."""
    rng = random.Random(7)
    for length in (255, 256, 257, 1000, 4099):
        key = rng.randbytes(length)
        assert murmur2(key) == _reference_murmur2(key)
        assert default_partition(key, 12) == to_positive(_reference_murmur2(key)) % 12


@given(st.binary(max_size=300))
def test_agrees_with_a_straightforward_transcription(data: bytes) -> None:
    """Guards the fast path's algebra (merged masks, word unpacking) on arbitrary keys."""
    assert murmur2(data) == _reference_murmur2(data)
    assert -(2**31) <= murmur2(data) < 2**31


def test_to_positive_clears_only_the_sign_bit() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


def test_memo_table_stays_bounded() -> None:
    rng = random.Random(3)
    for _ in range(partitioner._MEMO_MAX_ENTRIES + 10):
        default_partition(rng.randbytes(12), 7)
    assert len(partitioner._positive_hash_memo) <= partitioner._MEMO_MAX_ENTRIES


def test_null_key_partitioner_sticks_then_rotates_over_every_partition() -> None:
    p = NullKeyPartitioner(records_per_partition=3, rng=random.Random(1))
    picks = [p.partition("t", 4) for _ in range(24)]
    runs = [picks[i : i + 3] for i in range(0, 24, 3)]
    assert all(len(set(run)) == 1 for run in runs)
    assert [run[0] for run in runs[1:]] == [(r[0] + 1) % 4 for r in runs[:-1]]
    assert Counter(picks) == dict.fromkeys(range(4), 6)


def test_null_key_partitioner_follows_a_shrinking_partition_count() -> None:
    p = NullKeyPartitioner(records_per_partition=1, rng=random.Random(2))
    for _ in range(10):
        p.partition("t", 8)
    assert all(0 <= p.partition("t", 2) < 2 for _ in range(10))


def _reference_murmur2(data: bytes) -> int:
    """A line-by-line reading of the published murmur2 (32-bit, seed 0x9747b28c), kept slow and simple."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    tail = data[length - length % 4 :]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - 2**32 if h >= 2**31 else h
