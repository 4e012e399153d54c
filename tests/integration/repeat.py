"""Run integration tests again and again, to show a result is not luck (issue #11: `make chaos-repeat`).

Each run is a fresh pytest process (its own broker, its own temporary directory kept under `--keep`),
so one run's leftovers cannot help or hurt the next. A JUnit report per run is read back and the
command ends with a table: every test, how many runs it passed and failed, and where the failed runs'
logs are (the apps' logs sit in each test's temporary directory). Nothing is retried: a failure is a
finding, to be diagnosed.

    python -m tests.integration.repeat --runs 20 [--keep DIR] [TEST_PATH ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TESTS = ["tests/integration/test_chaos.py", "tests/integration/test_membership_loss.py"]


def _outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed | failed | skipped, from one run's JUnit report."""
    found: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            found[name] = "failed"
        elif case.find("skipped") is not None:
            found[name] = "skipped"
        else:
            found[name] = "passed"
    return found


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.integration.repeat", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--keep", type=Path, default=None, help="where each run's logs and reports stay")
    parser.add_argument("tests", nargs="*", default=DEFAULT_TESTS)
    args = parser.parse_args()
    keep: Path = args.keep or Path(tempfile.mkdtemp(prefix="streamlet-repeat-"))
    keep.mkdir(parents=True, exist_ok=True)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    failed_runs: dict[str, list[int]] = defaultdict(list)
    began = time.monotonic()
    for run in range(1, args.runs + 1):
        run_dir = keep / f"run-{run:02d}"
        junit = keep / f"run-{run:02d}.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={run_dir}",
                   f"--junitxml={junit}", *args.tests]
        with open(keep / f"run-{run:02d}.out", "wb") as out:
            code = subprocess.call(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
        outcomes = _outcomes(junit) if junit.exists() else {"(pytest did not report)": "failed"}
        for name, outcome in outcomes.items():
            counts[name][outcome] += 1
            if outcome == "failed":
                failed_runs[name].append(run)
        bad = sum(1 for o in outcomes.values() if o == "failed")
        print(f"run {run}/{args.runs}: exit {code}, {len(outcomes) - bad} passed, {bad} failed "
              f"({time.monotonic() - began:.0f}s so far)", flush=True)
    width = max(len(n) for n in counts)
    print(f"\n{'test':<{width}}  passed  failed  failed runs")
    for name in sorted(counts):
        c = counts[name]
        print(f"{name:<{width}}  {c['passed']:>6}  {c['failed']:>6}  {failed_runs.get(name, '')}")
    total_failed = sum(c["failed"] for c in counts.values())
    total_passed = sum(c["passed"] for c in counts.values())
    print(f"\n{args.runs} runs in {time.monotonic() - began:.0f}s: {total_passed} passed, {total_failed} failed; "
          f"logs in {keep}")
    return 1 if total_failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
