"""Store timing: once the metrics wrap a typed store's access layer, its reads and writes go through the wrapper,
also for a store with a record cache (which the typed store otherwise calls directly when compiled)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from streamlet.metrics.store_timing import instrument_task
from streamlet.stores.api import ValueAndTimestamp
from tests.stores.conftest import build_store
from tests.stores.context import RecordingStateStoreContext


@pytest.mark.parametrize("timestamped", [False, True])
@pytest.mark.parametrize("backend", ["memory", "leveldb"])
def test_a_cached_stores_gets_and_puts_are_counted_once_wrapped(tmp_path: Path, backend: str,
                                                                 timestamped: bool) -> None:
    context = RecordingStateStoreContext(tmp_path / "task", cache_budget=1 << 20)
    store = build_store(backend, context, cached=True, timestamped=timestamped)
    context.at(10, offset=1)
    store.put("before", ValueAndTimestamp(1, 10) if timestamped else 1)  # not counted: not wrapped yet
    ((_kind, counters),) = instrument_task(SimpleNamespace(stores={"store": store})).values()

    first, second = (ValueAndTimestamp(1, 10), ValueAndTimestamp(2, 10)) if timestamped else (1, 2)
    assert store.get("a") is None
    store.put("a", first)
    assert store.get("a") == first
    store.put("a", second)
    assert store.get("a") == second
    assert store.get("before") is not None

    assert (counters.puts, counters.gets) == (2, 4)
    assert (counters.cache_hits, counters.cache_misses) == (3, 1)
