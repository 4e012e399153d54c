"""The key-value store over Spark's state keeps its entries in pages (`streamlet.stores.spark.keyvalue`):
it reads and writes like a dict across batches, splits pages as it grows, makes a state call per page
rather than per key, and moves a store of the older one-entry-per-key layout into pages."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.stores.spark import keyvalue as pages
from streamlet.stores.spark.keyvalue import SparkKeyValueBytesStore, SparkStateLayoutError, decode_page, encode_page


class _State:
    """One store's slice of Spark's state, in a dict, counting the calls made to it."""

    def __init__(self) -> None:
        self.entries: dict[bytes, bytes] = {}
        self.meta_entry: bytes | None = None
        self.gets = self.scans = self.writes = 0

    def get(self, key: bytes) -> bytes | None:
        self.gets += 1
        return self.entries.get(key)

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        self.scans += 1
        return iter(list(self.entries.items()))

    def write(self, changes: Mapping[bytes, bytes | None]) -> None:
        for key, value in changes.items():
            self.writes += 1
            if value is None:
                self.entries.pop(key, None)
            else:
                self.entries[key] = value

    def meta(self) -> bytes | None:
        return self.meta_entry

    def set_meta(self, data: bytes) -> None:
        self.meta_entry = data


_keys = st.binary(min_size=0, max_size=6)
_ops = st.lists(st.tuples(_keys, st.one_of(st.none(), st.binary(max_size=4))), max_size=60)


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(_ops, max_size=6), lookups=st.lists(_keys, max_size=10))
def test_it_holds_what_a_dict_holds_across_batches_and_page_splits(
        batches: list[list[tuple[bytes, bytes | None]]], lookups: list[bytes]) -> None:
    state, model = _State(), {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pages, "PAGE_ENTRIES", 2)  # a split every few entries
        for batch in batches:
            store = SparkKeyValueBytesStore("s", state)
            for key, value in batch:
                store.put(key, value)
                if value is None:
                    model.pop(key, None)
                else:
                    model[key] = value
                assert store.get(key) == value
            store.flush()
            store.close()
            store = SparkKeyValueBytesStore("s", state)  # the next batch reads what Spark holds
            for key in lookups:
                assert store.get(key) == model.get(key)
            assert list(store.all()) == sorted(model.items())
            assert store.approximate_num_entries() == len(model)
            store.close()


def test_a_batch_makes_a_state_call_per_page_not_per_key() -> None:
    state = _State()
    keys = [f"word-{i}".encode() for i in range(3_000)]
    for _ in range(2):
        store = SparkKeyValueBytesStore("counts", state)
        state.gets = state.writes = 0
        for key in keys:
            store.put(key, struct.pack(">q", int.from_bytes(store.get(key) or bytes(8), "big") + 1))
        store.flush()
        store.close()
    pages_held = len(state.entries)
    assert 3_000 // pages.PAGE_ENTRIES <= pages_held <= 2 * 3_000 // pages.PAGE_ENTRIES
    assert state.gets <= pages_held and state.writes == pages_held  # the second batch: every page once
    store = SparkKeyValueBytesStore("counts", state)
    assert store.get(b"word-7") == struct.pack(">q", 2)


def test_a_store_of_the_layout_before_pages_is_moved_into_pages() -> None:
    state = _State()
    old = {f"k{i}".encode(): f"v{i}".encode() for i in range(600)}
    old[b"\x00\x00\x00\x00"] = b"a key that looks like page 0's"
    state.entries = dict(old)
    state.meta_entry = struct.pack(">qq", len(old), 40)  # the older meta: (entries, keys last looked up)
    store = SparkKeyValueBytesStore("s", state)
    assert store.get(b"k5") == b"v5"
    assert dict(store.all()) == old
    store.close()
    assert all(len(key) == 4 for key in state.entries)  # only pages are left
    store = SparkKeyValueBytesStore("s", state)
    assert dict(store.all()) == old and store.approximate_num_entries() == len(old)


def test_pages_round_trip_and_a_damaged_page_is_a_clear_error() -> None:
    page = {b"": b"", b"a": bytes(range(256)), bytes(300): b"x"}
    assert decode_page(encode_page(page)) == page
    assert decode_page(encode_page({})) == {}
    with pytest.raises(SparkStateLayoutError):
        decode_page(encode_page(page)[:-1])
    with pytest.raises(SparkStateLayoutError):
        decode_page(b"\x01")
    state = _State()
    state.meta_entry = b"\x09" * 25
    with pytest.raises(SparkStateLayoutError):
        SparkKeyValueBytesStore("s", state).get(b"k")
