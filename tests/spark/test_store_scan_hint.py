"""A key-value store over Spark's state reads a small store whole at the first single read of a batch
when the batch before looked up enough of it (see `streamlet.stores.spark.store`)."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping

from streamlet.stores.spark.store import SparkKeyValueBytesStore


class _State:
    """Spark's state for one store, in a dict, counting the calls the store makes."""

    def __init__(self) -> None:
        self.entries: dict[bytes, bytes] = {}
        self.meta_entry: bytes | None = None
        self.gets = 0
        self.scans = 0

    def get(self, key: bytes) -> bytes | None:
        self.gets += 1
        return self.entries.get(key)

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        self.scans += 1
        return iter(list(self.entries.items()))

    def write(self, changes: Mapping[bytes, bytes | None]) -> None:
        for key, value in changes.items():
            if value is None:
                self.entries.pop(key, None)
            else:
                self.entries[key] = value

    def meta(self) -> bytes | None:
        return self.meta_entry

    def set_meta(self, data: bytes) -> None:
        self.meta_entry = data


def _batch(state: _State, keys: list[bytes], scan_after: int = 8) -> dict[bytes, bytes | None]:
    """One task's batch: every key read and incremented, then flushed; returns what was read."""
    store = SparkKeyValueBytesStore("counts", state, scan_after)
    seen: dict[bytes, bytes | None] = {}
    for key in keys:
        value = seen[key] = store.get(key)
        store.put(key, str(int(value or b"0") + 1).encode())
    store.flush()
    store.close()
    return seen


def test_a_batch_after_one_that_read_most_keys_scans_at_its_first_read() -> None:
    state = _State()
    keys = [f"w{i}".encode() for i in range(40)]
    _batch(state, keys)
    assert (state.gets, state.scans) == (8, 1)  # the rule within the batch: 8 single reads, then a scan
    state.gets = state.scans = 0
    read = _batch(state, keys)
    assert (state.gets, state.scans) == (0, 1)
    assert read == dict.fromkeys(keys, b"1")
    assert state.entries == dict.fromkeys(keys, b"2")


def test_a_batch_after_one_that_read_few_keys_reads_them_one_by_one() -> None:
    state = _State()
    _batch(state, [f"w{i}".encode() for i in range(40)])
    _batch(state, [b"w1", b"w2"])  # below scan_after: nothing to go by
    state.gets = state.scans = 0
    read = _batch(state, [b"w3", b"w4", b"w5"])
    assert (state.gets, state.scans) == (3, 0)
    assert read == {b"w3": b"1", b"w4": b"1", b"w5": b"1"}


def test_a_store_much_larger_than_the_last_batch_s_lookups_is_read_key_by_key() -> None:
    state = _State()
    _batch(state, [f"w{i}".encode() for i in range(100)], scan_after=100)  # 100 single reads, no scan
    state.gets = state.scans = 0
    _batch(state, [f"x{i}".encode() for i in range(10)], scan_after=8)  # 100 entries > 4 x 10 looked up
    state.gets = state.scans = 0
    _batch(state, [b"w1"], scan_after=8)
    assert (state.gets, state.scans) == (1, 0)


def test_a_meta_entry_holding_the_count_only_is_read() -> None:
    state = _State()
    state.entries = {f"w{i}".encode(): b"5" for i in range(20)}
    state.meta_entry = struct.pack(">q", 20)
    read = _batch(state, [b"w1", b"new"])
    assert read == {b"w1": b"5", b"new": None}
    assert struct.unpack(">qq", state.meta_entry) == (21, 2)
