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
