"""Runs N generated cases on two Kafka Streams versions and prints where they part (a development aid, not a test).

    python -m tests.fidelity.compare_versions 3000 [3.9.1] [4.4.0]

Each case of every generator (the main one, versioned store commands, versioned tables) goes to both
versions' reference runners; a case whose results differ is printed with the ops it used, and with
streamlet's own result compared against each version; the cases that differ are written to
compare_versions.jsonl in the working directory. tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md records
what this found between 3.9.1 and 4.4.0.
"""
from __future__ import annotations

import collections
import json
import logging
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fidelity.harness import KafkaStreamsReference, difference
from tests.fidelity.strategies import cases
from tests.fidelity.topology import Case, run_streamlet
from tests.fidelity.versioned_strategies import store_cases, table_cases


def main() -> None:
    count = int(sys.argv[1])
    old_version, new_version = (sys.argv[2:4] + ["3.9.1", "4.4.0"][len(sys.argv[2:4]):])[:2]
    logging.disable(logging.WARNING)
    old, new = KafkaStreamsReference(old_version), KafkaStreamsReference(new_version)
    found: list[str] = []
    cases_found: list[Case] = []
    kinds: collections.Counter[str] = collections.Counter()

    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(cases(), cases(), store_cases(), table_cases()))
    def check(case: Case) -> None:
        old.submit(case)
        new.submit(case)
        theirs_old, theirs_new = old.result(), new.result()
        diff = difference(case, theirs_old, theirs_new)
        if diff is None:
            return
        cases_found.append(case)
        ours = run_streamlet(case)
        ops = sorted({op["op"] for op in case["ops"]})
        kinds[",".join(ops)] += 1
        if "build" in diff:  # difference() leaves the case out of a build difference
            diff += "\nops: " + json.dumps(case["ops"])
        verdicts = [f"streamlet vs {version}: {'same' if difference(case, theirs, ours) is None else 'differs'}"
                    for version, theirs in ((old_version, theirs_old), (new_version, theirs_new))]
        found.append(f"{old_version} -> {new_version}:\n{diff}\n" + "; ".join(verdicts))

    check()
    for d in found[: int(sys.argv[4]) if len(sys.argv) > 4 else 10]:
        print("=" * 100)
        print(d)
    print(f"{len(found)} differences in {new.cases_run} cases; by ops: {dict(kinds)}")
    Path("compare_versions.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases_found))
    old.close()
    new.close()


if __name__ == "__main__":
    main()
