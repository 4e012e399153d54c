"""`SortedKeyIndex` against a plain sorted set, under random adds, removals and scans."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.stores.sorted_keys import SortedKeyIndex

keys = st.binary(max_size=3)
bounds = st.none() | keys
ops = st.lists(
    st.tuples(st.sampled_from(["add", "discard", "scan"]), keys, bounds, bounds), max_size=300
)


@settings(max_examples=300)
@given(ops)
def test_matches_a_sorted_set(operations: list[tuple[str, bytes, bytes | None, bytes | None]]) -> None:
    index = SortedKeyIndex()
    members: set[bytes] = set()
    for op, key, low, high in operations:
        if op == "add" and key not in members:
            index.add(key)
            members.add(key)
        elif op == "discard" and key in members:
            index.discard(key)
            members.discard(key)
        elif op == "scan":
            expected = sorted(k for k in members if (low is None or k >= low) and (high is None or k <= high))
            assert index.between(low, high) == expected
    assert index.between(None, None) == sorted(members)


def test_scans_hand_out_copies() -> None:
    index = SortedKeyIndex()
    for key in (b"b", b"a"):
        index.add(key)
    snapshot = index.between(None, None)
    index.add(b"c")
    index.discard(b"a")
    assert snapshot == [b"a", b"b"]
    assert index.between(None, None) == [b"b", b"c"]


def test_many_removals_are_purged() -> None:
    index = SortedKeyIndex()
    for i in range(1000):
        index.add(i.to_bytes(2, "big"))
    index.between(None, None)
    for i in range(0, 1000, 2):
        index.discard(i.to_bytes(2, "big"))
    assert index.between(None, None) == [i.to_bytes(2, "big") for i in range(1, 1000, 2)]
    assert len(index._removed) == 0  # white-box: removals dominated, so the list was rebuilt


class _CountedKey(bytes):
    """A key that counts its comparisons (what a scan's re-sort spends per key)."""

    comparisons = 0

    def __lt__(self, other: bytes) -> bool:
        _CountedKey.comparisons += 1
        return bytes.__lt__(self, other)


def test_a_scan_after_one_change_compares_about_log_n_keys() -> None:
    """A session aggregation's pattern: add one key, remove one, scan; a re-sort would compare every key."""
    index = SortedKeyIndex()
    members = [_CountedKey(i.to_bytes(3, "big")) for i in range(0, 20_000, 2)]
    for key in members:
        index.add(key)
    index.between(None, None)
    _CountedKey.comparisons = 0
    for i in range(1, 201, 2):
        index.add(_CountedKey(i.to_bytes(3, "big")))
        index.discard(members[i])
        index.between(members[i], members[i + 1])
    assert _CountedKey.comparisons < 100 * 60, _CountedKey.comparisons  # about 2 x 14 per change, not 10,000
    expected = sorted({*members, *(_CountedKey(i.to_bytes(3, "big")) for i in range(1, 201, 2))}
                      - {members[i] for i in range(1, 201, 2)})
    assert index.between(None, None) == expected
