"""`python -m benchmarks.many_tasks`: what each task costs when one instance runs hundreds of them.

    python -m benchmarks.many_tasks --partitions 256          # 512 tasks: 256 source tasks, 256 counting tasks
    python -m benchmarks.many_tasks --partitions 32 --records 20000   # a smoke run

Opt-in. One broker; streamlet's WordCount of the suite (`wordcount_alos`: split, group by word through a
repartition topic, count in a LevelDB store with a changelog) on an input of `--partitions` partitions,
so the one instance (one worker) runs 2 x partitions tasks: the source sub-topology's and the counting
one's. Measured:

- start-up: launch -> RUNNING (the state transition in its log), creating the repartition and changelog
  topics and every task's store included;
- RSS idle: the resident set (VmRSS) `--idle` seconds after RUNNING, before any input;
- busy: `--records` lines of words written over every input partition, then the seconds until the group
  has committed every input offset, and the peak resident set meanwhile (VmHWM);
- commit time: the thread's commit-latency-avg and commit-total (its /metrics, at the end); a commit commits
  every task, so per task = commit-latency-avg / tasks.

It prints one JSON row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import socket
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient

from benchmarks.kafka_bench import committed, create_topics, end_offsets, peak_rss_mb, preload, process_tree
from benchmarks.measure import start, stop
from benchmarks.systems import SYSTEMS, RunSpec

_RUNNING = re.compile(r"state transition from \w+ to RUNNING")
_TASK_STARTED = re.compile(r"task (\d+_\d+) started")
WORDS = [f"w{i:04d}" for i in range(5000)]


def rss_mb(pid: int) -> int:
    """The process tree's resident set now (VmRSS), in MB."""
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return round(total / 1024)


def lines(records: int) -> Iterator[tuple[bytes | None, bytes, int]]:
    """Unkeyed lines of 5 words (round-robin over the partitions), generated as they are sent."""
    rng = random.Random(3)
    now = int(time.time() * 1000)
    for i in range(records):
        yield None, " ".join(rng.choice(WORDS) for _ in range(5)).encode(), now + i


def thread_metrics(http: str) -> dict[str, float]:
    """commit-latency-avg (ms) and commit-total of the stream thread(s), from /metrics."""
    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, float] = {}
    for name in ("commit_latency_avg", "commit_latency_max", "commit_total"):
        values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                  if line.startswith(f"kafka_streams_stream_thread_metrics_{name}{{")]
        if values:
            found[name] = max(values) if name != "commit_total" else sum(values)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_committed(bootstrap: str, group: str, topic: str, timeout: float) -> bool:
    """Wait until the group has committed the end offset of every partition of `topic`."""
    ends = await end_offsets(bootstrap, [topic])
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = await committed(admin, group)
            if all(done.get(tp, 0) >= end for tp, end in ends.items()):
                return True
            await asyncio.sleep(0.5)
        return False
    finally:
        await admin.close()


async def run(bootstrap: str, workdir: Path, partitions: int, records: int, idle: float, commit_ms: int,
              timeout: float) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:6]
    spec = RunSpec(workload="wordcount_alos", bootstrap=bootstrap, app_id=f"many-tasks-{run_id}",
                   input=f"many-tasks-in-{run_id}", output=f"many-tasks-out-{run_id}", guarantee="at_least_once",
                   commit_ms=commit_ms, state_dir=workdir / f"state-{run_id}")
    http = f"127.0.0.1:{free_port()}"
    base = SYSTEMS["streamlet"]
    system = replace(base, command=lambda r: [*base.command(r), "--http", http])
    await create_topics(bootstrap, {spec.input: partitions, spec.output: partitions})
    row: dict[str, Any] = {"partitions": partitions, "records": records, "commit_ms": commit_ms}
    log_path = workdir / f"{spec.app_id}.log"
    launched = time.monotonic()
    proc, log = start(system, spec, log_path)
    try:
        deadline = launched + timeout
        while not _RUNNING.search(log_path.read_text(errors="replace")):
            if proc.poll() is not None:
                raise RuntimeError(f"the app exited (code {proc.returncode}); see {log_path}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"not RUNNING after {timeout:.0f}s; see {log_path}")
            await asyncio.sleep(0.1)
        row["launch_to_running_s"] = round(time.monotonic() - launched, 2)
        row["tasks"] = len(set(_TASK_STARTED.findall(log_path.read_text(errors="replace"))))
        await asyncio.sleep(idle)
        row["rss_idle_mb"] = rss_mb(proc.pid)
        began = time.monotonic()
        await preload(bootstrap, spec.input, partitions, lines(records))
        row["all_committed"] = await wait_committed(bootstrap, spec.app_id, spec.input, timeout)
        row["busy_s"] = round(time.monotonic() - began, 2)
        row["rss_after_busy_mb"] = rss_mb(proc.pid)
        row["rss_peak_mb"] = peak_rss_mb(proc.pid)
        await asyncio.sleep(2 * commit_ms / 1000)  # a commit or two with nothing to do
        metrics = thread_metrics(http)
        row.update({f"thread_{k}": round(v, 3) for k, v in metrics.items()})
        if "commit_latency_avg" in metrics and row["tasks"]:
            row["commit_ms_per_task"] = round(metrics["commit_latency_avg"] / row["tasks"], 4)
        row["log"] = str(log_path)
    finally:
        stop(proc, log)
    shutil.rmtree(spec.state_dir, ignore_errors=True)
    return row


async def main_async(args: argparse.Namespace) -> None:
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    from streamlet.testing import LocalKafkaBroker

    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    with LocalKafkaBroker(heap="1g") as broker:
        row = await run(broker.bootstrap_servers, workdir, args.partitions, args.records, args.idle, args.commit_ms,
                        args.timeout)
        print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.many_tasks")
    parser.add_argument("--partitions", type=int, default=256, help="input partitions (tasks = 2 x this)")
    parser.add_argument("--records", type=int, default=200_000, help="input lines of the busy phase")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds after RUNNING before the idle RSS")
    parser.add_argument("--commit-ms", type=int, default=1000, help="commit.interval.ms")
    parser.add_argument("--timeout", type=float, default=900.0, help="to RUNNING, and to commit the input")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "bench-many-tasks"))
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
