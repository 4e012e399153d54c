"""Hypothesis strategies for differential cases: a topology in the op vocabulary and what to pipe into it.

Topologies are pipelines a Kafka Streams user writes: a stream (or a table) through stateless
operations, maybe a stream-table join, maybe a grouping, windowing and aggregation with its table
operations, then a sink. The strategy tracks the key and value types so every case is well typed on
both sides (a count's values are Longs; a windowed aggregation's keys are `Windowed`). A table read
from a topic or a stream is sometimes kept in a versioned store. Inputs are few keys (and null keys),
short values and tombstones, timestamps that go back and forth (out-of-order and late records), both
sides of a join interleaved, and a rare wall-clock advance.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st

from tests.fidelity.functions import EXTRACTOR_TOPICS
from tests.fidelity.topology import Case
from tests.fidelity.versioned_strategies import versioned_store

KEYS = ["a", "b", "c", "d"]
FOCUS = frozenset(filter(None, os.environ.get("FIDELITY_FOCUS", "").split(",")))
"""Ops every generated case must contain: "fk_join", "global_join" (a case holds one of those joins), or
"windows" (every case aggregates per window or cogroups: sliding windows, emit strategies, cogroup)."""
_VALUE = st.one_of(st.none(), st.text(alphabet="0123456789", min_size=1, max_size=3))
_STORE_TYPES = [None, "persistent", "in_memory"]

Draw = Any


class _Names:
    """Unique store and grouping names within one case."""

    def __init__(self) -> None:
        self.n = 0

    def next(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def _store(draw: Draw, names: _Names, required: bool = False) -> dict[str, Any] | None:
    if not required and draw(st.booleans()):
        return None
    return {
        "name": draw(st.sampled_from([None, names.next("store")])),
        "type": draw(st.sampled_from(_STORE_TYPES)),
        "caching": draw(st.booleans()),
        "logging": draw(st.booleans()),
    }


def _table_store(draw: Draw, names: _Names) -> dict[str, Any] | None:
    """A table's store: sometimes a versioned one (issue 26, versioned_strategies.py), so versioned tables
    meet every table operation, join and grouping the generator draws."""
    if draw(st.integers(0, 4)) == 0:
        return versioned_store(draw, names.next("vstore"))
    return _store(draw, names)


def _stateless_op(draw: Draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(["filter", "filter_not", "map_values", "select_key", "map", "flat_map_values",
                                 "flat_map", "peek", "repartition"]))
    fns = {
        "filter": ["value_even_length", "key_before_c", "value_not_null"],
        "filter_not": ["value_even_length", "key_before_c", "value_not_null"],
        "map_values": ["tag", "length"],
        "select_key": ["value_first", "key_and_value_last", "value_length"],
        "map": ["swap", "key_from_value_first"],
        "flat_map_values": ["chars"],
        "flat_map": ["twice"],
        "peek": [None],
        "repartition": [None],
    }[kind]
    op: dict[str, Any] = {"op": kind}
    fn = draw(st.sampled_from(fns))
    if fn is not None:
        op["fn"] = fn
    return op


def _value_op(draw: Draw, table: bool, names: _Names, key: Any = "string", value: str = "string") -> dict[str, Any]:
    """An op that looks only at values (safe on windowed keys and Long values).

    A table op's store gets the configured default serdes (String) for whatever Materialized leaves
    unset: Kafka Streams does not pass the table's own serdes down to a filter's or map_values' store,
    so a store over windowed keys, or a filter's store over Long values, fails there with a
    ClassCastException. Such stores are not generated.
    """
    kind = draw(st.sampled_from(["filter", "filter_not", "map_values"]))
    fn = draw(st.sampled_from(["value_even_length", "value_not_null"] if kind != "map_values" else ["tag", "length"]))
    op: dict[str, Any] = {"op": kind, "fn": fn}
    if table:
        storable = key == "string" and (value == "string" or kind == "map_values")
        op["store"] = _store(draw, names) if storable else None
    return op


def _table_ops(draw: Draw, names: _Names, for_join: bool) -> list[dict[str, Any]]:
    ops = []
    for _ in range(draw(st.integers(0, 2))):
        op = _value_op(draw, True, names)
        if for_join:  # streamlet joins only a table it can read from a store of its own
            op["store"] = _store(draw, names, required=True)
        elif draw(st.booleans()):
            op["fn"] = "key_before_c" if op["op"] != "map_values" else op["fn"]
        ops.append(op)
    return ops


@st.composite
def _window(draw: Draw) -> dict[str, Any]:
    if draw(st.integers(0, 1 if "windows" in FOCUS else 3)) == 0:
        return _sliding(draw)
    if draw(st.integers(0, 2)) == 0:
        return {"type": "session", "gap": draw(st.sampled_from([1, 5, 10, 30])),
                "grace": draw(st.sampled_from([None, 0, 3, 10, 30]))}
    size = draw(st.sampled_from([5, 10, 20]))
    advance = draw(st.sampled_from([None, size, size // 2 or 1, max(1, size // 5)]))
    grace = draw(st.sampled_from([None, 0, 3, 10, 30]))
    return {"size": size, "advance": advance, "grace": grace}


def _sliding(draw: Draw) -> dict[str, Any]:
    return {"type": "sliding", "diff": draw(st.sampled_from([1, 5, 10, 20])),
            "grace": draw(st.sampled_from([None, 0, 3, 10, 30]))}


def _windowed_key(window: dict[str, Any]) -> dict[str, Any]:
    """The output key serde of a windowed aggregation's table."""
    if window.get("type") == "session":
        return {"session_windowed": True}
    return {"time_windowed": window["diff"] if window.get("type") == "sliding" else window["size"]}


@st.composite
def _cogroup(draw: Draw, window: dict[str, Any] | None, names: _Names, topics: set[str]) -> dict[str, Any]:
    """The current grouped stream cogrouped with one or two others (from their own topics, maybe re-keyed)."""
    others = []
    for i in range(draw(st.integers(1, 2))):
        topic = f"cg{i + 1}"
        topics.add(topic)
        ops: list[dict[str, Any]] = [{"op": "stream", "topic": topic}]
        ops += [_stateless_op(draw) for _ in range(draw(st.integers(0, 1)))]
        # Mostly named: two unnamed repartitions of one cogroup take the same topic name, which both refuse.
        group: dict[str, Any] = {"name": draw(st.sampled_from([*[names.next("cgroup")] * 7, None])),
                                 "serdes": draw(st.booleans())}
        if draw(st.booleans()):
            ops.append({"op": "group_by_key", **group})
        else:
            ops.append({"op": "group_by", "fn": draw(st.sampled_from(["value_first", "key_and_value_last"])), **group})
        others.append({"ops": ops, "fn": draw(st.sampled_from(["trail", "untrail"]))})
    return {"op": "cogroup", "fn": "trail", "others": others, "window": window, "store": _store(draw, names),
            "name": draw(st.sampled_from([None, None, "cg"]))}


@st.composite
def cases(draw: Draw) -> Case:
    names = _Names()
    ops: list[dict[str, Any]] = []
    key: Any = "string"
    value = "string"
    topics = {"in"}
    table_pipeline = "fk_join" in FOCUS if len(FOCUS) == 1 else draw(st.integers(0, 1 if FOCUS else 4)) == 0
    if table_pipeline:
        topics = {"tbl"}
        ops.append({"op": "table", "topic": "tbl", "store": _table_store(draw, names)})
        ops += _table_ops(draw, names, for_join=False)
        if "fk_join" in FOCUS or draw(st.integers(0, 2)) == 0:  # a foreign-key join
            ops.append(draw(_fk_join(names)))
            topics.add("tbl2")
            ops += _table_ops(draw, names, for_join=False)
        elif draw(st.booleans()):  # a table-table join
            other = [{"op": "table", "topic": "tbl2", "store": _store(draw, names)}]
            other += _table_ops(draw, names, for_join=False)
            ops.append({"op": "table_join", "kind": draw(st.sampled_from(["join", "left_join", "outer_join"])),
                        "table": other, "fn": "pair", "store": _store(draw, names)})
            topics.add("tbl2")
            ops += _table_ops(draw, names, for_join=False)
        if draw(st.booleans()):
            value = draw(_table_grouping(ops, names))
        ops.append({"op": "to_stream"})
    else:
        ops.append({"op": "stream", "topic": "in"})
        if draw(st.integers(0, 5)) == 0:
            ops.append({"op": "merge", "topic": "in2"})
            topics.add("in2")
        ops += [_stateless_op(draw) for _ in range(draw(st.integers(0, 3)))]
        ops += _small_ops(draw, names)
        if draw(st.integers(0, 2)) == 0:  # a stream-stream join
            other: list[dict[str, Any]] = [{"op": "stream", "topic": "in3"}]
            other += [_stateless_op(draw) for _ in range(draw(st.integers(0, 1)))]
            # Zero-width windows (before + after == 0) come out of diff 0, or before 0 and after 0: they
            # join equal timestamps only while the grace period keeps the other side's store live.
            window = {"diff": draw(st.sampled_from([0, 2, 5, 10])), "grace": draw(st.sampled_from([None, 0, 3, 20])),
                      "before": draw(st.sampled_from([None, None, 0, 3])),
                      "after": draw(st.sampled_from([None, None, 0, 1, 8]))}
            ops.append({"op": "stream_join", "kind": draw(st.sampled_from(["join", "left_join", "outer_join"])),
                        "other": other, "window": window, "fn": "pair",
                        "name": draw(st.sampled_from([None, "sj"])),
                        "store_name": draw(st.sampled_from([None, None, "sjs"]))})
            topics.add("in3")
        if draw(st.integers(0, 3)) == 0:
            table = [{"op": "table", "topic": "tbl", "store": _table_store(draw, names)}]
            table += _table_ops(draw, names, for_join=True)
            ops.append({"op": "join_table", "kind": draw(st.sampled_from(["join", "left_join"])), "table": table,
                        "fn": "pair"})
            topics.add("tbl")
            ops += [_stateless_op(draw) for _ in range(draw(st.integers(0, 1)))]
        if "global_join" in FOCUS or draw(st.integers(0, 4)) == 0:  # a global table join
            ops.append(draw(_global_join(names)))
            topics.add("glb")
            ops += [_stateless_op(draw) for _ in range(draw(st.integers(0, 1)))]
        if draw(st.integers(0, 4)) == 0:
            ops.append({"op": "to", "topic": "tap", "key": "string", "value": "string"})
        if draw(st.integers(0, 5)) == 0:  # branches to their own topics; the default branch goes on
            branches = [{"fn": draw(st.sampled_from(["value_even_length", "key_before_c", "value_not_null"])),
                         "name": draw(st.sampled_from([None, f"-b{i}"]))} for i in range(draw(st.integers(1, 2)))]
            ops.append({"op": "split", "name": draw(st.sampled_from([None, "sp"])), "branches": branches,
                        "default_name": draw(st.sampled_from([None, "-rest"]))})
        if draw(st.integers(0, 6)) == 0:  # read as a table, then back to a stream
            ops.append({"op": "to_table", "store": _table_store(draw, names)})
            ops += _table_ops(draw, names, for_join=False)
            ops.append({"op": "to_stream"})
        if "windows" in FOCUS or draw(st.integers(0, 3)) != 0:  # an aggregation
            window = draw(_window()) if "windows" in FOCUS else draw(st.one_of(st.none(), _window()))
            cogroup = draw(st.integers(0, 2 if "windows" in FOCUS else 6)) == 0
            suppress = draw(_suppress(window is not None))
            # A buffer over windowed keys needs the grouping's key serde (without one Kafka Streams
            # falls back to the default String serde for Windowed keys and fails).
            group: dict[str, Any] = {"name": draw(st.sampled_from([None, names.next("group")])),
                                     "serdes": suppress is not None or draw(st.booleans())}
            if draw(st.booleans()):
                ops.append({"op": "group_by_key", **group})
            else:
                ops.append({"op": "group_by", "fn": draw(st.sampled_from(["value_first", "key_and_value_last"])),
                            **group})
            if window is not None:
                key = _windowed_key(window)
            if cogroup:
                ops.append(draw(_cogroup(window, names, topics)))
                value = "string"
            else:
                if window is not None:
                    ops.append({"op": "windowed_by", "window": window})
                    if draw(st.integers(0, 2)) == 0:
                        ops.append({"op": "emit_strategy", "kind": draw(st.sampled_from(
                            ["on_window_close", "on_window_close", "on_window_update"]))})
                kind = draw(st.sampled_from(["count", "reduce", "aggregate"]))
                agg: dict[str, Any] = {"op": kind, "store": _store(draw, names)}
                if kind != "count":
                    agg["fn"] = "concat" if kind == "reduce" else "trail"
                ops.append(agg)
                value = "long" if kind == "count" else "string"
            for _ in range(draw(st.integers(0, 2))):
                op = _value_op(draw, True, names, key, value)
                ops.append(op)
                if op["op"] == "map_values":
                    value = "string"
            if window is None and suppress is None and value == "string" and draw(st.integers(0, 3)) == 0:
                value = draw(_table_grouping(ops, names))
            if suppress is not None:
                ops.append(suppress)
                if draw(st.booleans()):
                    op = _value_op(draw, True, names, key, value)
                    ops.append(op)
                    if op["op"] == "map_values":
                        value = "string"
            ops.append({"op": "to_stream"})
            for _ in range(draw(st.integers(0, 1))):
                op = _value_op(draw, False, names)
                ops.append(op)
                if op["op"] == "map_values":
                    value = "string"
    if draw(st.integers(0, 9)) == 0:  # print whatever the pipeline ends with (windowed keys, counts)
        ops.append(_print_op(draw))
    ops.append({"op": "to", "topic": "out", "key": key, "value": value})
    outputs = ["out", "tap"] if any(op.get("topic") == "tap" for op in ops) else ["out"]
    for op in ops:
        if op["op"] == "to_extractor":
            outputs += [t for t in EXTRACTOR_TOPICS[op["fn"]] if t not in outputs]
    for op in ops:
        if op["op"] == "split":
            outputs += [f"br{i}" for i in range(1, len(op["branches"]) + 1)]
    cache_max_bytes = draw(st.sampled_from([0, 10 * 1024 * 1024, 150, 300, 600, 1200]))
    return {
        "config": {"cache_max_bytes": cache_max_bytes},
        "ops": ops,
        "inputs": draw(_inputs(sorted(topics))),
        "outputs": outputs,
        "all_topics": draw(st.booleans()),
    }


def _small_ops(draw: Draw, names: _Names) -> list[dict[str, Any]]:
    """Sometimes `process_values` (stateless, or keeping a store), a topic-name-extractor sink, a print."""
    ops: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 2)) == 0 else 0):
        if draw(st.booleans()):
            ops.append({"op": "process_values", "fn": draw(st.sampled_from(["stamp", "dup"]))})
        else:
            store = {"name": names.next("pv"), "type": draw(st.sampled_from(["persistent", "in_memory"])),
                     "caching": draw(st.booleans()), "logging": draw(st.booleans())}
            ops.append({"op": "process_values", "fn": "running", "store": store})
    if draw(st.integers(0, 4)) == 0:
        ops.append({"op": "to_extractor", "fn": draw(st.sampled_from(["by_key", "by_ts"]))})
    if draw(st.integers(0, 6)) == 0:
        ops.append(_print_op(draw))
    return ops


def _print_op(draw: Draw) -> dict[str, Any]:
    return {"op": "print", "label": draw(st.sampled_from([None, "p"])),
            "mapper": draw(st.sampled_from([None, "kv_colon"]))}


@st.composite
def _fk_join(draw: Draw, names: _Names) -> dict[str, Any]:
    """A foreign-key join of the current table with `tbl2` (keys a-d), by a key taken from the left value."""
    right = [{"op": "table", "topic": "tbl2", "store": _store(draw, names)}]
    right += _table_ops(draw, names, for_join=False)
    return {"op": "fk_join", "kind": draw(st.sampled_from(["join", "left_join"])), "table": right,
            "fk_fn": draw(st.sampled_from(["first_char_key", "last_char_key"])), "fn": "pair",
            "name": draw(st.sampled_from([None, "fk"])), "store": _store(draw, names)}


@st.composite
def _global_join(draw: Draw, names: _Names) -> dict[str, Any]:
    """A stream joined with a global table of `glb`, by its key or a key taken from its value. A materialized
    global table always has a store name: Kafka Streams 4.x refuses `globalTable(topic, Materialized)`
    without one at build() (KAFKA_STREAMS_4_DIFFERENCES.md #2, which streamlet follows and tests)."""
    store = _store(draw, names)
    if store is not None and store["name"] is None:
        store["name"] = names.next("gstore")
    return {"op": "global_join", "kind": draw(st.sampled_from(["join", "left_join"])), "topic": "glb",
            "store": store, "key_fn": draw(st.sampled_from(["key", "first_char_key", "last_char_key"])),
            "fn": "pair"}


@st.composite
def _table_grouping(draw: Draw, ops: list[dict[str, Any]], names: _Names) -> str:
    """`KTable.group_by` and an aggregation of the groups (appended to `ops`); returns the value type."""
    ops.append({"op": "table_group_by", "fn": draw(st.sampled_from(["swap", "key_from_value_first"])),
                "name": draw(st.sampled_from([None, names.next("regroup")])), "serdes": draw(st.booleans())})
    kind = draw(st.sampled_from(["count", "reduce", "aggregate"]))
    agg: dict[str, Any] = {"op": kind, "store": _store(draw, names)}
    if kind == "reduce":
        agg.update(fn="concat", sub="unconcat")
    elif kind == "aggregate":
        agg.update(fn="trail", sub="untrail")
    ops.append(agg)
    value = "long" if kind == "count" else "string"
    for _ in range(draw(st.integers(0, 1))):
        op = _value_op(draw, True, names, "string", value)
        ops.append(op)
        if op["op"] == "map_values":
            value = "string"
    return value


@st.composite
def _suppress(draw: Draw, windowed: bool) -> dict[str, Any] | None:
    """Sometimes a suppression: final window results (windowed only) or a time limit."""
    if draw(st.integers(0, 2 if windowed else 4)) != 0:
        return None
    final = windowed and draw(st.integers(0, 3)) != 0
    kind = draw(st.sampled_from(["unbounded", "max_records", "max_bytes"]))
    buffer: dict[str, Any] = {"kind": kind}
    if kind != "unbounded":
        buffer["n"] = draw(st.integers(1, 4)) if kind == "max_records" else draw(st.integers(40, 400))
        buffer["when_full"] = "shut_down" if final else draw(st.sampled_from(["emit", "shut_down"]))
    op: dict[str, Any] = {"op": "suppress", "kind": "until_window_closes" if final else "until_time_limit",
                          "buffer": buffer, "name": draw(st.sampled_from([None, "sup"]))}
    if not final:
        op["limit"] = draw(st.sampled_from([0, 1, 10, 50]))
    return op


@st.composite
def _inputs(draw: Draw, topics: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    ts = draw(st.integers(0, 20))
    for _ in range(draw(st.integers(1, 14))):
        if draw(st.integers(0, 15)) == 0:
            events.append({"advance": draw(st.sampled_from([1, 100, 10_000]))})
            continue
        ts = max(0, ts + draw(st.integers(-25, 30)))
        key = draw(st.one_of(st.sampled_from(KEYS), st.none())) if draw(st.integers(0, 9)) == 0 else \
            draw(st.sampled_from(KEYS))
        events.append({"topic": draw(st.sampled_from(topics)), "key": key, "value": draw(_VALUE), "ts": ts})
    return events
