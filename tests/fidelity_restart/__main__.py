"""`python -m tests.fidelity_restart`: the restart differential suite at length (`make fidelity-restart`).

Generates `--cases` cases from `--seed` (strategies.py), runs each on Kafka Streams and on streamlet against a real
broker (a fresh local one unless `--bootstrap` names one), `--jobs` cases at a time (each case runs both systems at
once: one case is two busy processes), and prints one line per case and a summary of the differences by
category. Every result goes to `--out`/results.jsonl; a differing case's description, its difference and both
systems' logs stay in `--out`/<case id>/. `--case ID_OR_FILE` runs one case again (an id "<seed>-<index>" or a
JSON file of a case), `--control` also runs each differing case without any restart (stop kind "none"): if that
differs too, the difference is not about restarts; `--recheck` runs each differing case again and says whether each
system repeated its own output (a system that does not is timing-dependent there, and the case says nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import sys
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from tests.fidelity.harness import readable
from tests.fidelity_restart.driver import Comparison, compare_case, describe_case
from tests.fidelity_restart.screen import Screen
from tests.fidelity_restart.strategies import Case, all_ops, case_by_id, generate


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


async def _run(cases: list[Case], bootstrap: str, out: Path, jobs: int, control: bool, show: bool,
               recheck: bool) -> int:
    results = out / "results.jsonl"
    semaphore = asyncio.Semaphore(jobs)
    differing: list[tuple[Case, Comparison, str]] = []
    began = time.monotonic()

    async def one(case: Case) -> None:
        async with semaphore:
            workdir = out / case["id"]
            comparison = await compare_case(case, bootstrap, workdir, keep=lambda diff: diff is not None)
            cat = category(comparison) if comparison.difference else "same"
            line: dict[str, Any] = {"id": case["id"], "kind": case["kind"], "stop": case["stop"]["kind"],
                                    "drivers": case.get("drivers"),
                                    "guarantee": case["guarantee"], "features": features(case), "result": cat,
                                    "seconds": round(comparison.seconds, 1),
                                    "steps": {"kafka-streams": comparison.kafka_streams.steps,
                                              "streamlet": comparison.streamlet.steps},
                                    "failures": [comparison.kafka_streams.failure, comparison.streamlet.failure]}
            if show:
                for run in (comparison.kafka_streams, comparison.streamlet):
                    print(f"--- {run.system} (failure: {run.failure})")
                    for topic, records in run.outputs.items():
                        print("\n".join(f"  {topic} {i}: {readable(r.key, comparison.base)} -> "
                                        f"{readable(r.value, comparison.base)} @ {r.timestamp}"
                                        for i, r in enumerate(records)))
            if comparison.difference:
                (workdir / "case.json").write_text(json.dumps(case, indent=1))
                (workdir / "difference.txt").write_text(comparison.difference + "\n\n" + describe_case(case) + "\n")
                if recheck:  # each system again: is its output a function of the case?
                    again = await compare_case(case, bootstrap, out / (case["id"] + "-again"), keep=lambda diff: False)
                    stable = [name for name, first, second in (
                        ("Kafka Streams", comparison.kafka_streams, again.kafka_streams),
                        ("streamlet", comparison.streamlet, again.streamlet)) if first.outputs == second.outputs]
                    line["recheck"] = ("both repeat their output" if len(stable) == 2 else f"only {stable[0]} repeats "
                                       "its output" if stable else "neither repeats its output")
                if control:
                    baseline = {**case, "stop": {"kind": "none"}, "id": case["id"] + "-control"}
                    check = await compare_case(baseline, bootstrap, out / baseline["id"],
                                               keep=lambda diff: diff is not None)
                    line["control"] = "differs without a restart too" if check.difference else "same without a restart"
                differing.append((case, comparison, cat))
            with results.open("a") as f:
                f.write(json.dumps({**line, "case": case, "difference": comparison.difference}) + "\n")
            hint = "  (the drivers differ too)" if cat != "same" and case.get("drivers") == "differ" else ""
            for note in ("recheck", "control"):
                if note in line:
                    hint += f"  ({line[note]})"
            print(f"{case['id']:>10} {case['kind']:<11} {case['stop']['kind']:<13} {case['guarantee']:<15} "
                  f"{comparison.seconds:6.1f}s  {cat}{hint}",
                  flush=True)

    await asyncio.gather(*(one(case) for case in cases))
    stops, guarantees = Counter(c["stop"]["kind"] for c in cases), Counter(c["guarantee"] for c in cases)
    print(f"\n{len(cases)} cases in {time.monotonic() - began:.0f}s; stop points: {dict(stops)}; "
          f"guarantees: {dict(guarantees)}")
    print(f"{len(differing)} differ:")
    for cat, n in Counter(cat for _, _, cat in differing).most_common():
        print(f"  {n:4} {cat}")
    for feature, n in Counter(f for case, _, _ in differing for f in features(case)).most_common():
        print(f"       {n:4} with {feature}")
    print(f"results in {results}")
    return 1 if differing else 0


async def _main(args: argparse.Namespace) -> int:
    path = Path(args.case or "")
    if args.case and path.exists():
        cases = [json.loads(path.read_text())]
    else:
        screen = Screen()
        try:
            if args.case:
                cases = [case_by_id(args.case, screen)]
            else:
                print(f"generating {args.cases} cases from seed {args.seed}", flush=True)
                cases = generate(args.cases, args.seed, screen)
        finally:
            screen.close()
    if args.stop:
        cases = [{**cases[0], "stop": json.loads(args.stop)}]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            from streamlet.testing.local_broker import LocalKafkaBroker

            broker = stack.enter_context(LocalKafkaBroker())
            bootstrap = broker.bootstrap_servers
        return await _run(cases, bootstrap, out, args.jobs, args.control, args.show, args.recheck)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fidelity_restart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=int(os.environ.get("FIDELITY_RESTART_CASES", "200")))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("FIDELITY_RESTART_SEED",
                                                                       str(random.randrange(1 << 30)))))
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("FIDELITY_RESTART_JOBS", "1")),
                        help="cases at a time (each is two processes)")
    parser.add_argument("--bootstrap", default=os.environ.get("FIDELITY_RESTART_BOOTSTRAP"))
    parser.add_argument("--out", default=os.environ.get("FIDELITY_RESTART_OUT", str(Path(tempfile.gettempdir())
                                                                                    / "streamlet-fidelity-restart")))
    parser.add_argument("--case", help="one case again: an id <seed>-<index> or a case's JSON file")
    parser.add_argument("--stop", help="with --case: another stop point, as JSON")
    parser.add_argument("--control", action="store_true", help="also run differing cases without a restart")
    parser.add_argument("--recheck", action="store_true",
                        help="run differing cases again: does each system repeat its own output?")
    parser.add_argument("--show", action="store_true", help="print both systems' output of every case")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sys.exit(asyncio.run(_main(args)))


if __name__ == "__main__":
    main()
