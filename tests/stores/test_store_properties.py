"""Properties: any sequence of operations gives what a plain dict gives, the flush listener's stream
is a consistent change stream, and the changelog replayed into a fresh store rebuilds the store."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlet.serdes import Serdes
from tests.stores.conftest import build_store
from tests.stores.context import RecordingStateStoreContext

keys = st.integers(min_value=-4, max_value=4) | st.sampled_from([2**31 - 1, -(2**31), 256])
values = st.text(max_size=6)
bound = st.none() | keys
operation = st.one_of(
    st.tuples(st.just("put"), keys, values),
    st.tuples(st.just("put"), keys, st.none()),
    st.tuples(st.just("put_if_absent"), keys, values),
    st.tuples(st.just("delete"), keys, st.none()),
    st.tuples(st.just("get"), keys, st.none()),
    st.tuples(st.just("range"), bound, bound),
    st.tuples(st.just("put_all"), st.lists(st.tuples(keys, st.none() | values), max_size=4), st.none()),
    st.tuples(st.just("flush"), st.none(), st.none()),
)

CONFIGS = {
    # name: (backend, caching on the builder)
    "leveldb-cached-logged": ("leveldb", True),
    "memory-cached-logged": ("memory", True),
    "memory-uncached-logged": ("memory", False),
}


def key_bytes(key: int) -> bytes:
    return struct.pack(">i", key)


def model_range(model: dict[int, str], low: int | None, high: int | None) -> list[tuple[int, str]]:
    lo = None if low is None else key_bytes(low)
    hi = None if high is None else key_bytes(high)
    return sorted(
        ((k, v) for k, v in model.items()
         if (lo is None or key_bytes(k) >= lo) and (hi is None or key_bytes(k) <= hi)),
        key=lambda kv: key_bytes(kv[0]),
    )


@pytest.mark.parametrize("config", sorted(CONFIGS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operation, max_size=60), budget=st.sampled_from([0, 150, 400, 1 << 20]))
def test_store_behaves_like_a_dict_and_its_changelog_rebuilds_it(
    config: str, ops: list[tuple[str, Any, Any]], budget: int
) -> None:
    backend, caching = CONFIGS[config]
    with tempfile.TemporaryDirectory() as tmp:
        context = RecordingStateStoreContext(Path(tmp) / "task", cache_budget=budget)
        store = build_store(backend, context, key_serde=Serdes.Integer, value_serde=Serdes.String,
                            cached=caching)
        forwarded: list[tuple[int, str | None, str | None]] = []
        listening = store.set_flush_listener(lambda k, new, old, ts, headers: forwarded.append((k, new, old)), True)
        assert listening is (caching and budget > 0)
        model: dict[int, str] = {}
        for step, (op, a, b) in enumerate(ops):
            context.at(step, offset=step)
            if op == "put":
                store.put(a, b)
                if b is None:
                    model.pop(a, None)
                else:
                    model[a] = b
            elif op == "put_if_absent":
                assert store.put_if_absent(a, b) == model.get(a)
                model.setdefault(a, b)
            elif op == "delete":
                assert store.delete(a) == model.pop(a, None)
            elif op == "get":
                assert store.get(a) == model.get(a)
            elif op == "range":
                with store.range(a, b) as it:
                    assert [(kv.key, kv.value) for kv in it] == model_range(model, a, b)
            elif op == "put_all":
                store.put_all(a)
                for k, v in a:
                    if v is None:
                        model.pop(k, None)
                    else:
                        model[k] = v
            else:
                store.flush()
        with store.all() as it:
            assert [(kv.key, kv.value) for kv in it] == model_range(model, None, None)
        assert store.approximate_num_entries() == len(model)
        store.flush()

        # The forwarded updates chain: each old value is the previous new value of that key.
        last: dict[int, str | None] = {}
        for k, new, old in forwarded:
            assert old == last.get(k)
            last[k] = new
        if listening:
            assert {k: v for k, v in last.items() if v is not None} == model

        # Replaying the changelog into a fresh store of the same kind rebuilds the same contents.
        fresh_context = RecordingStateStoreContext(Path(tmp) / "fresh")
        fresh = build_store(backend, fresh_context, key_serde=Serdes.Integer, value_serde=Serdes.String)
        fresh_context.restore("store", context.changelog_entries("store"), batch_size=5)
        with fresh.all() as it:
            assert [(kv.key, kv.value) for kv in it] == model_range(model, None, None)
        store.close()
        fresh.close()
