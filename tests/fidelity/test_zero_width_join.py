"""Zero-width stream-stream join windows (before + after == 0) against Kafka Streams itself (4.4.0; see harness.py).

Kafka Streams builds such a join (its window stores get size 0 and retention equal to the grace period)
and pairs records with equal timestamps, as long as the grace period keeps the other side's store live:
a store reads only windows later than its latest write minus its retention, so with no grace a
zero-width join pairs nothing, and a left or outer join sends every record joined with null once stream
time has moved past it. The generator of the differential suite produces such windows too; this module
runs a fixed set of them, every join kind, with equal, out-of-order and late timestamps, and also
compares the stores' changelogs.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.fidelity.harness import KafkaStreamsReference, difference, java_available
from tests.fidelity.topology import Case, run_streamlet

pytestmark = pytest.mark.skipif(not java_available(), reason="the differential suite needs Java 17 and Maven")

_EVENTS = [  # (topic, key, value, timestamp): in = the left side, in3 = the right side
    ("in", "k", "a", 100), ("in3", "k", "x", 100), ("in3", "k", "y", 101), ("in", "k", "b", 101),
    ("in", "k", "c", 100),  # out of order, equal to x's time
    ("in3", "j", "p", 101), ("in", "j", "q", 101), ("in3", "j", "r", 101),  # several equal times per key
    ("in", "z", "s", 120), ("in3", "k", "w", 99),  # late: within a grace of 30, not of 3
    ("in", "k", "d", 119), ("in3", "k", "e", 119), ("in", "k", None, 130), ("in3", None, "v", 130),
    ("in", "m", "t", 300),
]

_WINDOWS = [  # diff, grace, before, after: every one sums to a zero-width window
    (0, None, None, None), (0, 0, None, None), (0, 3, None, None), (0, 30, None, None),
    (5, 3, 0, 0), (0, 30, 0, None), (4, 30, 0, 0),
]


def _case(kind: str, diff: int, grace: int | None, before: int | None, after: int | None) -> Case:
    window = {"diff": diff, "grace": grace, "before": before, "after": after}
    return {
        "config": {"cache_max_bytes": 0},
        "ops": [{"op": "stream", "topic": "in"},
                {"op": "stream_join", "kind": kind, "other": [{"op": "stream", "topic": "in3"}], "window": window,
                 "fn": "pair", "name": None, "store_name": None},
                {"op": "to", "topic": "out", "key": "string", "value": "string"}],
        "inputs": [{"topic": t, "key": k, "value": v, "ts": ts} for t, k, v, ts in _EVENTS],
        "outputs": ["out"],
        "all_topics": True,  # the join stores' changelogs too
    }


def test_zero_width_join_windows_as_kafka_streams(kafka_streams: KafkaStreamsReference) -> None:
    differences: list[str] = []
    joined_equal_times = 0
    for kind, (diff, grace, before, after) in itertools.product(["join", "left_join", "outer_join"], _WINDOWS):
        case = _case(kind, diff, grace, before, after)
        theirs = kafka_streams.run(case)
        assert "build_error" not in theirs, theirs["build_error"]  # Kafka Streams accepts every one of them
        diff_report = difference(case, theirs, run_streamlet(case))
        if diff_report is not None:
            differences.append(f"{kind} {case['ops'][1]['window']}:\n{diff_report}")
        joined_equal_times += sum(1 for r in theirs["records"] if r[1] == "out" and _both_sides(r[3]))
    assert not differences, "\n\n".join(differences)
    assert joined_equal_times > 0  # the cases do join records, not only send them joined with null


def _both_sides(value_hex: Any) -> bool:
    """A `pair` joiner's value with both sides present (the joiner writes a null side as "n")."""
    if value_hex is None:
        return False
    return "n" not in bytes.fromhex(value_hex).decode("utf-8", "replace").split("&")
