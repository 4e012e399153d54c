"""The latency trace's debug mode (streamlet.metrics.latency_trace): ages per stage, percentiles at exit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamlet.metrics.latency_trace import LatencyTrace


def test_ages_are_wall_clock_minus_the_record_timestamp_with_percentiles(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = LatencyTrace(tmp_path / "trace.json")
    monkeypatch.setattr(time, "time", lambda: 10.0)  # 10,000 ms
    trace.record("0.1-fetched", [10_000 - age for age in range(1, 101)])  # ages 1..100 ms
    trace.ages["commit"].extend([5.0, 7.0])
    summary = trace.summary()
    assert summary["0.1-fetched"] == {"count": 100, "p50": 51.0, "p90": 91.0, "p99": 100.0}
    assert summary["commit"]["count"] == 2
    trace.write()
    assert json.loads((tmp_path / "trace.json").read_text()) == summary


def test_the_mode_is_off_without_the_variable_and_writes_its_file_at_exit_with_it(tmp_path: Path) -> None:
    code = ("from streamlet.metrics import latency_trace as t; import time;"
            "assert t.TRACE is not None; t.TRACE.record('x', [int(time.time() * 1000)])")
    target = tmp_path / "trace"
    subprocess.run([sys.executable, "-c", code], check=True, env={"STREAMLET_LATENCY_TRACE": str(target),
                                                                     "PATH": "/usr/bin:/bin"})
    (written,) = tmp_path.glob("trace.*")
    assert json.loads(written.read_text())["x"]["count"] == 1
    off = subprocess.run([sys.executable, "-c", "from streamlet.metrics import latency_trace as t; print(t.TRACE)"],
                         check=True, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert off.stdout.strip() == "None"
