"""`python -m benchmarks.eos_recovery`: recovery after a kill -9 under exactly-once, by state size.

    python -m benchmarks.eos_recovery --state-mb 100            # about 100 MB of state in one task's store
    python -m benchmarks.eos_recovery --state-mb 100 1000 5000 \\
        --systems streamlet,streamlet-full-rebuild,streamlet-behind,kafka-streams

Opt-in. `--systems` (default streamlet): `streamlet`; `streamlet-full-rebuild`, streamlet as it was before its
LevelDB stores kept only committed data under exactly-once: the killed task's directory loses the mark that
says so (`.transactional`, written by the state manager) before the restart, so the restart wipes the
task's state and rebuilds it from the whole changelog, as every restart after a kill -9 did then;
`streamlet-behind`, streamlet with a non-empty tail to restore: its task directory is copied at the kill -9,
a second run commits more transactions and is killed too, and the copy is put back before the restart (what
a power cut losing LevelDB's unsynced last write batches leaves: a store behind transactions its changelog
committed), so the restart restores every record the second run committed (`tail`: the committed changelog
records after the offset the store keeps, counted by the runner, which the restart must restore exactly); and
`kafka-streams`, Kafka Streams 4.4.0 (benchmarks/java's Bench, RocksDB) on the same steps, its restore and
state listener's `bench-mark` lines read as benchmarks/restore.py reads them. Whether a restart wiped its
state first is read from its log (`wiped`: streamlet's "wiping it", Kafka Streams' task-corruption warning).

One broker; WordCount (`wordcount_eos`, one partition, so one counting task holds
all the state) starts on a changelog written beforehand: `--state-mb` worth of distinct words of
`--key-bytes` each (count 1), which it restores once. Then words of a small vocabulary flow in while it
runs under exactly_once_v2 (commits every 100 ms), and after `--kill-after` seconds its process is killed
with SIGKILL, a transaction in flight. It is restarted on the same state directory; what is measured is
that restart: the changelog records it restored (its log's "restored N records" lines, Kafka Streams'
restore-end marks), seconds from the restart to RUNNING, and the store's size on disk before the restart.
A store rebuilt in full restores every record of the changelog; one that kept its committed data restores only the tail.

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

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from benchmarks.kafka_bench import create_topics, preload
from benchmarks.measure import OutputReader, start, stop
from benchmarks.restore import BASE_TS, marks
from benchmarks.systems import SYSTEMS, RunSpec, System
from streamlet.actors.state_manager import TRANSACTIONAL_MARKER
from streamlet.stores.leveldb.staging import read_committed_offset

STORE = "counts-store"
VOCABULARY = [f"v{i:03d}" for i in range(200)]


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


_RUNNING = {"streamlet": re.compile(r"state transition from \w+ to RUNNING"),
            "kafka-streams": re.compile(r"^bench-mark state RUNNING \d+$", re.M)}
_WIPED = {"streamlet": re.compile(r"local state without a checkpoint is not trusted; wiping it"),
          # Kafka Streams' ProcessorStateManager / TaskManager on a task whose state cannot be trusted
          "kafka-streams": re.compile(r"wipe out the local state|are corrupted\. Will close the task as dirty|"
                                      r"TaskCorruptedException", re.I)}
SYSTEM_KEYS = ("streamlet", "streamlet-full-rebuild", "streamlet-behind", "kafka-streams")
COUNTING_TASK = "1_0"  # WordCount's counting sub-topology's task (after the repartition), one partition


def engine(key: str) -> str:
    return "kafka-streams" if key == "kafka-streams" else "streamlet"


def system_for(key: str) -> System:
    """The system `key` of benchmarks/systems.py, with a short session timeout: a killed member stays in
    the group until it times out, and the restart should measure the restore rather than that wait."""
    if key == "kafka-streams":
        ks = SYSTEMS["kafka-streams"]
        return replace(ks, command=lambda run: [*ks.command(run), "--props",
                                                "session.timeout.ms=6000,heartbeat.interval.ms=1000"])
    base = SYSTEMS["streamlet"]
    return replace(base, key=key, command=lambda run: [*base.command(run), "--set", "session.timeout.ms=6000",
                                                       "--set", "heartbeat.interval.ms=1000"])


async def wait_running(key: str, proc: Any, log_path: Path, timeout: float, after: int = 0) -> float:
    """Wait for the state transition to RUNNING in the log from byte `after` on; returns when seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited (code {proc.returncode}); see {log_path}")
        if _RUNNING[engine(key)].search(log_path.read_bytes()[after:].decode(errors="replace")):
            return time.monotonic()
        await asyncio.sleep(0.05)
    raise TimeoutError(f"not RUNNING after {timeout:.0f}s; see {log_path}")


def forget_committed_marks(state_dir: Path) -> int:
    """streamlet's behaviour before its stores kept only committed data: remove the mark of every task
    directory, so that the restart wipes them. Returns how many it removed."""
    marks_found = list(state_dir.rglob(TRANSACTIONAL_MARKER))
    for mark in marks_found:
        mark.unlink()
    return len(marks_found)


def store_offset(store_dir: Path) -> int:
    """The changelog offset the (closed) LevelDB store in `store_dir` keeps."""
    import plyvel

    db = plyvel.DB(str(store_dir))
    try:
        offset = read_committed_offset(db)
    finally:
        db.close()
    if offset is None:
        raise RuntimeError(f"the store in {store_dir} keeps no changelog offset")
    return offset


async def committed_after(bootstrap: str, topic: str, offset: int) -> int:
    """The committed records of changelog `topic` (one partition) after `offset`."""
    tp = TopicPartition(topic, 0)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                isolation_level="read_committed")
    await consumer.start()
    try:
        consumer.assign([tp])
        stable = (await consumer.end_offsets([tp]))[tp]
        consumer.seek(tp, offset)
        count = 0
        while await consumer.position(tp) < stable:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=50_000)
            count += sum(1 for r in batch.get(tp, []) if r.offset < stable)
        return count
    finally:
        await consumer.stop()


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


async def run_once(key: str, bootstrap: str, workdir: Path, state_mb: int, key_bytes: int, kill_after: float,
                   timeout: float) -> dict[str, Any]:
    system = system_for(key)
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
    print(f"{key}: pre-loaded {keys:,} records of {key_bytes + 8} bytes into {topic} in {time.monotonic() - t0:.1f}s",
          flush=True)
    lines = [" ".join(VOCABULARY[(i * 7 + j) % len(VOCABULARY)] for j in range(5)).encode() for i in range(4000)]
    expected = Counter(w.encode() for line in lines for w in line.decode().split())
    row: dict[str, Any] = {"system": key, "state_mb": state_mb, "key_bytes": key_bytes, "keys": keys}
    log_path = workdir / f"{run.app_id}.log"
    proc, log = start(system, run, log_path)
    behind = key == "streamlet-behind"
    try:
        await wait_running(key, proc, log_path, timeout)
        producing = asyncio.create_task(produce_words(bootstrap, run.input, lines, 2 * kill_after))
        await asyncio.sleep(kill_after / 2 if behind else kill_after)
        os.killpg(proc.pid, signal.SIGKILL)  # a transaction in flight
        proc.wait()
    finally:
        log.close()
    row["first_run_restored"] = marks(system, log_path.read_text(errors="replace"))[2]
    if behind:
        # The task's directory as this kill left it; a second run commits more, is killed, and the copy is
        # put back: the store's last write batches lost, their transactions committed in the changelog.
        task_dir, copy = run.state_dir / run.app_id / COUNTING_TASK, workdir / f"copy-{run_id}"
        shutil.copytree(task_dir, copy)
        offset = store_offset(copy / STORE)
        second_log = workdir / f"{run.app_id}-second.log"
        proc, log = start(system, run, second_log)
        try:
            await wait_running(key, proc, second_log, timeout)
            await asyncio.sleep(kill_after / 2)
            deadline = time.monotonic() + timeout
            while not await committed_after(bootstrap, topic, offset):  # a tail, however loaded the machine
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the second run committed nothing in {timeout:.0f}s; see {second_log}")
                await asyncio.sleep(0.5)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            log.close()
        shutil.rmtree(task_dir)
        shutil.move(copy, task_dir)
        row["tail"] = await committed_after(bootstrap, topic, offset)
    row["state_on_disk_mb"] = disk_mb(run.state_dir)
    if key == "streamlet-full-rebuild":
        row["marks_removed"] = forget_committed_marks(run.state_dir)
    restart_log = workdir / f"{run.app_id}-restart.log"
    launched = time.monotonic()
    proc, log = start(system, run, restart_log)
    try:
        running = await wait_running(key, proc, restart_log, timeout)
        text = restart_log.read_text(errors="replace")
        first, ran, restored = marks(system, text)
        await producing
        correct, detail = await check_output(bootstrap, run.output, expected, 120.0)
        row.update({"restart_restored": restored, "restart_to_running_s": round(running - launched, 2),
                    "restore_s": round((ran - first) / 1000, 2) if first is not None and ran is not None else 0.0,
                    "wiped": bool(_WIPED[engine(key)].search(text)),
                    "correct": correct, "detail": detail, "log": str(restart_log)})
        if "tail" in row and restored != row["tail"]:
            row.update(correct=False, detail=f"restored {restored:,} records, not the tail of {row['tail']:,}; "
                                             f"{detail}".strip("; "))
    finally:
        stop(proc, log)
    shutil.rmtree(run.state_dir, ignore_errors=True)
    return row


async def main_async(args: argparse.Namespace) -> None:
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    from streamlet.testing import LocalKafkaBroker

    unknown = set(args.systems.split(",")) - set(SYSTEM_KEYS)
    if unknown:
        raise SystemExit(f"--systems: unknown {', '.join(sorted(unknown))}; known: {', '.join(SYSTEM_KEYS)}")
    if "kafka-streams" in args.systems.split(","):
        SYSTEMS["kafka-streams"].provision()
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    with LocalKafkaBroker(heap="1g") as broker:
        for state_mb in args.state_mb:
            for key in args.systems.split(","):
                try:
                    row = await run_once(key, broker.bootstrap_servers, workdir, state_mb, args.key_bytes,
                                         args.kill_after, args.timeout)
                except Exception as exc:  # one broken system must not hide the others' results
                    row = {"system": key, "state_mb": state_mb, "correct": False, "error": str(exc)[-2000:]}
                print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.eos_recovery")
    parser.add_argument("--systems", default="streamlet", help=f"comma-separated, of {', '.join(SYSTEM_KEYS)}")
    parser.add_argument("--state-mb", type=int, nargs="+", default=[100], help="state sizes to run, in MB")
    parser.add_argument("--key-bytes", type=int, default=1000, help="bytes per stored word")
    parser.add_argument("--kill-after", type=float, default=4.0, help="seconds of input before the kill -9")
    parser.add_argument("--timeout", type=float, default=1200.0, help="per start, launch to RUNNING")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "bench-eos-recovery"))
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
