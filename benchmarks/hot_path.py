"""WordCount's hot path in one process, without Kafka: CPU per record of the two sub-topologies' tasks.

End-to-end runs on this shared 2-core machine vary by 25% between two runs of the same code, which
hides any change worth less than that. This harness drives exactly what a streamlet worker runs per
record, minus the Kafka clients: the tasks are built as the runtime builds them
(`task_manager.new_runtime_task`: real `StreamTask`s, the persistent counts store with its record cache
and changelog, the task's share of `statestore.cache.max.bytes`), the input is the suite's own lines
(`benchmarks.workloads.word_lines`), batches are as large as `max.poll.records`, and every task is
committed (`prepare_commit`: caches flushed downstream and to the changelog) every `--commit-every`
lines, as the commit interval would at the worker's usual rate. Sub-topology 0's repartition output
is routed to sub-topology 1's task of the same partition, as the broker would deliver it.

    python -m benchmarks.hot_path [--lines 100000] [--partitions 8] [--commit-every 5000] [--runs 3]
    python -m benchmarks.hot_path --profile out.prof      # cProfile of one run

It reports whether the hot path ran compiled (mypyc) or as pure Python (`STREAMLET_PURE_PYTHON=1` forces
that), CPU µs per input line (min over runs) and, where valgrind is installed, instructions per line.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.workloads import word_lines

INPUT, OUTPUT, APP = "lines", "counts", "hot-path"
MAX_POLL_RECORDS = 2000
"""The suite's `max.poll.records` (benchmarks/systems.py)."""


def _build(state_root: Path, partitions: int, guarantee: str) -> tuple[list, list, object]:
    os.environ["BENCH_INPUT"], os.environ["BENCH_OUTPUT"] = INPUT, OUTPUT
    from benchmarks.apps.streamlet_app import wordcount
    from streamlet.config import StreamsConfig
    from streamlet.runtime.task_manager import new_runtime_task

    topology = wordcount()
    config = StreamsConfig({"application.id": APP, "bootstrap.servers": "unused:9092", "state.dir": str(state_root),
                            "processing.guarantee": guarantee, "max.poll.records": MAX_POLL_RECORDS})
    subs = sorted(topology.sub_topologies(), key=lambda s: s.id)

    def resolve(name: str) -> str:
        return f"{APP}-{name}" if name in topology.internal_topics else name

    cache_bytes = int(config["statestore.cache.max.bytes"]) // (len(subs) * partitions)
    tasks = [[new_runtime_task(topology, sub, p, config, state_root, resolve, lambda _t: partitions, cache_bytes)
              for p in range(partitions)] for sub in subs]
    for row in tasks:
        for task in row:
            task.initialize_stores()
            task.initialize_processors()
    return tasks[0], tasks[1], resolve("KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition")


def _repartition_topic(source_tasks: list) -> str:
    (topic,) = {t for t in source_tasks[0].sources_by_topic}
    return topic


def run(lines: list[bytes], partitions: int, commit_every: int, guarantee: str) -> tuple[float, int]:
    """One pass over `lines`; returns (CPU seconds, output records)."""
    from streamlet.actors.partition_group import RawRecord

    state_root = Path(tempfile.mkdtemp(prefix="hot-path-"))
    try:
        split, count, _ = _build(state_root, partitions, guarantee)
        rep_topic = _repartition_topic(count)
        offsets = [0] * partitions
        rep_offsets = [0] * partitions
        outputs = 0
        ts0 = int(time.time() * 1000)

        def move_output() -> int:
            """Route the split tasks' repartition output to the count tasks; count the final output."""
            n = 0
            for task in split:
                for (topic, p), recs in task.collector.drain().items():
                    assert topic == rep_topic, topic
                    base = rep_offsets[p]
                    batch = [RawRecord(topic, p, base + i, r.timestamp, r.key, r.value, r.headers)
                             for i, r in enumerate(recs)]
                    count[p].add_records(topic, p, batch)
                    rep_offsets[p] = base + len(recs)
            for task in count:
                task.process()
                for (topic, _p), recs in task.collector.drain().items():
                    if topic == OUTPUT:
                        n += len(recs)
            return n

        def commit_all() -> int:
            """A commit: the split tasks flush (their output moves on), then the count tasks (caches)."""
            n = 0
            for tasks in (split, count):
                for task in tasks:
                    task.prepare_commit()
                n += move_output()
            return n

        gc.collect()
        start = time.process_time()
        since_commit = 0
        for i in range(0, len(lines), MAX_POLL_RECORDS):
            chunk = lines[i:i + MAX_POLL_RECORDS]
            per_part: list[list[RawRecord]] = [[] for _ in range(partitions)]
            for j, line in enumerate(chunk):
                p = (i + j) % partitions
                per_part[p].append(RawRecord(INPUT, p, offsets[p], ts0 + i + j, None, line))
                offsets[p] += 1
            for p, batch in enumerate(per_part):
                split[p].add_records(INPUT, p, batch)
                split[p].process()
            outputs += move_output()
            since_commit += len(chunk)
            if since_commit >= commit_every:
                since_commit = 0
                outputs += commit_all()
        outputs += commit_all()
        cpu = time.process_time() - start
        for task in split + count:
            task.close(clean=True)
        return cpu, outputs
    finally:
        shutil.rmtree(state_root, ignore_errors=True)


def _instructions(argv: list[str], lines: int) -> int | None:
    """Instructions per line: callgrind's count for a one-run child over `lines` lines minus a zero-line
    one (start-up). Instruction counts barely move when other processes share the CPU; time does."""
    if shutil.which("valgrind") is None:
        return None

    def count(n: int) -> int | None:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
               "benchmarks.hot_path", *argv, "--runs", "1", "--lines", str(n), "--no-instructions"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        found = re.search(r"Collected : (\d+)", proc.stderr)
        return int(found.group(1)) if found else None

    full, base = count(lines), count(0)
    return None if full is None or base is None else (full - base) // lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--commit-every", type=int, default=5_000,
                    help="lines between commits (100 ms at ~50,000 lines/s; the at-least-once interval is 1 s)")
    ap.add_argument("--guarantee", default="exactly_once_v2", choices=["exactly_once_v2", "at_least_once"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", help="write a cProfile of one run here")
    ap.add_argument("--instruction-lines", type=int, default=10_000,
                    help="lines for the instruction count (callgrind runs about 50x slower)")
    ap.add_argument("--no-instructions", action="store_true", help="skip counting instructions with callgrind")
    args = ap.parse_args()

    lines = list(word_lines(args.lines))
    from streamlet.runtime.gc_tuning import tune_gc_for_streaming  # what `streamlet run` does at start-up
    tune_gc_for_streaming()
    if args.profile:
        import cProfile
        prof = cProfile.Profile()
        prof.runcall(run, lines, args.partitions, args.commit_every, args.guarantee)
        prof.dump_stats(args.profile)
        return
    import streamlet._compiled as compiled
    print(f"hot path: {compiled.REASON}")  # a stale build runs pure Python (see streamlet/_compiled.py): say which ran
    results = [run(lines, args.partitions, args.commit_every, args.guarantee) for _ in range(args.runs)]
    best = min(cpu for cpu, _ in results)
    n = max(1, args.lines)
    print(f"{args.lines} lines, {args.partitions} partitions, commit every {args.commit_every}: "
          f"{results[0][1]} output records; CPU s per run {[round(c, 3) for c, _ in results]}; "
          f"min {best * 1e6 / n:.2f} µs/line ({n / best if best else 0:,.0f} lines/s)")
    if not args.no_instructions and args.lines:
        argv = ["--partitions", str(args.partitions), "--commit-every", str(args.commit_every),
                "--guarantee", args.guarantee]
        instr = _instructions(argv, args.instruction_lines)
        if instr is not None:
            print(f"instructions: {instr:,} per line (callgrind, {args.instruction_lines} lines, start-up subtracted)")


if __name__ == "__main__":
    main()
