"""`python -m benchmarks.eos_recovery`: recovery after a kill -9 under exactly-once, by state size.

    python -m benchmarks.eos_recovery --state-mb 100            # about 100 MB of state in one task's store
    python -m benchmarks.eos_recovery --state-mb 1000 --key-bytes 1000

Opt-in, streamlet only. One broker; WordCount (`wordcount_eos`, one partition, so one counting task holds
all the state) starts on a changelog written beforehand: `--state-mb` worth of distinct words of
`--key-bytes` each (count 1), which it restores once. Then words of a small vocabulary flow in while it
runs under exactly_once_v2 (commits every 100 ms), and after `--kill-after` seconds its process is killed
with SIGKILL, a transaction in flight. It is restarted on the same state directory; what is measured is
that restart: the changelog records it restored (its log's "restored N records" lines), seconds from the
restart to RUNNING, and the store's size on disk before the restart. A store rebuilt in full restores
every record of the changelog; one that kept its committed data restores only the tail.

Correctness: the output is read `read_committed` and every vocabulary word's counts must rise (the record
cache merges updates, so steps may be skipped, never repeated) and end at n, its count in the input.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import re
import shutil
import signal
import struct
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from benchmarks.kafka_bench import create_topics, preload
from benchmarks.measure import OutputReader, start, stop
from benchmarks.restore import BASE_TS, marks
from benchmarks.systems import SYSTEMS, RunSpec

STORE = "counts-store"
VOCABULARY = [f"v{i:03d}" for i in range(200)]
_RESTORED = re.compile(r"changelog_reader: task \S+ restored (\d+) records")


def state_keys(state_mb: int, key_bytes: int) -> int:
    return max(1, state_mb * 1_000_000 // (key_bytes + 8))


def changelog(keys: int, key_bytes: int) -> Iterator[tuple[bytes, bytes, int]]:
    """Distinct words of `key_bytes` (a number, then random base64 that LevelDB's compression cannot
    shrink much), each counted once."""
    one = struct.pack(">q", 1)
    rng = random.Random(17)
    for i in range(keys):
        head = f"w{i:09d}-".encode()
        yield (head + base64.b64encode(rng.randbytes(key_bytes)))[:key_bytes], one, BASE_TS + i


def disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


async def produce_words(bootstrap: str, topic: str, lines: list[bytes], seconds: float) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
    await producer.start()
    try:
        chunk = max(1, len(lines) // int(seconds * 10))
        began = time.monotonic()
        for i in range(0, len(lines), chunk):
            await asyncio.gather(*[await producer.send(topic, line) for line in lines[i:i + chunk]])
            await asyncio.sleep(max(0.0, began + seconds * (i + chunk) / len(lines) - time.monotonic()))
    finally:
        await producer.stop()


async def wait_running(proc: Any, log_path: Path, timeout: float, after: int = 0) -> float:
    """Wait for the state transition to RUNNING in the log from byte `after` on; returns when seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited (code {proc.returncode}); see {log_path}")
        if re.search(r"state transition from \w+ to RUNNING", log_path.read_bytes()[after:].decode(errors="replace")):
            return time.monotonic()
        await asyncio.sleep(0.05)
    raise TimeoutError(f"not RUNNING after {timeout:.0f}s; see {log_path}")


async def check_output(bootstrap: str, topic: str, expected: Counter[bytes], timeout: float) -> tuple[bool, str]:
    reader = OutputReader(bootstrap, topic)
    await reader.open()
    seen: dict[bytes, list[int]] = {}
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(max(seen.get(w, [0])) < n for w, n in expected.items()):
            for r in await reader.read_available(idle_ms=500):
                seen.setdefault(r.key, []).append(struct.unpack(">q", r.value)[0])
    finally:
        await reader.close()

    def exact(counts: list[int], n: int) -> bool:  # the record cache merges updates: rising, ending at n
        return bool(counts) and counts[-1] == n and all(a < b for a, b in pairwise(counts))

    wrong = [f"{w.decode()}: {seen.get(w, [])[-12:]} of {n}" for w, n in expected.items()
             if not exact(seen.get(w, []), n)]
    return not wrong, f"{len(wrong)} words not counted exactly: {wrong[:3]}" if wrong else ""


async def run_once(bootstrap: str, workdir: Path, state_mb: int, key_bytes: int, kill_after: float,
                   timeout: float) -> dict[str, Any]:
    base = SYSTEMS["streamlet"]
    # A killed member stays in the group until its session times out: short, so that the restart measures
    # the restore rather than the wait.
    system = replace(base, command=lambda run: [*base.command(run), "--set", "session.timeout.ms=6000",
                                                 "--set", "heartbeat.interval.ms=1000"])
    run_id = uuid.uuid4().hex[:6]
    run = RunSpec(workload="wordcount_eos", bootstrap=bootstrap, app_id=f"eos-recovery-{run_id}",
                  input=f"eos-recovery-in-{run_id}", output=f"eos-recovery-out-{run_id}",
                  guarantee="exactly_once_v2", commit_ms=100, state_dir=workdir / f"state-{run_id}")
    topic = f"{run.app_id}-{STORE}-changelog"
    await create_topics(bootstrap, {run.input: 1, run.output: 1})
    await create_topics(bootstrap, {topic: 1}, {"cleanup.policy": "compact"})
    keys = state_keys(state_mb, key_bytes)
    t0 = time.monotonic()
    await preload(bootstrap, topic, 1, changelog(keys, key_bytes))
    print(f"pre-loaded {keys:,} records of {key_bytes + 8} bytes into {topic} in {time.monotonic() - t0:.1f}s",
          flush=True)
    lines = [" ".join(VOCABULARY[(i * 7 + j) % len(VOCABULARY)] for j in range(5)).encode() for i in range(4000)]
    expected = Counter(w.encode() for line in lines for w in line.decode().split())
    row: dict[str, Any] = {"state_mb": state_mb, "key_bytes": key_bytes, "keys": keys}
    log_path = workdir / f"{run.app_id}.log"
    proc, log = start(system, run, log_path)
    try:
        await wait_running(proc, log_path, timeout)
        producing = asyncio.create_task(produce_words(bootstrap, run.input, lines, 2 * kill_after))
        await asyncio.sleep(kill_after)
        os.killpg(proc.pid, signal.SIGKILL)  # a transaction in flight
        proc.wait()
    finally:
        log.close()
    row["first_run_restored"] = sum(int(n) for n in _RESTORED.findall(log_path.read_text(errors="replace")))
    row["state_on_disk_mb"] = disk_mb(run.state_dir)
    restart_log = workdir / f"{run.app_id}-restart.log"
    launched = time.monotonic()
    proc, log = start(system, run, restart_log)
    try:
        running = await wait_running(proc, restart_log, timeout)
        text = restart_log.read_text(errors="replace")
        first, ran, _ = marks(system, text)
        await producing
        correct, detail = await check_output(bootstrap, run.output, expected, 120.0)
        row.update({"restart_restored": sum(int(n) for n in _RESTORED.findall(text)),
                    "restart_to_running_s": round(running - launched, 2),
                    "restore_s": round((ran - first) / 1000, 2) if first is not None and ran is not None else 0.0,
                    "correct": correct, "detail": detail, "log": str(restart_log)})
    finally:
        stop(proc, log)
    shutil.rmtree(run.state_dir, ignore_errors=True)
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
        for state_mb in args.state_mb:
            row = await run_once(broker.bootstrap_servers, workdir, state_mb, args.key_bytes, args.kill_after,
                                 args.timeout)
            print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.eos_recovery")
    parser.add_argument("--state-mb", type=int, nargs="+", default=[100], help="state sizes to run, in MB")
    parser.add_argument("--key-bytes", type=int, default=1000, help="bytes per stored word")
    parser.add_argument("--kill-after", type=float, default=4.0, help="seconds of input before the kill -9")
    parser.add_argument("--timeout", type=float, default=1200.0, help="per start, launch to RUNNING")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "bench-eos-recovery"))
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
