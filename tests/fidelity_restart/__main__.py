"""`python -m tests.fidelity_restart`: the restart differential suite at length (`make fidelity-restart`).

Generates `--cases` cases from `--seed` (strategies.py), runs each on Kafka Streams and on streamlet against a real
broker (a fresh local one unless `--bootstrap` names one), `--jobs` cases at a time (each case runs both systems at
once: one case is two busy processes), and prints one line per case and a summary of the differences by
category. Every result goes to `--out`/results.jsonl; a differing case's description, its difference and both
systems' logs stay in `--out`/<case id>/. `--case ID_OR_FILE` runs one case again (an id "<seed>-<index>" or a
JSON file of a case), `--control` also runs each differing case without any restart (stop kinds "none", all input
there at the start, and "live", phase 2 written while the one instance runs): if that differs too, the difference
is not about restarts; `--recheck` runs each differing case again and says whether each
system repeated its own output (a system that does not is timing-dependent there, and the case says nothing).
`--handoff kafka-streams>streamlet` (or the other way) runs each case on one system until the stop and on the other
from the restart on, against Kafka Streams alone: either must read what the other committed (offsets, their
metadata, changelogs) and carry on as Kafka Streams would.
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

from tests.fidelity_restart.driver import Comparison, compare_case, describe_case
from tests.fidelity_restart.report import case_line, result_line, show, summary
from tests.fidelity_restart.screen import Screen
from tests.fidelity_restart.strategies import (
    HANDOFF_KINDS,
    Case,
    all_logged,
    case_by_id,
    generate,
    generate_handoff,
    handoff_kinds,
)


class _Batch:
    """Runs cases, `jobs` at a time, writing results.jsonl and one line per case; then a summary."""

    def __init__(self, bootstrap: str, out: Path, jobs: int, options: argparse.Namespace) -> None:
        self.bootstrap, self.out, self.options = bootstrap, out, options
        self.system = options.handoff or "streamlet"
        self.rolling = bool(options.rolling)
        self.results = out / "results.jsonl"
        self.semaphore = asyncio.Semaphore(jobs)
        self.differing: list[tuple[Case, str]] = []
        self.outcomes: Counter[str] = Counter()
        self.seconds: list[float] = []
        self.finished: dict[str, str] = {}  # the outcome of each case that ran (not a harness error)

    async def run(self, cases: list[Case]) -> int:
        began = time.monotonic()
        await asyncio.gather(*(self._one(case) for case in cases))
        print(summary(cases, self.outcomes, self.seconds, self.differing, time.monotonic() - began))
        if self.system != "streamlet":
            print(f"(compared: the {'rolling swap' if self.rolling else 'handoff'} {self.system} against Kafka "
                  f"Streams {'swapping' if self.rolling else 'handing over'} to itself)")
            print(self._per_kind(cases))
        print(f"results in {self.results}")
        return 1 if self.differing else 0

    def _per_kind(self, cases: list[Case]) -> str:
        """Cases, equal and different, per operator kind of `HANDOFF_KINDS` a case covers."""
        differing = {case["id"] for case, _ in self.differing}
        rows = []
        for kind in HANDOFF_KINDS:
            covering = [c for c in cases if kind in handoff_kinds(c) and c["id"] in self.finished]
            different = sum(c["id"] in differing for c in covering)
            failed = sum(self.finished[c["id"]] == "both failed" for c in covering)
            rows.append(f"  {kind:<14} {len(covering):4} cases, {len(covering) - different - failed:4} equal, "
                        f"{different:4} different, {failed} both failed")
        return "per operator kind (a case counts for every kind it covers):\n" + "\n".join(rows)

    async def _one(self, case: Case) -> None:
        async with self.semaphore:
            workdir = self.out / case["id"]
            try:
                comparison = await compare_case(case, self.bootstrap, workdir,
                                                keep=lambda diff: diff is not None or self.options.keep,
                                                system=self.system, rolling=self.rolling)
            except Exception as e:  # the harness itself: say so, keep the case's files, go on with the others
                self.outcomes["harness error"] += 1
                workdir.mkdir(parents=True, exist_ok=True)
                (workdir / "case.json").write_text(json.dumps(case, indent=1))
                print(f"{case['id']:>10} harness error: {type(e).__name__}: {e}", flush=True)
                return
            line = result_line(comparison)
            if self.options.show:
                print(show(comparison))
            if comparison.difference:
                (workdir / "case.json").write_text(json.dumps(case, indent=1))
                (workdir / "difference.txt").write_text(comparison.difference + "\n\n" + describe_case(case) + "\n")
                if self.options.recheck:
                    line["recheck"] = await self._recheck(comparison)
                if self.options.control:
                    line["control"] = await self._control(case)
                self.differing.append((case, line["result"]))
            self.outcomes["differ" if comparison.difference else line["result"]] += 1
            self.finished[case["id"]] = line["result"]
            self.seconds.append(comparison.seconds)
            with self.results.open("a") as f:
                f.write(json.dumps({**line, "case": case, "difference": comparison.difference}) + "\n")
            print(case_line(case, line), flush=True)

    async def _recheck(self, comparison: Comparison) -> str:
        """Each system again: is its output a function of the case?"""
        case = comparison.case
        again = await compare_case(case, self.bootstrap, self.out / (case["id"] + "-again"), keep=lambda diff: False,
                                   system=self.system, rolling=self.rolling)
        stable = [name for name, first, second in (
            ("Kafka Streams", comparison.kafka_streams, again.kafka_streams),
            ("streamlet", comparison.streamlet, again.streamlet)) if first.outputs == second.outputs]
        if len(stable) == 2:
            return "both repeat their output"
        return f"only {stable[0]} repeats its output" if stable else "neither repeats its output"

    async def _control(self, case: Case) -> str:
        """The case without any restart, its input all there at the start ("none") and its phase 2 written while
        the one instance runs ("live"): does it differ there too?"""
        verdicts = []
        for kind in ("none", "live"):
            baseline = {**case, "stop": {"kind": kind}, "id": f"{case['id']}-{kind}"}
            check = await compare_case(baseline, self.bootstrap, self.out / baseline["id"],
                                       keep=lambda diff: diff is not None, system=self.system)
            verdicts.append(f"{kind}: {'differs' if check.difference else 'same'}")
        return "without a restart " + ", ".join(verdicts)


async def _main(args: argparse.Namespace) -> int:
    path = Path(args.case or "")
    if args.case and path.suffix == ".jsonl":  # an earlier batch's results.jsonl: its cases again (--cases of them)
        cases = [json.loads(line)["case"] for line in path.read_text().splitlines() if line.strip()][:args.cases]
    elif args.case and path.exists():
        cases = [json.loads(path.read_text())]
    else:
        screen = Screen()
        try:
            if args.case:
                cases = [case_by_id(args.case, screen)]
            else:
                print(f"generating {args.cases} cases from seed {args.seed}", flush=True)
                moving = args.handoff or args.rolling
                if moving:
                    cases = generate_handoff(args.cases, args.seed, screen, with_output=args.with_output)
                else:
                    cases = generate(args.cases, args.seed, screen)
        finally:
            screen.close()
    if args.stop:
        cases = [{**cases[0], "stop": json.loads(args.stop)}]
    if args.rolling and not args.handoff:
        args.handoff = "kafka-streams>streamlet"
    if args.handoff:  # local state does not move with a handoff: only change-logged stores can be compared
        cases = [{**case, "ops": all_logged(case["ops"])} for case in cases]
    if args.rolling:  # a rolling run waits for commits while both run (driver.run_rolling): no cache
        cached = [case for case in cases if case.get("caching")]
        if cached and len(cached) < len(cases):
            print(f"{len(cached)} cases with the record cache left out of the rolling run", flush=True)
            cases = [case for case in cases if not case.get("caching")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            from streamlet.testing.local_broker import LocalKafkaBroker

            broker = stack.enter_context(LocalKafkaBroker())
            bootstrap = broker.bootstrap_servers
        return await _Batch(bootstrap, out, args.jobs, args).run(cases)


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
    parser.add_argument("--case", help="one case again: an id <seed>-<index> or a case's JSON file; or an earlier "
                                       "batch's results.jsonl, whose first --cases cases run again")
    parser.add_argument("--stop", help="with --case: another stop point, as JSON")
    parser.add_argument("--control", action="store_true", help="also run differing cases without a restart")
    parser.add_argument("--recheck", action="store_true",
                        help="run differing cases again: does each system repeat its own output?")
    parser.add_argument("--show", action="store_true", help="print both systems' output of every case")
    parser.add_argument("--handoff", choices=["kafka-streams>streamlet", "streamlet>kafka-streams"],
                        help="run the case on one system until the stop and on the other from the restart on (same "
                             "application id, topics and commits, separate state directories), against Kafka "
                             "Streams alone")
    parser.add_argument("--rolling", action="store_true",
                        help="with --handoff: a rolling swap in one streams group (a Kafka 4.2+ broker) while phase 2 "
                             "is written, against Kafka Streams swapping to itself (driver.run_rolling)")
    parser.add_argument("--keep", action="store_true", help="keep every case's directory (logs), not only differing")
    parser.add_argument("--with-output", action="store_true",
                        help="with --handoff: generate only cases whose topology writes output before and after the "
                             "move (on Kafka Streams' TopologyTestDriver), ids <seed>-w<n>")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sys.exit(asyncio.run(_main(args)))


if __name__ == "__main__":
    main()
