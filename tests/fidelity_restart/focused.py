"""Short topologies that put what a restart can change right at the output: a windowed aggregation (any window,
emit strategies, a store kept an hour, suppression) or a stream-stream join, straight from the source topic.

tests/fidelity's generator builds long pipelines whose filters and joins often let few records through to the
windowed or joined step, so that hardly a window closes before the stop; these are the restart suite's own kinds
"window_focus" and "join_focus" (strategies.py), in the same op vocabulary. The window, suppression and key serde
choices are tests/fidelity's (its private helpers), so the two suites keep drawing from one set of windows.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.fidelity.strategies import _suppress, _window, _windowed_key

HOUR = 3_600_000
Draw = Any


@st.composite
def windowed_pipelines(draw: Draw) -> list[dict[str, Any]]:
    """stream -> group_by_key -> windowed_by -> [emit strategy] -> count/reduce/aggregate -> [suppress] -> to."""
    window = draw(_window())
    ops: list[dict[str, Any]] = [{"op": "stream", "topic": "in"}]
    if draw(st.integers(0, 3)) == 0:
        ops.append({"op": "filter", "fn": "value_not_null"})
    ops += [{"op": "group_by_key", "name": draw(st.sampled_from([None, "g"])), "serdes": True},
            {"op": "windowed_by", "window": window}]
    if window.get("type") != "sliding" and draw(st.integers(0, 2)) != 0:
        ops.append({"op": "emit_strategy", "kind": draw(st.sampled_from(["on_window_close", "on_window_close",
                                                                          "on_window_update"]))})
    kind = draw(st.sampled_from(["count", "reduce", "aggregate"]))
    store = {"name": draw(st.sampled_from([None, "wstore"])), "type": draw(st.sampled_from([None, "in_memory"])),
             "caching": False, "logging": True, "retention": draw(st.sampled_from([None, HOUR, HOUR]))}
    agg: dict[str, Any] = {"op": kind, "store": store}
    if kind != "count":
        agg["fn"] = "concat" if kind == "reduce" else "trail"
    ops.append(agg)
    suppress = draw(_suppress(True))
    if suppress is not None:
        ops.append(suppress)
    value = "long" if kind == "count" else "string"
    ops += [{"op": "to_stream"}, {"op": "to", "topic": "out", "key": _windowed_key(window), "value": value}]
    return ops


@st.composite
def join_pipelines(draw: Draw) -> list[dict[str, Any]]:
    """stream -> [filter] -> join / left join / outer join with another stream -> to."""
    ops: list[dict[str, Any]] = [{"op": "stream", "topic": "in"}]
    if draw(st.integers(0, 3)) == 0:
        ops.append({"op": "filter", "fn": "value_not_null"})
    diff = draw(st.sampled_from([0, 2, 5, 10]))
    window = {"diff": diff, "grace": draw(st.sampled_from([None, 0, 3, 20])),
              "before": draw(st.sampled_from([None, None, 0, 3])),
              "after": draw(st.sampled_from([None, None, 0, 1, 8]))}  # zero-width windows (before + after == 0) too
    ops.append({"op": "stream_join", "kind": draw(st.sampled_from(["join", "left_join", "outer_join"])),
                "other": [{"op": "stream", "topic": "in3"}], "window": window, "fn": "pair",
                "name": draw(st.sampled_from([None, "sj"])), "store_name": None})
    ops.append({"op": "to", "topic": "out", "key": "string", "value": "string"})
    return ops
