"""Hypothesis strategies for differential cases about versioned stores (issue 26).

Two kinds, in the op vocabulary of strategies.py (`Runner` / topology.py build them):

- `store_cases`: a stream of commands driving a versioned store through the Processor API (the
  `versioned_ops` op: put, tombstone, delete, read as of a time, read the latest), so every put return
  code, every record read and, with `all_topics`, every changelog record is compared with Kafka Streams'
  own `RocksDBVersionedStore`;
- `table_cases`: versioned tables in the DSL (`table()` or `to_table()` materialized in a versioned
  store, table filters and mappings with or without a store of their own) joined by a stream (`join` /
  `left_join`, which read the table as of each stream record's time), written out as a stream, grouped
  and counted, or joined with another table, with table updates and stream records out of order and
  beyond the history retention.

Timestamps jump back and forth by more than the small history retentions drawn, so writes past the
grace period, reads past the retention and segment expiry all happen.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.fidelity.topology import Case

Draw = Any
KEYS = ["a", "b", "c"]
_HISTORY = [0, 3, 10, 30, 200]
_SEGMENT = [None, 1, 4, 15]


def versioned_store(draw: Draw, name: str) -> dict[str, Any]:
    """A versioned store spec: `{"name", "versioned": {"history", "segment"}, "type", "caching", "logging"}`
    ("in_memory" runs streamlet's in-memory versioned store against Kafka Streams' RocksDB one)."""
    return {"name": name, "versioned": {"history": draw(st.sampled_from(_HISTORY)),
                                        "segment": draw(st.sampled_from(_SEGMENT))},
            "type": draw(st.sampled_from([None, "in_memory"])), "caching": draw(st.booleans()),
            "logging": draw(st.booleans())}


def _timestamps(draw: Draw, n: int) -> list[int]:
    ts = draw(st.integers(0, 30))
    out = []
    for _ in range(n):
        ts = max(0, ts + draw(st.sampled_from([-60, -25, -9, -3, -1, 0, 0, 1, 2, 5, 12, 40])))
        out.append(ts)
    return out


@st.composite
def store_cases(draw: Draw) -> Case:
    store = versioned_store(draw, "vs")
    ops = [{"op": "stream", "topic": "in"}, {"op": "versioned_ops", "store": store},
           {"op": "to", "topic": "out", "key": "string", "value": "string"}]
    events: list[dict[str, Any]] = []
    for ts in _timestamps(draw, draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["put", "put", "put", "tombstone", "delete", "get", "get", "latest"]))
        value = {"put": "p" + draw(st.text("0123456789", max_size=2)), "tombstone": None, "delete": "d",
                 "get": "g" + str(max(0, ts + draw(st.integers(-70, 20)))), "latest": "l"}[kind]
        key = None if draw(st.integers(0, 19)) == 0 else draw(st.sampled_from(KEYS))
        events.append({"topic": "in", "key": key, "value": value, "ts": ts})
    return {"config": {"cache_max_bytes": 0}, "ops": ops, "inputs": events, "outputs": ["out"],
            "all_topics": draw(st.booleans())}


def _table_ops(draw: Draw, n: int) -> list[dict[str, Any]]:
    """Filters and mappings over a table, each with no store, a timestamped store, a versioned one, or a
    `Materialized` without a store name (which keeps no store but ends the table's versioning)."""
    ops = []
    for i in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["filter", "filter_not", "map_values"]))
        fn = draw(st.sampled_from(["tag", "length"] if kind == "map_values" else ["value_even_length", "key_before_c"]))
        choice = draw(st.integers(0, 4))
        store: dict[str, Any] | None = None
        if choice == 2:
            store = {"name": f"ts{n}{i}", "type": None, "caching": draw(st.booleans()), "logging": True}
        elif choice == 3:
            store = versioned_store(draw, f"vt{n}{i}")
        elif choice == 4:  # a Materialized without a store name: no store, yet no longer a versioned table
            store = {"name": None, "type": None, "caching": draw(st.booleans()), "logging": draw(st.booleans())}
        ops.append({"op": kind, "fn": fn, "store": store})
    return ops


@st.composite
def table_cases(draw: Draw) -> Case:
    topics = ["tbl"]
    if draw(st.booleans()):
        table: list[dict[str, Any]] = [{"op": "table", "topic": "tbl", "store": versioned_store(draw, "vtable")}]
    else:  # a stream read as a versioned table
        table = [{"op": "stream", "topic": "tbl"}, {"op": "to_table", "store": versioned_store(draw, "vtable")}]
    shape = draw(st.sampled_from(["join", "join", "join", "to_stream", "group", "table_join", "aggregate"]))
    table += _table_ops(draw, 1)
    outputs = ["out"]
    value = "string"
    if shape == "join":
        topics.append("in")
        ops: list[dict[str, Any]] = [{"op": "stream", "topic": "in"}]
        if draw(st.integers(0, 3)) == 0:
            ops.append({"op": "filter", "fn": "value_not_null"})
        ops.append({"op": "join_table", "kind": draw(st.sampled_from(["join", "left_join"])), "table": table,
                    "fn": "pair"})
    elif shape == "to_stream":
        ops = [*table, {"op": "to_stream"}]
    elif shape == "group":
        ops = [*table, {"op": "table_group_by", "fn": draw(st.sampled_from(["swap", "key_from_value_first"])),
                        "name": None, "serdes": True},
               {"op": "count", "store": draw(st.sampled_from([None, versioned_store(draw, "vcount")]))},
               {"op": "to_stream"}]
        value = "long"
    elif shape == "aggregate":  # a stream aggregated into a versioned store, maybe joined by another stream
        kind = draw(st.sampled_from(["count", "reduce", "aggregate"]))
        agg: dict[str, Any] = {"op": kind, "store": versioned_store(draw, "vagg")}
        if kind != "count":
            agg["fn"] = "concat" if kind == "reduce" else "trail"
        aggregated: list[dict[str, Any]] = [{"op": "stream", "topic": "tbl"},
                                            {"op": "group_by_key", "name": None, "serdes": True}, agg]
        if kind == "count":
            aggregated.append({"op": "map_values", "fn": "tag", "store": None})  # String values from here
        if draw(st.booleans()):
            topics.append("in")
            ops = [{"op": "stream", "topic": "in"}, {"op": "join_table", "kind": draw(st.sampled_from(
                ["join", "left_join"])), "table": aggregated, "fn": "pair"}]
        else:
            ops = [*aggregated, {"op": "to_stream"}]
    else:
        topics.append("tbl2")
        choice = draw(st.integers(0, 2))
        store2 = (None if choice == 0 else versioned_store(draw, "vtable2") if choice == 1
                  else {"name": "plain2", "type": None, "caching": draw(st.booleans()), "logging": True})
        other: list[dict[str, Any]] = [{"op": "table", "topic": "tbl2", "store": store2}]
        ops = [*table, {"op": "table_join", "kind": draw(st.sampled_from(["join", "left_join", "outer_join"])),
                        "table": other, "fn": "pair", "store": None}, {"op": "to_stream"}]
    ops.append({"op": "to", "topic": "out", "key": "string", "value": value})
    events: list[dict[str, Any]] = []
    for ts in _timestamps(draw, draw(st.integers(1, 24))):
        topic = draw(st.sampled_from(topics))
        key = None if draw(st.integers(0, 24)) == 0 else draw(st.sampled_from(KEYS))
        events.append({"topic": topic, "key": key, "value": draw(st.one_of(
            st.none(), st.text(alphabet="0123456789", min_size=1, max_size=3))), "ts": ts})
    return {"config": {"cache_max_bytes": draw(st.sampled_from([0, 10 * 1024 * 1024]))}, "ops": ops,
            "inputs": events, "outputs": outputs, "all_topics": draw(st.booleans())}
