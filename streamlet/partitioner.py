"""Java-compatible default partitioning: Kafka's murmur2 of the serialized key.

Records that streamlet writes must land where a Java producer would put them, so that its topics
co-partition with topics written by Java (and Kafka Streams) applications: a keyed record goes to
`toPositive(murmur2(key)) % numPartitions`, exactly as the Java client computes it. The test vectors in
tests/murmur2_vectors.json come from the real Java client (tests/java/vectors).

This runs once per produced record, and at millions of distinct keys no table of known hashes helps, so
the module is compiled with mypyc (`streamlet._compiled.HOT_MODULES`) and the hash runs on native 64-bit
ints. Run as pure Python (`STREAMLET_PURE_PYTHON=1`), `default_partition` memoizes the hash of short keys
in a bounded table instead, since keys repeat a lot in stream processing (the same user, the same word).
"""

from __future__ import annotations

import random
from typing import Final

from mypy_extensions import i64

from streamlet._compiled import COMPILED

_M: Final = 0x5BD1E995
_MASK: Final = 0xFFFFFFFF
_SEED: Final = 0x9747B28C


def _murmur2_unsigned(data: bytes) -> int:
    """murmur2 as an unsigned 32-bit int (the bit pattern of Java's `int` result).

    Written for mypyc's native 64-bit ints (`i64`): every product is of two values below 2**32 and
    2**31, so it fits in 63 bits and no step overflows; each is masked back to 32 bits at once.
    Compiled, a key is hashed without allocating anything (no word tuple, no big ints)."""
    length: i64 = len(data)
    h: i64 = _SEED ^ length
    end: i64 = length & ~3
    i: i64 = 0
    while i < end:
        k: i64 = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        # (a ^ b) & mask == (a & mask) ^ (b & mask): one mask covers both products.
        h = ((h * _M) ^ ((k ^ (k >> 24)) * _M)) & _MASK
        i += 4
    rem = length & 3
    if rem == 1:
        h = ((h ^ data[i]) * _M) & _MASK
    elif rem == 2:
        h = ((h ^ data[i] ^ (data[i + 1] << 8)) * _M) & _MASK
    elif rem == 3:
        h = ((h ^ data[i] ^ (data[i + 1] << 8) ^ (data[i + 2] << 16)) * _M) & _MASK
    h = ((h ^ (h >> 13)) * _M) & _MASK
    return h ^ (h >> 15)


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: 32-bit murmur2 with seed 0x9747b28c, returned as a signed int like Java's."""
    h = _murmur2_unsigned(data)
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's `Utils.toPositive`: clear the sign bit (not abs), so -1 maps to 0x7fffffff."""
    return n & 0x7FFFFFFF


_MEMO_MAX_KEY_BYTES: Final = 64
_MEMO_MAX_ENTRIES: Final = 1 << 14
_positive_hash_memo: Final[dict[bytes, int]] = {}
_MEMOIZE: Final = not COMPILED
"""Compiled, the hash costs about what a look-up in the table would: no table (it would only thrash at scale)."""


def default_partition(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition Java's default partitioner picks for a non-null serialized key.

    Pure Python, short `bytes` keys are memoized (key -> positive hash); the table is simply emptied when
    full, which bounds memory at a few MB without the per-call cost of an LRU.
    """
    if type(key) is bytes:
        if not _MEMOIZE or len(key) > _MEMO_MAX_KEY_BYTES:
            return (_murmur2_unsigned(key) & 0x7FFFFFFF) % num_partitions
        memo = _positive_hash_memo
        h = memo.get(key)
        if h is None:
            if len(memo) >= _MEMO_MAX_ENTRIES:
                memo.clear()
            h = memo[key] = _murmur2_unsigned(key) & 0x7FFFFFFF
        return h % num_partitions
    return (_murmur2_unsigned(bytes(key)) & 0x7FFFFFFF) % num_partitions


class NullKeyPartitioner:
    """Partitions for records without a key: stick to one partition for a run of records, then rotate.

    Java's producer sends null-keyed records to a "sticky" partition that changes once a batch fills,
    so batches stay large while load still spreads over all partitions. This does the same by record
    count (`records_per_partition`), starting each topic at a random partition so that many instances
    do not all begin on partition 0. Not thread-safe; one per task (or per producer loop).
    """

    def __init__(self, records_per_partition: int = 100, rng: random.Random | None = None) -> None:
        if records_per_partition < 1:
            raise ValueError("records_per_partition must be >= 1")
        self._run = records_per_partition
        self._rng = rng or random.Random()
        self._state: dict[str, list[int]] = {}  # topic -> [current partition, records left in the run]

    def partition(self, topic: str, num_partitions: int) -> int:
        state = self._state.get(topic)
        if state is None:
            state = self._state[topic] = [self._rng.randrange(num_partitions), self._run]
        if state[1] == 0:
            state[0] += 1
            state[1] = self._run
        state[1] -= 1
        state[0] %= num_partitions  # also absorbs a change in the partition count
        return state[0]
