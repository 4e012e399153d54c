"""Grouping keys that give every task a Spark partition of its own.

`transformWithState` places a group in shuffle partition `pmod(murmur3(key, seed 42), n)`. Grouping by
the Kafka partition number itself lets several tasks share one Spark task while others idle (measured:
three of four in one). Since the hash is known, each task p instead gets the smallest non-negative
int whose bucket is p, with as many shuffle partitions as tasks: task p runs in Spark partition p.
"""

from __future__ import annotations

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_MASK = 0xFFFFFFFF
SPARK_HASH_SEED = 42


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def spark_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's `hash()` of an IntegerType value (Murmur3 x86 32-bit, one 4-byte block), as a signed int."""
    k1 = _rotl((value & _MASK) * _C1 & _MASK, 15) * _C2 & _MASK
    h1 = _rotl(seed ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def task_keys(tasks: int) -> list[int]:
    """keys[p]: the grouping key of task p, which Spark hashes into shuffle partition p of `tasks`."""
    keys: dict[int, int] = {}
    candidate = 0
    while len(keys) < tasks:
        bucket = spark_hash_int(candidate) % tasks
        keys.setdefault(bucket, candidate)
        candidate += 1
    return [keys[p] for p in range(tasks)]
