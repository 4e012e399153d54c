"""`python -m benchmarks.restore`: how fast a system rebuilds a count store from its changelog.

    python -m benchmarks.restore                     # 1,000,000 changelog records, streamlet beside Kafka Streams
    python -m benchmarks.restore --quick             # 100,000 records
    python -m benchmarks.restore --systems streamlet --records 300000 --runs 2
    python -m benchmarks.restore --records 10000000 --keys 1000000   # production size: 10M records, 1M keys
    python -m benchmarks.restore --records 10000000 --keys 1000000 --system-cpus 0   # per core

Opt-in (not part of `make bench`; `make bench-restore` runs it): one broker, then for each system the
WordCount application of the suite (`wordcount_alos`, store `counts-store`, one streamlet worker, one
Kafka Streams thread) starts with an empty state directory on a changelog that was written beforehand,
so it has to restore all of it before it runs.

The changelog. Both systems log a count store the same way: key = the word's UTF-8 bytes, value = the
count as an 8-byte big-endian long, the record's timestamp = the stored timestamp (a timestamped store
puts it back in front of the value on restore), topic `<application id>-counts-store-changelog`,
partition = murmur2 of the key (the partition of the word's repartitioned records, so the task that owns
a word owns its count). The runner writes N such records over `--partitions` partitions (compacted
topic, as the systems create it; the broker does not compact an active segment, so all N are read):
K keys `w<k>` (`--keys`, N / 10 by default), each updated about N / K times with counts 1, 2, ...; record
i is key `w<i mod K>`. The records are generated as they are sent and the check samples 40 keys, so
neither the runner nor the check holds anything per record or per key (10M records take no more of its
memory than 100k).

What is measured. Each system says in its own log when restoration began and when the client went to
RUNNING (streamlet: the `ChangelogReader`'s "restoring N changelog records" line and the state
transition; Kafka Streams: `bench-mark` lines that benchmarks/java's Bench prints from a global restore
listener and a state listener). restore seconds = first restore start -> RUNNING, records/s = N / that.
Launch -> RUNNING (process start, JVM or interpreter, group join included) is reported beside it, and
so are the CPU seconds the process used between the two marks (the JVM's include its JIT and GC
threads), and the seconds its threads spent ready to run but waiting for a CPU (/proc schedstat; a
thread per core of waiting means the wall-clock time is the machine's load, not the system's work).
The records each system says it restored must add up to N.

Correctness. Once RUNNING, a few lines with sampled words are written to the input; the output count of
each must be its restored count + 1 (read `read_committed`). A system that restored wrong or missing
values, or read the changelog in a format it does not expect, fails there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import struct
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from benchmarks.kafka_bench import cpu_seconds, create_topics, peak_rss_mb, preload, process_tree
from benchmarks.measure import OutputReader, pin_systems, start, stop
from benchmarks.systems import SYSTEMS, RunSpec, System

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
STORE = "counts-store"  # the WordCount store of benchmarks/apps/streamlet_app.py and Bench.java
WORKLOAD = "wordcount_alos"
UPDATES_PER_KEY = 10
BASE_TS = int(time.time() * 1000) - 3_600_000  # recent: the broker must not expire the changelog by time
TS_SPAN_MS = 3_000_000
"""The records' timestamps rise over this span after BASE_TS, whatever their number: one millisecond per record
put 10,000,000 records hours in the future, which a Kafka 4 broker refuses (`log.message.timestamp.after.max.ms`,
one hour: InvalidTimestampError)."""
SAMPLE_WORDS = 40


def key_count(records: int, keys: int | None = None) -> int:
    """K, the distinct keys of the changelog: `keys` if given, else one per UPDATES_PER_KEY records."""
    return max(1, min(records, keys) if keys else records // UPDATES_PER_KEY)


def changelog(records: int, keys: int | None = None) -> Iterator[tuple[bytes, bytes, int]]:
    """The changelog records: (key, 8-byte count, timestamp); see the module docstring."""
    keys = key_count(records, keys)
    step = min(1.0, TS_SPAN_MS / max(1, records))
    for i in range(records):
        yield f"w{i % keys}".encode(), struct.pack(">q", i // keys + 1), BASE_TS + int(i * step)


def restored_count(records: int, k: int, keys: int | None = None) -> int:
    """The count of key `w<k>` after the whole changelog: how many records had it."""
    keys = key_count(records, keys)
    return records // keys + (1 if k < records % keys else 0)


# --- reading each system's marks out of its log -----------------------------------------------------------

_PY_TIME = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) "
_STREAMLET_START = re.compile(_PY_TIME + r"INFO streamlet\.kafka\.changelog_reader: task \S+: restoring \d+", re.M)
_STREAMLET_RESTORED = re.compile(r"INFO streamlet\.kafka\.changelog_reader: task \S+ restored (\d+) records")
_STREAMLET_RUNNING = re.compile(_PY_TIME + r"INFO \S+: state transition from \w+ to RUNNING", re.M)
_KS_START = re.compile(r"^bench-mark restore-start .* (\d+)$", re.M)
_KS_RESTORED = re.compile(r"^bench-mark restore-end \S+ \S+ (\d+) \d+$", re.M)
_KS_RUNNING = re.compile(r"^bench-mark state RUNNING (\d+)$", re.M)


def _py_ms(stamp: str) -> float:
    """A Python log line's asctime (local time) as epoch ms."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000


def marks(system: System, text: str) -> tuple[float | None, float | None, int]:
    """(first restore start ms, first RUNNING ms after it, records the system says it restored)."""
    if system.key.startswith("streamlet"):
        starts = [_py_ms(m) for m in _STREAMLET_START.findall(text)]
        runnings = [_py_ms(m) for m in _STREAMLET_RUNNING.findall(text)]
        restored = sum(int(n) for n in _STREAMLET_RESTORED.findall(text))
    else:
        starts = [float(m) for m in _KS_START.findall(text)]
        runnings = [float(m) for m in _KS_RUNNING.findall(text)]
        restored = sum(int(n) for n in _KS_RESTORED.findall(text))
    first = min(starts) if starts else None
    running = next((r for r in sorted(runnings) if first is not None and r >= first), None)
    return first, running, restored


def _run_queue_seconds(pid: int) -> float:
    """Seconds the process tree's threads spent ready to run but waiting for a CPU (schedstat's
    second field): on a shared machine, how much of a wall-clock time was other processes' turn."""
    total = 0
    for p in process_tree(pid):
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                total += int((task / "schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return total / 1e9


# --- one run ----------------------------------------------------------------------------------------------

async def verify(bootstrap: str, run: RunSpec, records: int, partitions: int, timeout: float,
                 keys: int | None = None) -> tuple[bool, str]:
    """Count a few sampled words once more: each output must be its restored count + 1."""
    keys = key_count(records, keys)
    sample = sorted({(k * 7919) % keys for k in range(SAMPLE_WORDS)})
    want = {f"w{k}".encode(): struct.pack(">q", restored_count(records, k, keys) + 1) for k in sample}
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        words = sorted(want)
        for i in range(0, len(words), 5):
            await producer.send_and_wait(run.input, b" ".join(words[i:i + 5]), partition=(i // 5) % partitions)
    finally:
        await producer.stop()
    reader = OutputReader(bootstrap, run.output)
    await reader.open()
    got: dict[bytes, bytes] = {}
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(got.get(k) != v for k, v in want.items()):
            for r in await reader.read_available(idle_ms=500):
                got[r.key] = r.value
    finally:
        await reader.close()
    wrong = [f"{k.decode()}: {struct.unpack('>q', got[k])[0] if len(got.get(k, b'')) == 8 else got.get(k)!r}, "
             f"expected {struct.unpack('>q', v)[0]}" for k, v in want.items() if got.get(k) != v]
    return not wrong, "; ".join(wrong[:5])


async def run_restore(system: System, bootstrap: str, workdir: Path, records: int, partitions: int,
                      timeout: float, keys: int | None = None) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:6]
    run = RunSpec(workload=WORKLOAD, bootstrap=bootstrap, app_id=f"restore-{system.key}-{run_id}",
                  input=f"restore-in-{system.key}-{run_id}", output=f"restore-out-{system.key}-{run_id}",
                  guarantee="at_least_once", commit_ms=1000, state_dir=workdir / f"state-{run_id}")
    topic = f"{run.app_id}-{STORE}-changelog"
    await create_topics(bootstrap, {run.input: partitions, run.output: partitions})
    await create_topics(bootstrap, {topic: partitions}, {"cleanup.policy": "compact"})
    t0 = time.monotonic()
    await preload(bootstrap, topic, partitions, changelog(records, keys))
    print(f"pre-loaded {records:,} records into {topic} in {time.monotonic() - t0:.1f}s", flush=True)
    row: dict[str, Any] = {"system": system.label, "system_key": system.key, "records": records,
                           "partitions": partitions, "keys": key_count(records, keys)}
    log_path = workdir / f"{run.app_id}.log"
    launched = time.time() * 1000
    proc, log = start(system, run, log_path)
    try:
        deadline = time.monotonic() + timeout
        first = running = None
        restored = 0
        cpu_at_start: float | None = None
        queued_at_start = 0.0
        while running is None:
            if proc.poll() is not None:
                raise RuntimeError(f"{system.label} exited (code {proc.returncode}); see {log_path}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{system.label}: not RUNNING after {timeout:.0f}s; see {log_path}")
            await asyncio.sleep(0.05)
            first, running, restored = marks(system, log_path.read_text(errors="replace"))
            if first is not None and cpu_at_start is None:
                cpu_at_start, queued_at_start = cpu_seconds(proc.pid), _run_queue_seconds(proc.pid)
        assert first is not None
        seconds = (running - first) / 1000
        rss, cpu = peak_rss_mb(proc.pid), cpu_seconds(proc.pid)
        # CPU seconds the process spent while restoring (sampled when the runner saw each mark, every
        # 50 ms): on a loaded machine a steadier measure of the work than the wall-clock seconds.
        if cpu is not None and cpu_at_start is not None:
            row["restore_cpu_s"] = round(cpu - cpu_at_start, 2)
            row["restore_run_queue_s"] = round(_run_queue_seconds(proc.pid) - queued_at_start, 2)
        correct, detail = await verify(bootstrap, run, records, partitions, 60.0, keys)
        if restored != records:
            correct, detail = False, f"restored {restored:,} records, not {records:,}; {detail}".strip("; ")
        row.update({"restore_s": round(seconds, 2), "records_per_s": round(records / seconds) if seconds > 0 else None,
                    "launch_to_running_s": round((running - launched) / 1000, 2), "restored": restored,
                    "peak_rss_mb": rss, "cpu_s": None if cpu is None else round(cpu, 1),
                    "correct": correct, "detail": detail, "log": str(log_path)})
    finally:
        stop(proc, log)
    return row


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    from streamlet.testing import LocalKafkaBroker

    systems = [SYSTEMS[s] for s in args.systems.split(",")]
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    for system in systems:
        system.provision()
    rows: list[dict[str, Any]] = []
    with LocalKafkaBroker(heap="1g") as broker:
        if args.system_cpus:
            pin_systems(args.system_cpus, broker.pid)
        for _ in range(args.runs):
            for system in systems:
                try:
                    row = await run_restore(system, broker.bootstrap_servers, workdir, args.records, args.partitions,
                                            args.timeout, args.keys)
                except Exception as exc:  # one broken system must not hide the others' results
                    row = {"system": system.label, "system_key": system.key, "records": args.records,
                           "correct": False, "error": str(exc)[-2000:]}
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def write_results(rows: list[dict[str, Any]], args: argparse.Namespace) -> Path:
    """benchmarks/results/restore.json; its rows are under "runs", not "results", so the suite's report
    (benchmarks/report.py, which reads every results file of `python -m benchmarks`) leaves it alone."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "restore.json"
    out.write_text(json.dumps({"command": " ".join(["python -m benchmarks.restore", *sys.argv[1:]]),
                               "records": args.records, "keys": key_count(args.records, args.keys),
                               "partitions": args.partitions,
                               "taken_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": rows},
                              indent=2) + "\n")
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| system | changelog records | keys | restore s | records/s | CPU s restoring | waiting for a CPU s "
             "| launch -> RUNNING s | correct |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        rate = f"{r['records_per_s']:,}" if r.get("records_per_s") else "-"
        verdict = "yes" if r.get("correct") else "NO: " + str(r.get("detail") or r.get("error", ""))[:200]
        lines.append(f"| {r['system']} | {r['records']:,} | {r.get('keys', 0):,} | {r.get('restore_s', '-')} "
                     f"| {rate} | "
                     f"{r.get('restore_cpu_s', '-')} | {r.get('restore_run_queue_s', '-')} | "
                     f"{r.get('launch_to_running_s', '-')} | {verdict} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.restore")
    parser.add_argument("--systems", default="streamlet,kafka-streams",
                        help="streamlet and Kafka Streams systems of benchmarks/systems.py")
    parser.add_argument("--records", type=int, default=1_000_000, help="changelog records")
    parser.add_argument("--keys", type=int, default=None, help="distinct keys (default: records / 10)")
    parser.add_argument("--quick", action="store_true", help="100,000 records")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1, help="runs of every system, interleaved")
    parser.add_argument("--timeout", type=float, default=600.0, help="per run, launch to RUNNING")
    parser.add_argument("--system-cpus", default="",
                        help="e.g. 0: the restoring system runs on these CPUs only, the broker and the runner on the "
                             "others (one streamlet worker and one Kafka Streams thread on one core each)")
    parser.add_argument("--workdir", default=str(REPO / ".cache" / "bench-restore"))
    args = parser.parse_args()
    if args.quick:
        args.records = 100_000
    rows = asyncio.run(main_async(args))
    print(f"wrote {write_results(rows, args)}")
    print(table(rows))


if __name__ == "__main__":
    main()
