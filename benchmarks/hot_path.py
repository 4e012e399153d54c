"""A workload's hot path in one process, without Kafka: CPU per record of its tasks.

End-to-end runs on this shared 2-core machine vary by 25% between two runs of the same code, which
hides any change worth less than that. This harness drives exactly what a streamlet worker runs per
record, minus the Kafka clients: the tasks are built as the runtime builds them
(`task_manager.new_runtime_task`: real `StreamTask`s, the persistent counts store with its record cache
and changelog, the task's share of `statestore.cache.max.bytes` as `task_manager.cache_bytes_per_task`
splits it), the input is the suite's own lines (`benchmarks.workloads.word_lines`), batches are as large
as `max.poll.records`, and every task is committed (`prepare_commit`: caches flushed downstream and to the
changelog) every `--commit-every` lines, as the commit interval would at the worker's usual rate.
Sub-topology 0's repartition output is routed to sub-topology 1's task of the same partition, as the
broker would deliver it.

    python -m benchmarks.hot_path [--lines 100000] [--partitions 8] [--commit-every 5000] [--runs 3]
    python -m benchmarks.hot_path --profile out.prof      # cProfile of one run
    python -m benchmarks.hot_path --lines 2000000 --keys 2000000   # WordCount over 2,000,000 distinct words

`--workload NAME` drives one of the suite's workloads over its events instead (`pipe`, `window_count`,
`join`, `session_count`, `stream_join`: `benchmarks.apps.streamlet_app`, one sub-topology each) over the
suite's own events (`benchmarks.workloads.events`, partitioned by the key's murmur2 as the producer does;
`join` loads the users table into its tasks before the clock starts), at-least-once as in the suite,
committed every `--commit-every` events (default 30,000: the 1 s commit interval at Kafka Streams' rate), and
judges the output as the end-to-end runs do (`benchmarks.workloads.Expected`) after every timed run. Its
instruction count subtracts a child that generates the same events and builds the tasks but processes
nothing, so the count is the tasks' alone (WordCount's subtracts a zero-line child, as it always has, so its
numbers stay comparable).

`--keys N` sets the key cardinality as `python -m benchmarks --keys N` does (WordCount's vocabulary, the
events' users, the join's table rows; default: the suite's usual 10,000 words and 1,000 users).

It reports whether the hot path ran compiled (mypyc) or as pure Python (`STREAMLET_PURE_PYTHON=1` forces
that), CPU µs per input line or event (min over runs) and, where valgrind is installed, instructions per
line or event.
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
EVENTS = "events"
WORKLOADS = ("wordcount", "pipe", "window_count", "join", "session_count", "stream_join")
"""`wordcount`: WordCount at `--guarantee` (the suite's wordcount_eos by default); the others: the suite's."""
MAX_POLL_RECORDS = 2000
"""The suite's `max.poll.records` (benchmarks/systems.py)."""


TRACE_SAMPLE: float | None = None
"""`--trace-sample R`: WordCount with `tracing.enabled` and `tracing.root.sample.ratio` R, the SDK's
parentbased_always_on sampler and a batch span processor whose exporter drops the spans (what tracing costs the
process, without a collector)."""


def _set_up_tracing() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased

    class _Dropped(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider(sampler=ParentBased(ALWAYS_ON))
    provider.add_span_processor(BatchSpanProcessor(_Dropped()))
    trace.set_tracer_provider(provider)


def _build(state_root: Path, partitions: int, guarantee: str) -> tuple[list, list, object]:
    os.environ["BENCH_INPUT"], os.environ["BENCH_OUTPUT"] = INPUT, OUTPUT
    from benchmarks.apps.streamlet_app import wordcount
    from streamlet.config import StreamsConfig
    from streamlet.runtime.task_manager import cache_bytes_per_task, new_runtime_task

    topology = wordcount()
    config = StreamsConfig({"application.id": APP, "bootstrap.servers": "unused:9092", "state.dir": str(state_root),
                            "processing.guarantee": guarantee, "max.poll.records": MAX_POLL_RECORDS,
                            "tracing.enabled": TRACE_SAMPLE is not None,
                            "tracing.root.sample.ratio": 1.0 if TRACE_SAMPLE is None else TRACE_SAMPLE})
    subs = sorted(topology.sub_topologies(), key=lambda s: s.id)

    def resolve(name: str) -> str:
        return f"{APP}-{name}" if name in topology.internal_topics else name

    cache_bytes = cache_bytes_per_task(config, topology, [sub for sub in subs for _p in range(partitions)])
    tasks = [[new_runtime_task(topology, sub, p, config, state_root, resolve, lambda _t: partitions, cache_bytes)
              for p in range(partitions)] for sub in subs]
    for row in tasks:
        for task in row:
            task.initialize_stores()
            task.initialize_processors()
            task.state.begin_transactions()  # exactly-once: the stores stage the open transaction's writes
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
            for task in split + count:  # the transaction committed: staged writes go to LevelDB
                task.post_commit({}, generation=task.state.generation)
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


Event = tuple[bytes, bytes, int]
"""(key, JSON value, timestamp): one of `benchmarks.workloads.events`."""

EVENT_WORKLOADS = ("pipe", "window_count", "join", "session_count", "stream_join")
"""The suite's workloads over its events (keyed by user already: one sub-topology each, no repartition)."""
TABLE = "users"
"""The `join` workload's table topic (`benchmarks.workloads.users`), loaded into each task before timing."""


def _build_events(workload: str, state_root: Path, partitions: int) -> list:
    """The workload's tasks, one per partition, built and opened as the runtime does."""
    os.environ["BENCH_INPUT"], os.environ["BENCH_OUTPUT"], os.environ["BENCH_TABLE"] = EVENTS, OUTPUT, TABLE
    from benchmarks.apps import streamlet_app
    from benchmarks.workloads import guarantee
    from streamlet.config import StreamsConfig
    from streamlet.runtime.task_manager import cache_bytes_per_task, new_runtime_task

    topology = getattr(streamlet_app, workload)()
    config = StreamsConfig({"application.id": APP, "bootstrap.servers": "unused:9092", "state.dir": str(state_root),
                            "processing.guarantee": guarantee(workload), "max.poll.records": MAX_POLL_RECORDS})
    (sub,) = topology.sub_topologies()
    cache_bytes = cache_bytes_per_task(config, topology, [sub] * partitions)
    tasks = [new_runtime_task(topology, sub, p, config, state_root, lambda name: name, lambda _t: partitions,
                              cache_bytes) for p in range(partitions)]
    for task in tasks:
        task.initialize_stores()
        task.initialize_processors()
    return tasks


def _partitions_of(records: list[Event], partitions: int) -> dict[bytes, int]:
    """Each key's partition (its murmur2, as the producer chose it), worked out before the clock starts."""
    from streamlet.partitioner import default_partition

    return {key: default_partition(key, partitions) for key in {k for k, _v, _t in records}}


def _feed(tasks: list, topic: str, records: list[Event], part_of: dict[bytes, int], offsets: list[int]) -> None:
    """Hands one poll's records to their partitions' tasks and processes them."""
    from streamlet.actors.partition_group import RawRecord

    per_part: list[list[RawRecord]] = [[] for _ in range(len(offsets))]
    for key, value, ts in records:
        p = part_of[key]
        per_part[p].append(RawRecord(topic, p, offsets[p], ts, key, value))
        offsets[p] += 1
    for p, batch in enumerate(per_part):
        if batch:
            tasks[p].add_records(topic, p, batch)
            tasks[p].process()


def run_events(workload: str, evs: list[Event], partitions: int, commit_every: int,
               keys: int | None = None) -> tuple[float, list[tuple[bytes | None, bytes | None]]]:
    """One pass of an events workload over `evs`; returns (CPU seconds, its output records in order).
    Batches are `max.poll.records` events of the input in order, split by partition as a poll returns them;
    `join`'s table is loaded (and committed) before the clock starts."""
    from benchmarks.workloads import users

    state_root = Path(tempfile.mkdtemp(prefix="hot-path-"))
    try:
        tasks = _build_events(workload, state_root, partitions)
        output: list[tuple[bytes | None, bytes | None]] = []

        def drain() -> None:
            for task in tasks:
                for (topic, _p), recs in task.collector.drain().items():
                    if topic == OUTPUT:  # else a store's changelog
                        output.extend((r.key, r.value) for r in recs)

        if workload == "join":
            table = list(users(keys))
            _feed(tasks, TABLE, table, _partitions_of(table, partitions), [0] * partitions)
            for task in tasks:
                task.prepare_commit()
            drain()
        offsets = [0] * partitions
        part_of = _partitions_of(evs, partitions)
        gc.collect()
        start = time.process_time()
        since_commit = 0
        for i in range(0, len(evs), MAX_POLL_RECORDS):
            chunk = evs[i:i + MAX_POLL_RECORDS]
            _feed(tasks, EVENTS, chunk, part_of, offsets)
            drain()
            since_commit += len(chunk)
            if since_commit >= commit_every:
                since_commit = 0
                for task in tasks:
                    task.prepare_commit()
                drain()
        for task in tasks:
            task.prepare_commit()
        drain()
        cpu = time.process_time() - start
        for task in tasks:
            task.close(clean=True)
        return cpu, output
    finally:
        shutil.rmtree(state_root, ignore_errors=True)


def _check_events(workload: str, output: list[tuple[bytes | None, bytes | None]], records: int,
                  partitions: int, keys: int | None = None) -> str:
    """'' when the output is the suite's expected one (`benchmarks.workloads.Expected`, judged as the
    end-to-end runs judge it), else what differs."""
    from benchmarks.workloads import Expected

    tracker = Expected(workload, records, partitions=partitions, keys=keys).tracker()
    for key, value in output:
        tracker.add(key, value)
    verdict = tracker.check()
    return "" if verdict.correct else verdict.detail


def _instructions(argv: list[str], lines: int, baseline: str = "empty") -> int | None:
    """Instructions per line: callgrind's count for a one-run child over `lines` lines minus a baseline child's
    (start-up): one over zero lines (`baseline="empty"`), or one that generates the same `lines` of input and
    processes none of it (`"input"`). Instruction counts barely move when other processes share the CPU; time does."""
    if shutil.which("valgrind") is None:
        return None

    def count(n: int, *extra: str) -> int | None:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
               "benchmarks.hot_path", *argv, "--runs", "1", "--lines", str(n), "--no-instructions", "--no-check",
               *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        found = re.search(r"Collected : (\d+)", proc.stderr)
        return int(found.group(1)) if found else None

    full = count(lines)
    base = count(0) if baseline == "empty" else count(lines, "--input-only")
    return None if full is None or base is None else (full - base) // lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="wordcount", choices=WORKLOADS)
    ap.add_argument("--lines", type=int, default=100_000, help="input lines (WordCount) or events (session_count)")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--keys", type=int, default=None,
                    help="key cardinality: WordCount's vocabulary, the events' users, the join's table rows "
                         "(default: 10,000 words, 1,000 users)")
    ap.add_argument("--commit-every", type=int, default=None,
                    help="lines between commits; WordCount: 5,000 (100 ms at ~50,000 lines/s; the at-least-once "
                         "interval is 1 s); session_count: 30,000 events (its 1 s interval at ~30,000 events/s)")
    ap.add_argument("--guarantee", default="exactly_once_v2", choices=["exactly_once_v2", "at_least_once"],
                    help="WordCount's (the session count is at-least-once, as in the suite)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trace-sample", type=float, default=None,
                    help="WordCount traced (tracing.enabled), sampling this share of its records (0.01: 1%%)")
    ap.add_argument("--profile", help="write a cProfile of one run here")
    ap.add_argument("--instruction-lines", type=int, default=10_000,
                    help="lines for the instruction count (callgrind runs about 50x slower)")
    ap.add_argument("--no-instructions", action="store_true", help="skip counting instructions with callgrind")
    ap.add_argument("--input-only", action="store_true", help=argparse.SUPPRESS)  # the session count's baseline
    ap.add_argument("--no-check", action="store_true", help=argparse.SUPPRESS)  # callgrind's children
    args = ap.parse_args()
    on_events = args.workload != "wordcount"
    if args.trace_sample is not None:
        global TRACE_SAMPLE
        TRACE_SAMPLE = args.trace_sample
        _set_up_tracing()
    commit_every = args.commit_every or (30_000 if on_events else 5_000)

    if on_events:
        from benchmarks.workloads import events
        evs = [] if args.input_only else list(events(args.lines, keys=args.keys))

        def one_run() -> tuple[float, int]:
            cpu, output = run_events(args.workload, evs, args.partitions, commit_every, args.keys)
            if not args.no_check:  # not in callgrind's children: the check costs as much as the run
                wrong = _check_events(args.workload, output, args.lines, args.partitions, args.keys)
                if wrong:
                    raise SystemExit(f"{args.workload}: wrong output: {wrong}")
            return cpu, len(output)
    else:
        lines = list(word_lines(args.lines, keys=args.keys))

        def one_run() -> tuple[float, int]:
            return run(lines, args.partitions, commit_every, args.guarantee)
    from streamlet.runtime.gc_tuning import tune_gc_for_streaming  # what `streamlet run` does at start-up
    tune_gc_for_streaming()
    if args.profile:
        import cProfile
        prof = cProfile.Profile()
        prof.runcall(one_run)
        prof.dump_stats(args.profile)
        return
    import streamlet._compiled as compiled
    print(f"hot path: {compiled.REASON}")  # a stale build runs pure Python (see streamlet/_compiled.py): say which ran
    results = [one_run() for _ in range(args.runs)]
    best = min(cpu for cpu, _ in results)
    n = max(1, args.lines)
    unit = "event" if on_events else "line"
    checked = " (output as expected)" if on_events and not args.no_check else ""
    keys = "" if args.keys is None else f", {args.keys} keys"
    print(f"{args.workload}: {args.lines} {unit}s{keys}, {args.partitions} partitions, commit every {commit_every}: "
          f"{results[0][1]} output records{checked}; CPU s per run "
          f"{[round(c, 3) for c, _ in results]}; min {best * 1e6 / n:.2f} µs/{unit} "
          f"({n / best if best else 0:,.0f} {unit}s/s)")
    if not args.no_instructions and args.lines:
        argv = ["--workload", args.workload, "--partitions", str(args.partitions), "--commit-every", str(commit_every),
                "--guarantee", args.guarantee, *(["--keys", str(args.keys)] if args.keys is not None else []),
                *(["--trace-sample", str(args.trace_sample)] if args.trace_sample is not None else [])]
        instr = _instructions(argv, args.instruction_lines, "input" if on_events else "empty")
        if instr is not None:
            print(f"instructions: {instr:,} per {unit} (callgrind, {args.instruction_lines} {unit}s, "
                  f"{'input generation and ' if on_events else ''}start-up subtracted)")


if __name__ == "__main__":
    main()
