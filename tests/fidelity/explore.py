"""Runs N generated cases and prints each difference found (a development aid, not a test)."""
from __future__ import annotations

import logging
import sys

from hypothesis import HealthCheck, given, settings

from tests.fidelity.harness import KafkaStreamsReference, difference
from tests.fidelity.strategies import cases
from tests.fidelity.topology import run_streamlet

logging.disable(logging.WARNING)
ref = KafkaStreamsReference()
found: list[str] = []


@settings(max_examples=int(sys.argv[1]), database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def check(case):
    ref.submit(case)
    try:
        ours = run_streamlet(case)
    finally:
        theirs = ref.result()
    diff = difference(case, theirs, ours)
    if diff:
        found.append(diff)


check()
for d in found[: int(sys.argv[2]) if len(sys.argv) > 2 else 5]:
    print("=" * 100)
    print(d)
print(f"{len(found)} differences in {ref.cases_run} cases")
ref.close()
