"""streamlet's model of a Java `HashSet<Bytes>`'s iteration order (the order a suppression buffer writes its
changelog in at each flush) against a real one: tests/java/streams4 `HashSetOrderCheck` adds the same keys to a
`HashSet<Bytes>` on the JDK, prints its order at each flush and clears it, as Kafka Streams' buffer does.

Keys are drawn to reach every rule of the JDK's table: random ones, and families of keys with one hash code
(blocks `Aa` and `BB` hash alike, so any sequence of them does), which fill one bucket until it doubles the table
and then turns into a red-black tree; several flushes per set, so a table keeps the capacity earlier flushes
left it.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.stores.suppression import java_hash_order
from streamlet.stores.suppression.java_hash_order import JavaHashSetOrder, java_bytes_hash
from tests.streams4_java import run_check

Flushes = list[list[bytes]]


def _hex(key: bytes) -> str:
    return key.hex() or "_"


def _java_orders(cases: list[Flushes]) -> list[list[bytes]]:
    """Each flush's order, as the JDK's HashSet<Bytes> iterates it."""
    stdin = "".join(f"c{i} " + " ".join(" ".join([*map(_hex, flush), "|"]) for flush in flushes) + "\n"
                    for i, flushes in enumerate(cases))
    orders = []
    for line in run_check("HashSetOrderCheck", stdin).splitlines():
        orders.append([b"" if word == "_" else bytes.fromhex(word) for word in line.split(" ")[1:]])
    return orders


def _streamlet_orders(cases: list[Flushes]) -> list[list[bytes]]:
    orders = []
    for flushes in cases:
        model = JavaHashSetOrder()
        for flush in flushes:
            orders.append(model.order(dict.fromkeys(flush)))  # first additions only, as the buffer keeps them
    return orders


def _colliding(prefix: bytes, blocks: int, index: int, suffix: bytes) -> bytes:
    """The `index`-th of the 2**`blocks` keys `prefix` + `Aa`/`BB` blocks + `suffix`, which share one hash."""
    return prefix + b"".join(b"BB" if index >> bit & 1 else b"Aa" for bit in range(blocks)) + suffix


_keys = st.one_of(
    st.binary(max_size=8),
    st.builds(_colliding, st.sampled_from([b"", b"k"]), st.integers(1, 5), st.integers(0, 31),
              st.sampled_from([b"", b"\x40", b"\x80"])),
    st.builds(_colliding, st.just(b"\xff\x80"), st.just(5), st.integers(0, 31), st.just(b"")),  # one hash
)
_cases = st.lists(st.lists(st.lists(_keys, max_size=80), min_size=1, max_size=4), min_size=20, max_size=20)


def test_the_hash_is_arrays_hash_code_spread() -> None:
    # Arrays.hashCode: 31 * (31 * 1 + 97) + 98 = 4066 for "ab"; spread: the upper half is 0
    assert java_bytes_hash(b"ab") == 4066
    assert java_bytes_hash(b"") == 1
    assert java_bytes_hash(b"Aa") == java_bytes_hash(b"BB")
    assert java_bytes_hash(b"\xff") == (31 - 1)  # a byte is signed in Java


@settings(max_examples=12)
@given(_cases)
def test_drawn_keys_iterate_in_the_jdk_hash_set_order(cases: list[Flushes]) -> None:
    assert _streamlet_orders(cases) == _java_orders(cases)


def test_big_sets_with_tree_bins_iterate_in_the_jdk_hash_set_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hundreds of keys and a family of 64 keys of one hash: tables of 1024 buckets, bins that become trees,
    trees split by a doubling (back to chains, or into new trees), then flushes of a few keys into a big table."""
    trees = []
    real = java_hash_order._TreeBin.__init__

    def counting(self: java_hash_order._TreeBin, chain: list[java_hash_order._Node]) -> None:
        trees.append(len(chain))
        real(self, chain)

    monkeypatch.setattr(java_hash_order._TreeBin, "__init__", counting)
    rng = random.Random(4411)
    cases: list[Flushes] = []
    for _ in range(12):
        flushes = []
        for size in (rng.randint(0, 12), rng.randint(0, 700), rng.randint(0, 40), rng.randint(0, 300)):
            family = [_colliding(b"k", 6, i, rng.choice([b"", b"\x40"])) for i in rng.sample(range(64), 40)]
            randoms = [rng.randbytes(rng.randint(0, 6)) for _ in range(size)]
            keys = family + randoms
            rng.shuffle(keys)
            flushes.append(keys)
        cases.append(flushes)
        # 7 + 7 keys in one bucket of 64 (two hashes 64 apart): a tree that the next doubling splits 7 / 7
        halves = [_colliding(b"k", 5, i, suffix) for suffix in (b"\x00", b"\x40") for i in rng.sample(range(32), 7)]
        rng.shuffle(halves)
        cases.append([halves + [rng.randbytes(3) for _ in range(40)]])
    assert _streamlet_orders(cases) == _java_orders(cases)
    assert trees and max(trees) > 8  # the model built tree bins, so the comparison covered them
