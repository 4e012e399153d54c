"""`python -m benchmarks wordcount [--records N]`: WordCount throughput on a real local broker.

Runs, one after the other on one freshly started broker and one pre-loaded input topic:
  1. the ceiling — a raw aiokafka consume→produce pipe (no processing);
  2. streamlet's WordCount at-least-once, in its own process via `streamlet run`;
  3. the same at exactly-once (`exactly_once_v2`, commit interval 100 ms);
  4. restore speed: a fresh instance of run 3's application with an empty state directory rebuilds
     the count store from its changelog (records/s as the ChangelogReader logs them).
Writes benchmarks/results/wordcount.json and prints a table for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.kafka_bench import create_topics, end_offsets, preload, wait_group_done, word_lines
from benchmarks.raw_pipe import run_pipe

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


async def bench_streamlet_wordcount(bootstrap: str, source: str, records: int, partitions: int,
                                    workdir: Path, guarantee: str = "at_least_once") -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:6]
    app_id = f"bench-wc-{run_id}"
    sink = f"bench-wc-out-{run_id}"
    await create_topics(bootstrap, {sink: partitions})
    env = dict(os.environ, PYTHONPATH=str(REPO), BENCH_INPUT=source, BENCH_OUTPUT=sink)
    eos = guarantee == "exactly_once_v2"
    settings = {
        "bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": str(workdir / app_id),
        "commit.interval.ms": 100 if eos else 1000, "max.poll.records": 2000, "processing.guarantee": guarantee,
    }
    args = [sys.executable, "-m", "streamlet", "run", "benchmarks.wordcount_app:topology"]
    for k, v in settings.items():
        args += ["--set", f"{k}={v}"]
    log = open(workdir / f"{app_id}.log", "wb")  # noqa: SIM115
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    repartition = f"{app_id}-counts-store-repartition"
    try:
        # The clock starts when the first record has gone through sub-topology 0.
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlet exited early: {(workdir / f'{app_id}.log').read_text()[-2000:]}")
            ends = await end_offsets(bootstrap, [repartition])
            if sum(ends.values()) > 0:
                started = time.monotonic()
                break
            if time.monotonic() > deadline:
                raise TimeoutError("streamlet produced nothing within 120 s")
            await asyncio.sleep(0.05)
        finished = await wait_group_done(bootstrap, app_id, [source, repartition], timeout=3600,
                                         transactional=(repartition,) if eos else ())
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = finished - started
    return {
        "system": "streamlet (1 worker)", "workload": "wordcount_eos" if eos else "wordcount_alos",
        "records": records, "app_id": app_id, "settings": settings,
        "env": {"BENCH_INPUT": source, "BENCH_OUTPUT": sink},
        "seconds": round(seconds, 2), "records_per_s": round(records / seconds),
        "peak_rss_mb": round(after.ru_maxrss / 1024), "cpu_s": round(
            (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 1),
    }


async def bench_restore(bootstrap: str, previous: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Start the application of a finished run again with an empty state directory and time how fast
    its tasks rebuild their stores from the changelog (the sum over tasks of records / seconds)."""
    settings = dict(previous["settings"], **{"state.dir": str(workdir / f"{previous['app_id']}-restore")})
    env = dict(os.environ, PYTHONPATH=str(REPO), **previous["env"])
    args = [sys.executable, "-m", "streamlet", "run", "benchmarks.wordcount_app:topology"]
    for k, v in settings.items():
        args += ["--set", f"{k}={v}"]
    log_path = workdir / f"{previous['app_id']}-restore.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 600
            while "to RUNNING" not in log_path.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"restore run failed: {log_path.read_text()[-2000:]}")
                await asyncio.sleep(0.2)
        finally:
            proc.terminate()
            proc.wait(60)
    found = re.findall(r"restored (\d+) records into \S+ in ([\d.]+)s", log_path.read_text())
    restored = sum(int(n) for n, _ in found)
    seconds = sum(float(t) for _, t in found)
    return {"system": "streamlet (1 worker)", "workload": "restore_from_changelog", "records": restored,
            "seconds": round(seconds, 2), "records_per_s": round(restored / seconds) if seconds else 0}


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    from streamlet.testing import LocalKafkaBroker

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    with LocalKafkaBroker() as broker:
        bootstrap = broker.bootstrap_servers
        source = "bench-lines"
        await create_topics(bootstrap, {source: args.partitions, "bench-pipe-out": args.partitions})
        t0 = time.monotonic()
        n = await preload(bootstrap, source, args.partitions,
                          word_lines(args.records, args.words_per_line, args.vocabulary))
        print(f"pre-loaded {n} records in {time.monotonic() - t0:.1f}s", flush=True)

        seconds = await run_pipe(bootstrap, source, "bench-pipe-out", n, group="bench-raw-pipe")
        results.append({"system": "raw aiokafka pipe (ceiling)", "workload": "pipe", "records": n,
                        "seconds": round(seconds, 2), "records_per_s": round(n / seconds)})
        print(results[-1], flush=True)

        for guarantee in ("at_least_once", "exactly_once_v2"):
            results.append(await bench_streamlet_wordcount(bootstrap, source, n, args.partitions, workdir, guarantee))
            print({k: v for k, v in results[-1].items() if k not in ("settings", "env")}, flush=True)
        results.append(await bench_restore(bootstrap, results[-1], workdir))
        print(results[-1], flush=True)
        for r in results:
            r.pop("settings", None)
            r.pop("env", None)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("workload", nargs="?", default="wordcount", choices=["wordcount"])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--words-per-line", type=int, default=3)
    parser.add_argument("--vocabulary", type=int, default=10_000)
    parser.add_argument("--workdir", default=str(REPO / ".cache" / "bench"))
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "wordcount.json"
    out.write_text(json.dumps({"command": " ".join(["python -m benchmarks", *sys.argv[1:]]),
                               "results": results}, indent=2) + "\n")
    print(f"\nwrote {out}\n")
    print("| system | workload | records | seconds | records/s |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['system']} | {r['workload']} | {r['records']} | {r['seconds']} | {r['records_per_s']} |")


if __name__ == "__main__":
    main()
