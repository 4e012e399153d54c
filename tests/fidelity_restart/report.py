"""What the restart suite prints and records about a case: a first sorting of each difference (`category`), the
operations that matter for restarts (`features`), one line per case, both systems' output, and the summary.

A category is only a first sorting by the shape of the difference (extra records, missing records, other order);
what a difference is about is found by looking at the case (and `--recheck`, `--control` in __main__.py).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.fidelity.harness import readable
from tests.fidelity_restart.driver import Comparison
from tests.fidelity_restart.strategies import Case, all_ops


def category(comparison: Comparison) -> str:
    """A rough first sorting of a difference: which side failed, or how the output records relate."""
    theirs, ours = comparison.kafka_streams, comparison.streamlet
    if (theirs.failure is None) != (ours.failure is None):
        return "streamlet failed" if ours.failure else "Kafka Streams failed"
    shapes = []
    for topic in comparison.case["outputs"]:
        a, b = theirs.outputs.get(topic, []), ours.outputs.get(topic, [])
        if a == b:
            continue
        if _subsequence(a, b):
            shapes.append("streamlet has extra records")
        elif _subsequence(b, a):
            shapes.append("streamlet lacks records")
        elif sorted(a, key=repr) == sorted(b, key=repr):
            shapes.append("same records, other order")
        else:
            shapes.append("different records")
    return ", ".join(sorted(set(shapes)))


def _subsequence(small: list[Any], big: list[Any]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def features(case: Case) -> list[str]:
    """The operations of a case that matter for restarts, for the summary."""
    names = set()
    for op in all_ops(case["ops"]):
        kind = op["op"]
        if kind == "windowed_by" or (kind == "cogroup" and op.get("window")):
            w = op["window"]
            names.add(f"{w.get('type', 'hopping' if w.get('advance') not in (None, w.get('size')) else 'tumbling')}")
        elif kind == "emit_strategy" and op["kind"] == "on_window_close":
            names.add("emit_on_window_close")
        elif kind == "suppress":
            names.add(f"suppress_{op['kind']}")
        elif kind in ("stream_join", "join_table", "table_join", "global_join", "table_group_by", "to_table",
                      "punctuate", "cogroup"):
            names.add(kind)
        if (op.get("store") or {}).get("retention"):
            names.add("retention_1h")
    return sorted(names)


def result_line(comparison: Comparison) -> dict[str, Any]:
    """A case's record in results.jsonl (without the case and its difference)."""
    case, theirs, ours = comparison.case, comparison.kafka_streams, comparison.streamlet
    both_failed = theirs.failure is not None and ours.failure is not None
    result = category(comparison) if comparison.difference else "both failed" if both_failed else "same"
    return {"id": case["id"], "kind": case["kind"], "stop": case["stop"]["kind"], "drivers": case.get("drivers"),
            "guarantee": case["guarantee"], "features": features(case), "result": result,
            "records": sum(len(records) for records in theirs.outputs.values()),
            "seconds": round(comparison.seconds, 1), "steps": {"kafka-streams": theirs.steps, "streamlet": ours.steps},
            "failures": [theirs.failure, ours.failure],
            **({"pause": {"reference": theirs.pause, "run": ours.pause}} if theirs.pause or ours.pause else {})}


def case_line(case: Case, line: dict[str, Any]) -> str:
    """The line printed for a case."""
    hint = "  (the drivers differ too)" if line["result"] != "same" and case.get("drivers") == "differ" else ""
    for note in ("recheck", "control"):
        if note in line:
            hint += f"  ({line[note]})"
    return (f"{case['id']:>10} {case['kind']:<12} {case['stop']['kind']:<13} {case['guarantee']:<15} "
            f"{line['seconds']:6.1f}s {line['records']:4} records  {line['result']}{hint}")


def show(comparison: Comparison) -> str:
    """Both systems' output, readable."""
    lines = []
    for run in (comparison.kafka_streams, comparison.streamlet):
        lines.append(f"--- {run.system} (failure: {run.failure})")
        for topic, records in run.outputs.items():
            lines += [f"  {topic} {i}: {readable(r.key, comparison.base)} -> {readable(r.value, comparison.base)} "
                      f"@ {r.timestamp}" for i, r in enumerate(records)]
    return "\n".join(lines)


def summary(cases: list[Case], outcomes: Counter[str], seconds: list[float], differing: list[tuple[Case, str]],
            took: float) -> str:
    """Counts of cases, stop points and guarantees, outcomes, time per case, and the differences by category."""
    stops, guarantees = Counter(c["stop"]["kind"] for c in cases), Counter(c["guarantee"] for c in cases)
    lines = [f"\n{len(cases)} cases in {took:.0f}s; stop points: {dict(stops)}; guarantees: {dict(guarantees)}"]
    if seconds:
        lines.append(f"outcomes: {dict(outcomes)}; seconds per case: median {sorted(seconds)[len(seconds) // 2]:.1f}"
                     f", max {max(seconds):.1f}")
    lines.append(f"{len(differing)} differ:")
    lines += [f"  {n:4} {cat}" for cat, n in Counter(cat for _, cat in differing).most_common()]
    lines += [f"       {n:4} with {feature}"
              for feature, n in Counter(f for case, _ in differing for f in features(case)).most_common()]
    return "\n".join(lines)
