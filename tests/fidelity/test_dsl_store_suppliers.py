"""`dsl.store.suppliers.class`, `default.dsl.store` and StreamJoined's own store suppliers against Kafka Streams 4.4.0.

Each case runs on both TopologyTestDriver (harness.py) and compares describe(), every record written
(output and the join stores' changelogs: their names and contents), and which stores are persistent:
the settings where Kafka Streams reads them (the application's config, or `StreamsBuilder(config)`, its
`TopologyConfig`), the join's own suppliers one side at a time and both, its own store type, and the
settings and suppliers Kafka Streams refuses (with its messages).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from tests.fidelity.harness import KafkaStreamsReference, difference, java_available
from tests.fidelity.topology import Case, Result, run_streamlet

pytestmark = pytest.mark.skipif(not java_available(), reason="the differential suite needs Java 17 and Maven")

MEM = "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers"
ROCKS = "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers"
_EVENTS = [  # (topic, key, value, timestamp): in = the left side, in3 = the right side
    ("in", "k", "a", 100), ("in3", "k", "x", 104), ("in3", "k", "y", 101), ("in", "k", "b", 108),
    ("in", "j", "q", 101), ("in3", "j", "r", 130), ("in", "k", "c", 140), ("in3", "m", "t", 300),
]
_DIFF, _GRACE = 10, 5  # the join window: size 20, retention 25


def _side(kind: str, name: str, retention: int = 2 * _DIFF + _GRACE, size: int = 2 * _DIFF,
          dup: bool = True) -> dict[str, Any]:
    return {"kind": kind, "name": name, "retention": retention, "size": size, "dup": dup}


def _case(kind: str, config: dict[str, Any] | None = None, **join: Any) -> Case:
    return {
        "config": {"cache_max_bytes": 0, **(config or {})},
        "ops": [{"op": "stream", "topic": "in"},
                {"op": "stream_join", "kind": kind, "other": [{"op": "stream", "topic": "in3"}],
                 "window": {"diff": _DIFF, "grace": _GRACE}, "fn": "pair", "name": None, "store_name": None,
                 **join},
                {"op": "group_by_key"}, {"op": "count"}, {"op": "to_stream"},
                {"op": "to", "topic": "out", "key": "string", "value": "long"}],
        "inputs": [{"topic": t, "key": k, "value": v, "ts": ts} for t, k, v, ts in _EVENTS],
        "outputs": ["out"],
        "all_topics": True,  # the stores' changelogs too
        "stores": True,
    }


_CONFIGS = {
    "none": {},
    "app suppliers in-memory": {"app": {"dsl.store.suppliers.class": MEM}},
    "app default.dsl.store in_memory (read by TopologyConfig only)": {"app": {"default.dsl.store": "in_memory"}},
    "builder default.dsl.store in_memory": {"builder": {"default.dsl.store": "in_memory"}},
    "builder suppliers in-memory": {"builder": {"dsl.store.suppliers.class": MEM}},
    "builder suppliers win over default.dsl.store": {"builder": {"dsl.store.suppliers.class": ROCKS,
                                                                 "default.dsl.store": "in_memory"}},
    "builder rocksDB over app in-memory": {"builder": {"dsl.store.suppliers.class": ROCKS},
                                           "app": {"dsl.store.suppliers.class": MEM}},
}
_JOINS: dict[str, dict[str, Any]] = {
    "no suppliers": {},
    "this side in memory": {"this_store": _side("in_memory", "mine"), "store_name": "base"},
    "other side in memory": {"other_store": _side("in_memory", "theirs"), "store_name": "base"},
    "both sides": {"this_store": _side("in_memory", "mine"), "other_store": _side("persistent", "theirs")},
    "this side persistent": {"this_store": _side("persistent", "mine")},
    "the join's own store type": {"store_type": "in_memory"},
    "own store type and a supplier": {"store_type": "rocksDB", "this_store": _side("in_memory", "mine")},
    "supplier with logging disabled": {"this_store": _side("in_memory", "mine"), "logging": False},
}


def _compared(kafka_streams: KafkaStreamsReference, cases: dict[str, Case]) -> list[Result]:
    """Run each case on both sides; fail with every difference. Kafka Streams' results, for more checks."""
    differences, results = [], []
    for label, case in cases.items():
        theirs = kafka_streams.run(case)
        assert "build_error" not in theirs, theirs["build_error"]
        report = difference(case, theirs, run_streamlet(case))
        if report is not None:
            differences.append(f"{label}:\n{report}")
        results.append(theirs)
    assert not differences, "\n\n".join(differences)
    return results


_KINDS = ["join", "left_join", "outer_join"]


@pytest.mark.parametrize("config", list(_CONFIGS), ids=list(_CONFIGS))
def test_dsl_store_settings_as_kafka_streams(kafka_streams: KafkaStreamsReference, config: str) -> None:
    _compared(kafka_streams, {f"{kind}, {join}": _case(kind, _CONFIGS[config], **_JOINS[join])
                              for kind, join in itertools.product(_KINDS, ["no suppliers", "this side in memory"])})


@pytest.mark.parametrize("join", list(_JOINS), ids=list(_JOINS))
def test_join_store_suppliers_as_kafka_streams(kafka_streams: KafkaStreamsReference, join: str) -> None:
    results = _compared(kafka_streams, {
        f"{kind}, {config}": _case(kind, _CONFIGS[config], **_JOINS[join])
        for kind, config in itertools.product(_KINDS, ["none", "app suppliers in-memory"])})
    assert all(any(r[1].endswith("-changelog") for r in theirs["records"]) for theirs in results)  # compared too
    assert any("M" in theirs["stores"].values() for theirs in results)  # each variant has an in-memory store


_REFUSED = {
    "retainDuplicates false": ({}, {"this_store": _side("in_memory", "mine", dup=False)}),
    "retention not size plus grace": ({}, {"other_store": _side("in_memory", "theirs", retention=26)}),
    "window size not the join's": ({}, {"this_store": _side("persistent", "mine", size=19)}),
    "both suppliers named alike": ({}, {"this_store": _side("in_memory", "s"), "other_store": _side("in_memory", "s")}),
    "default.dsl.store not a store type": ({"app": {"default.dsl.store": "memory"}}, {}),
    "default.dsl.store in another case": ({"builder": {"default.dsl.store": "ROCKSDB"}}, {}),
    "dsl.store.suppliers.class unknown": ({"app": {"dsl.store.suppliers.class": "foo.Bar"}}, {}),
}


@pytest.mark.parametrize("refused", list(_REFUSED), ids=list(_REFUSED))
def test_refused_as_kafka_streams(kafka_streams: KafkaStreamsReference, refused: str) -> None:
    config, join = _REFUSED[refused]
    case = _case("outer_join", config, **join)
    theirs, ours = kafka_streams.run(case), run_streamlet(case)
    assert "build_error" in theirs and "build_error" in ours, (theirs.get("build_error"), ours.get("build_error"))
    assert _message(ours["build_error"]).startswith(_message(theirs["build_error"]))  # streamlet may add a hint


def _message(error: str) -> str:
    """An error's message without its exception's name, and without the supplier and the windows it prints
    (Java's toString there, Python's repr here)."""
    return re.sub(r"settings .*? (must match|for the)", r"settings ... \1", error.split(": ", 1)[1])


def _fk_case(config: dict[str, Any]) -> Case:
    """Tables (a source table kept only because it is joined), a foreign-key join (its subscription store)
    and a windowed count: every other kind of store the DSL makes without a supplier."""
    events = [("tbl", "a", "b1", 100), ("tbl2", "b", "x", 101), ("tbl", "c", "b2", 102), ("tbl2", "b", "y", 103),
              ("tbl", "a", None, 104), ("tbl", "d", "a3", 105), ("tbl2", "a", "z", 106)]
    return {
        "config": {"cache_max_bytes": 0, **config},
        "ops": [{"op": "table", "topic": "tbl", "store": None},
                {"op": "fk_join", "kind": "left_join", "fk_fn": "first_char_key", "fn": "pair", "name": None,
                 "store": None, "table": [{"op": "table", "topic": "tbl2", "store": None}]},
                {"op": "to_stream"}, {"op": "to", "topic": "out", "key": "string", "value": "string"}],
        "inputs": [{"topic": t, "key": k, "value": v, "ts": ts} for t, k, v, ts in events],
        "outputs": ["out"],
        "all_topics": True,
        "stores": True,
    }


_FOUR_CONFIGS = ["none", "app suppliers in-memory", "builder default.dsl.store in_memory",
                 "builder rocksDB over app in-memory"]


@pytest.mark.parametrize("config", _FOUR_CONFIGS)
def test_global_table_store_as_kafka_streams(kafka_streams: KafkaStreamsReference, config: str) -> None:
    events = [("glb", "k", "g1", 100), ("in", "k", "a", 101), ("glb", "j", "g2", 102), ("in", "j", "b", 103),
              ("glb", "k", None, 104), ("in", "k", "c", 105)]
    case: Case = {
        "config": {"cache_max_bytes": 0, **_CONFIGS[config]},
        "ops": [{"op": "stream", "topic": "in"},
                {"op": "global_join", "kind": "left_join", "topic": "glb", "store": None, "key_fn": "key",
                 "fn": "pair"},
                {"op": "to", "topic": "out", "key": "string", "value": "string"}],
        "inputs": [{"topic": t, "key": k, "value": v, "ts": ts} for t, k, v, ts in events],
        "outputs": ["out"],
        "stores": True,
    }
    [theirs] = _compared(kafka_streams, {config: case})
    assert theirs["stores"]  # the global store is among the stores compared


@pytest.mark.parametrize("config", _FOUR_CONFIGS)
def test_foreign_key_join_stores_as_kafka_streams(kafka_streams: KafkaStreamsReference, config: str) -> None:
    [theirs] = _compared(kafka_streams, {config: _fk_case(_CONFIGS[config])})
    assert any(name.endswith("-subscription-store") or "SUBSCRIPTION-STATE-STORE" in name for name in theirs["stores"])


_WINDOWED = {
    "time windows": ({"size": 10, "grace": 5}, None),
    "time windows, final results": ({"size": 10, "grace": 5}, "on_window_close"),
    "sliding windows": ({"type": "sliding", "diff": 10, "grace": 5}, None),
    "session windows": ({"type": "session", "gap": 10, "grace": 5}, None),
}


@pytest.mark.parametrize("windowed", list(_WINDOWED), ids=list(_WINDOWED))
def test_windowed_aggregation_stores_as_kafka_streams(kafka_streams: KafkaStreamsReference, windowed: str) -> None:
    window, emit = _WINDOWED[windowed]
    key = ({"session_windowed": True} if window.get("type") == "session"
           else {"time_windowed": window.get("size", window.get("diff"))})
    cases: dict[str, Case] = {}
    for config in _FOUR_CONFIGS:
        cases[config] = {
            "config": {"cache_max_bytes": 0, **_CONFIGS[config]},
            "ops": [{"op": "stream", "topic": "in"}, {"op": "group_by_key"}, {"op": "windowed_by", "window": window},
                    *([{"op": "emit_strategy", "kind": emit}] if emit else []), {"op": "count", "store": None},
                    {"op": "to_stream"}, {"op": "to", "topic": "out", "key": key, "value": "long"}],
            "inputs": [{"topic": "in", "key": k, "value": v, "ts": ts} for t, k, v, ts in _EVENTS if t == "in"],
            "outputs": ["out"],
            "all_topics": True,
            "stores": True,
        }
    _compared(kafka_streams, cases)
