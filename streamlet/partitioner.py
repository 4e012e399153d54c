"""Java-compatible default partitioning: Kafka's murmur2 of the serialized key.

Records that streamlet writes must land where a Java producer would put them, so that its topics
co-partition with topics written by Java (and Kafka Streams) applications: a keyed record goes to
`toPositive(murmur2(key)) % numPartitions`, exactly as the Java client computes it. The test vectors in
tests/murmur2_vectors.json come from the real Java client (tests/java/vectors).

This runs once per produced record, so the hash is written for CPython's speed: the key's 4-byte
little-endian words are unpacked in one `struct` call, masks are applied only where a 32-bit wrap
changes the result, and constants are bound as default arguments (fast locals). Keys repeat a lot in
stream processing (the same user, the same word), so `default_partition` also memoizes the hash of
short keys in a bounded table.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_SEED = 0x9747B28C

_PRECOMPILED_WORDS = 64
_UNPACK_WORDS: tuple[Callable[[bytes], tuple[int, ...]], ...] = tuple(
    struct.Struct(f"<{n}I").unpack_from for n in range(_PRECOMPILED_WORDS)
)


def _murmur2_unsigned(
    data: bytes,
    _m: int = _M,
    _mask: int = _MASK,
    _unpack: tuple[Callable[[bytes], tuple[int, ...]], ...] = _UNPACK_WORDS,
) -> int:
    """murmur2 as an unsigned 32-bit int (the bit pattern of Java's `int` result)."""
    length = len(data)
    h = _SEED ^ length
    n_words = length >> 2
    if n_words:
        words = (_unpack[n_words] if n_words < _PRECOMPILED_WORDS
                 else struct.Struct(f"<{n_words}I").unpack_from)(data)
        for k in words:
            k = (k * _m) & _mask
            # (a ^ b) & mask == (a & mask) ^ (b & mask): one mask covers both products.
            h = ((h * _m) ^ ((k ^ (k >> 24)) * _m)) & _mask
    rem = length & 3
    if rem:
        i = n_words << 2
        if rem == 1:
            h = ((h ^ data[i]) * _m) & _mask
        elif rem == 2:
            h = ((h ^ data[i] ^ (data[i + 1] << 8)) * _m) & _mask
        else:
            h = ((h ^ data[i] ^ (data[i + 1] << 8) ^ (data[i + 2] << 16)) * _m) & _mask
    h = ((h ^ (h >> 13)) * _m) & _mask
    return h ^ (h >> 15)


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: 32-bit murmur2 with seed 0x9747b28c, returned as a signed int like Java's."""
    h = _murmur2_unsigned(data)
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's `Utils.toPositive`: clear the sign bit (not abs), so -1 maps to 0x7fffffff."""
    return n & 0x7FFFFFFF


_MEMO_MAX_KEY_BYTES = 64
_MEMO_MAX_ENTRIES = 1 << 14
_positive_hash_memo: dict[bytes, int] = {}


def default_partition(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition Java's default partitioner picks for a non-null serialized key.

    Short `bytes` keys are memoized (key -> positive hash); the table is simply emptied when full,
    which bounds memory at a few MB without the per-call cost of an LRU.
    """
    if type(key) is bytes and len(key) <= _MEMO_MAX_KEY_BYTES:
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
