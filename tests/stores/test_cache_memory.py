"""The record cache's real memory stays within 1.5 times `statestore.cache.max.bytes`.

A cached store is filled far past its budget (so it evicts and stays full) with many small entries and a
few big ones, each written by a record of its own (its own record context, as in a running task), and
the Python memory allocated meanwhile (tracemalloc) is compared with the budget. The store below is
LevelDB, whose memory is its C library's and not traced, with logging off, so what is traced is what the
cache holds: its entries, their keys (bytes and deserialized), values and record contexts.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamlet.serdes import Serdes
from streamlet.stores.api import RecordContext
from streamlet.stores.keyvalue.caching import CachedAccess
from tests.stores.conftest import build_store
from tests.stores.context import RecordingStateStoreContext

BUDGET = 2_000_000


class QuietContext(RecordingStateStoreContext):
    """The recording context without its record of context changes (a list holding every record's)."""

    def set_record_context(self, context: RecordContext) -> None:
        self.current = context


CASES: dict[str, tuple[Any, Callable[[int], str], Callable[[int], Any], Callable[[int], Any]]] = {
    # key serde, key, small value, big value (every 2,000th record)
    "short keys, counts": (Serdes.Long, lambda i: f"k{i:08d}", lambda i: i, lambda i: i),
    "long keys, counts": (Serdes.Long, lambda i: f"key-{i:036d}", lambda i: i, lambda i: i),
    "short strings, a few 40 KB ones": (Serdes.String, lambda i: f"k{i:08d}", lambda i: f"v{i}",
                                        lambda i: "x" * 40_000 + str(i)),
    "300-byte values, a few 100 KB ones": (Serdes.Bytes, lambda i: f"k{i:08d}", lambda i: b"v" * 300,
                                           lambda i: b"y" * 100_000),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_full_cache_holds_at_most_one_and_a_half_times_its_budget(tmp_path: Path, case: str) -> None:
    value_serde, key, small, big = CASES[case]
    context = QuietContext(tmp_path, cache_budget=BUDGET)
    store = build_store("leveldb", context, cached=True, logging=False, key_serde=Serdes.String,
                        value_serde=value_serde)
    access = store._access
    assert isinstance(access, CachedAccess)
    cache = access._cache
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(60_000):
            context.at(i, offset=i)
            store.put(key(i), big(i) if i % 2_000 == 0 else small(i))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.size_bytes > 0.9 * BUDGET, "the cache is not full: the test measures nothing"
    assert len(cache) > 1_000
    assert held <= 1.5 * BUDGET, f"{case}: {held:,} bytes held by a cache of {BUDGET:,} ({held / BUDGET:.2f}x)"
    store.close()
