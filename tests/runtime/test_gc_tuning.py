"""The collector settings `streamlet run` applies (in a child interpreter: they are process-wide)."""

from __future__ import annotations

import json
import subprocess
import sys

from streamlet.runtime.gc_tuning import THRESHOLDS

PROBE = """
import gc, json
from streamlet.runtime.gc_tuning import tune_gc_for_streaming
before = gc.get_threshold()
tune_gc_for_streaming()
cycle = []
cycle.append(cycle)  # a reference cycle made after tuning is still collected
del cycle
print(json.dumps({"before": before, "after": gc.get_threshold(), "frozen": gc.get_freeze_count(),
                  "collected": gc.collect()}))
"""


def test_thresholds_are_raised_start_up_objects_frozen_and_cycles_still_collected() -> None:
    out = json.loads(subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True).stdout)
    assert out["before"] == [700, 10, 10]
    assert out["after"] == list(THRESHOLDS)
    assert out["frozen"] > 1000  # the interpreter's and streamlet's modules
    assert out["collected"] >= 1
