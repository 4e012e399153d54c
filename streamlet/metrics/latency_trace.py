"""Where a record's latency goes: a debug mode that follows records' ages through the runtime's stages.

Issue #14 asks where the time between a record's creation and its output being readable is spent.
With `STREAMLET_LATENCY_TRACE=<file>` in the environment, the runtime notes each record's age
(wall clock minus the record's timestamp, which for input written "now" is its time since creation, and
which repartition and output records inherit) at each stage it passes, per sub-topology:

- `fetched` — the poll loop received it from the consumer;
- `processed` — its task finished the batch that held it (mailbox wait and processing included);
- `committed` — the commit that covers it finished (exactly-once: its output and its consumed offset
  are now readable `read_committed`).

Steps that hold records back are timed too (`commit` and its parts: `commit.flush-tasks`,
`commit.task-mailbox-wait`, `commit.task-prepare`, `commit.task-deliver`, `commit.produce-acks`,
`commit.offsets`, `commit.end-txn`, `commit.begin`), and so are the turns that decide how soon a fetched
record gets its turn: a task's batch (`task.process`, then `task.deliver`: handing its output to the
producer) and the poll loop's `loop.poll` and `loop.dispatch` (posting batches to the task mailboxes).

At exit the file gets, per stage, the count and the 50th/90th/99th percentiles in milliseconds. The
difference between consecutive stages is that stage's share. Off (the default) it costs one `is None`
test per batch. Not meant for production: it keeps every age in memory until exit.
"""

from __future__ import annotations

import atexit
import os
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import orjson


class LatencyTrace:
    """Ages (ms) of records per stage; written as percentiles to `path` at exit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ages: dict[str, list[float]] = defaultdict(list)
        self._window: list[float] = []  # wall and CPU seconds at the first and the latest record

    def record(self, stage: str, timestamps: Iterable[int]) -> None:
        now = time.time() * 1000
        self.ages[stage].extend(now - ts for ts in timestamps)
        mark = [now / 1000, time.process_time()]
        self._window = self._window[:2] + mark if self._window else mark + mark

    def duration(self, stage: str, started_ns: int) -> None:
        """Note how long a step took (ms), for steps that hold records back (a commit and its parts)."""
        self.ages[stage].append((time.perf_counter_ns() - started_ns) / 1e6)

    def summary(self) -> dict[str, dict[str, float]]:
        """Per stage: count and p50/p90/p99 (ms); `process`: CPU seconds per wall second meanwhile."""
        out: dict[str, dict[str, float]] = {}
        for stage, ages in sorted(self.ages.items()):
            ordered = sorted(ages)
            n = len(ordered)
            if not n:
                continue
            out[stage] = {"count": n, **{f"p{q}": round(ordered[min(n - 1, int(n * q / 100))], 1)
                                         for q in (50, 90, 99)}}
        if self._window:
            wall0, cpu0, wall1, cpu1 = self._window
            # How busy the process was while records flowed: CPU seconds per wall second (1.0 = a core).
            out["process"] = {"count": 1, "wall_s": round(wall1 - wall0, 2), "cpu_s": round(cpu1 - cpu0, 2),
                              "cpu_per_wall_s": round((cpu1 - cpu0) / (wall1 - wall0), 3) if wall1 > wall0 else 0.0}
        return out

    def write(self) -> None:
        self.path.write_bytes(orjson.dumps(self.summary(), option=orjson.OPT_INDENT_2))


def _from_environment() -> LatencyTrace | None:
    target = os.environ.get("STREAMLET_LATENCY_TRACE")
    if not target:
        return None
    trace = LatencyTrace(Path(f"{target}.{os.getpid()}"))
    atexit.register(trace.write)
    return trace


TRACE: LatencyTrace | None = _from_environment()
"""The process's trace, or None when the debug mode is off."""


def sub_topology_of(task_id: str) -> str:
    """'1_3' -> '1'."""
    return task_id.split("_", 1)[0]
