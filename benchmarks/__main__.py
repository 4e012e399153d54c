"""`python -m benchmarks wordcount [--records N] [--systems streamlet,kafka-streams]`: WordCount on a real broker.

Runs, one after the other on one freshly started broker and one pre-loaded input topic:
  1. the ceiling — a raw aiokafka consume→produce pipe (no processing);
  2. WordCount at-least-once, then exactly-once (`exactly_once_v2`, commit interval 100 ms), for each
     system: streamlet in its own process via `streamlet run`, and Kafka Streams 3.9.1 (Java, one stream
     thread; `benchmarks/java/`, built here with Maven) — the same topology, names and settings;
  3. restore speed: a fresh instance of streamlet's exactly-once application with an empty state
     directory rebuilds the count store from its changelog (records/s as the ChangelogReader logs them).
A run is timed from the first record in the repartition topic to the moment the group has committed
every input and repartition offset. Each system's output is then read `read_committed` and its final
counts compared with the true word counts (`correct`). Peak RSS and CPU seconds come from /proc.
Writes benchmarks/results/wordcount.json and prints a table for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import struct
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.kafka_bench import create_topics, end_offsets, preload, wait_group_done, word_lines
from benchmarks.raw_pipe import run_pipe
from examples.wordcount import split_words

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


JAVA_DIR = REPO / "benchmarks" / "java"


def build_java() -> list[str]:
    """Build the Kafka Streams side once (Maven, Java 17); returns the java command prefix."""
    classpath = JAVA_DIR / "target" / "classpath.txt"
    jar = JAVA_DIR / "target" / "streamlet-java-bench-0.1.0.jar"
    if not (classpath.exists() and jar.exists()):
        subprocess.run(["mvn", "-q", "-f", str(JAVA_DIR / "pom.xml"), "package", "dependency:build-classpath",
                        "-Dmdep.outputFile=target/classpath.txt"], check=True)
    return ["java", "-Xmx1g", "-cp", f"{jar}:{classpath.read_text().strip()}"]


def peak_rss_mb(pid: int) -> int | None:
    """The process's peak resident set (VmHWM), read just before it is stopped."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a running process, from /proc (clock ticks of 1/100 s on Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


async def latest_values(bootstrap: str, topic: str) -> dict[bytes, bytes]:
    """The last value per key in `topic`, read `read_committed` to its end."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                auto_offset_reset="earliest", isolation_level="read_committed")
    await consumer.start()
    latest: dict[bytes, bytes] = {}
    try:
        tps = [TopicPartition(topic, p) for p in (consumer.partitions_for_topic(topic) or set())]
        if not tps:
            await consumer._client.force_metadata_update()
            tps = [TopicPartition(topic, p) for p in (consumer.partitions_for_topic(topic) or set())]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        await consumer.seek_to_beginning(*tps)
        pending = {tp for tp in tps if ends[tp] > 0}
        while pending:
            batches = await consumer.getmany(*pending, timeout_ms=500, max_records=50_000)
            for records in batches.values():
                for r in records:
                    latest[r.key] = r.value
            pending = {tp for tp in pending if await consumer.position(tp) < ends[tp]}
    finally:
        await consumer.stop()
    return latest


async def bench_wordcount(bootstrap: str, source: str, records: int, partitions: int, workdir: Path,
                          expected: Counter[str], system: str = "streamlet",
                          guarantee: str = "at_least_once") -> dict[str, Any]:
    """Run one system's WordCount over the pre-loaded input and measure it (see the module docstring)."""
    run_id = uuid.uuid4().hex[:6]
    app_id = f"bench-wc-{run_id}"
    sink = f"bench-wc-out-{run_id}"
    await create_topics(bootstrap, {sink: partitions})
    eos = guarantee == "exactly_once_v2"
    commit_ms = 100 if eos else 1000
    state_dir = workdir / app_id
    settings = {
        "bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": str(state_dir),
        "commit.interval.ms": commit_ms, "max.poll.records": 2000, "processing.guarantee": guarantee,
    }
    env = dict(os.environ, PYTHONPATH=str(REPO), BENCH_INPUT=source, BENCH_OUTPUT=sink)
    if system == "streamlet":
        label = "streamlet (1 worker)"
        args = [sys.executable, "-m", "streamlet", "run", "benchmarks.wordcount_app:topology"]
        for k, v in settings.items():
            args += ["--set", f"{k}={v}"]
    else:
        label = "Kafka Streams 3.9.1 (Java, 1 thread)"
        args = [*build_java(), "io.streamlet.bench.WordCount", bootstrap, app_id, source, sink, guarantee,
                str(commit_ms), str(state_dir)]
    log_path = workdir / f"{app_id}.log"
    log = open(log_path, "wb")  # noqa: SIM115
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    repartition = f"{app_id}-counts-store-repartition"
    rss = cpu = None
    try:
        # The clock starts when the first record has gone through sub-topology 0.
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{label} exited early: {log_path.read_text()[-2000:]}")
            ends = await end_offsets(bootstrap, [repartition])
            if sum(ends.values()) > 0:
                started = time.monotonic()
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{label} produced nothing within 120 s")
            await asyncio.sleep(0.05)
        finished = await wait_group_done(bootstrap, app_id, [source, repartition], timeout=3600,
                                         transactional=(repartition,) if eos else ())
        rss, cpu = peak_rss_mb(proc.pid), cpu_seconds(proc.pid)
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()
    latest = await latest_values(bootstrap, sink)
    counts = {k.decode(): struct.unpack(">q", v)[0] for k, v in latest.items()}
    seconds = finished - started
    return {
        "system": label, "workload": "wordcount_eos" if eos else "wordcount_alos",
        "records": records, "app_id": app_id, "settings": settings,
        "env": {"BENCH_INPUT": source, "BENCH_OUTPUT": sink},
        "seconds": round(seconds, 2), "records_per_s": round(records / seconds),
        "peak_rss_mb": rss, "cpu_s": None if cpu is None else round(cpu, 1),
        "correct": counts == dict(expected),
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

        expected = Counter(w for line in word_lines(args.records, args.words_per_line, args.vocabulary)
                           for w in split_words(line.decode()))
        for guarantee in ("at_least_once", "exactly_once_v2"):
            for system in args.systems.split(","):
                results.append(await bench_wordcount(bootstrap, source, n, args.partitions, workdir, expected,
                                                     system, guarantee))
                print({k: v for k, v in results[-1].items() if k not in ("settings", "env")}, flush=True)
        streamlet_eos = [r for r in results if r["workload"] == "wordcount_eos" and r["system"].startswith("streamlet")]
        if streamlet_eos:
            results.append(await bench_restore(bootstrap, streamlet_eos[-1], workdir))
        print(results[-1], flush=True)
        for r in results:
            r.pop("settings", None)
            r.pop("env", None)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("workload", nargs="?", default="wordcount", choices=["wordcount"])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 records (a few minutes)")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--words-per-line", type=int, default=3)
    parser.add_argument("--vocabulary", type=int, default=10_000)
    parser.add_argument("--workdir", default=str(REPO / ".cache" / "bench"))
    parser.add_argument("--systems", default="streamlet,kafka-streams",
                        help="comma-separated: streamlet, kafka-streams")
    args = parser.parse_args()
    if args.quick:
        args.records = 100_000
    results = asyncio.run(main_async(args))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "wordcount.json"
    out.write_text(json.dumps({"command": " ".join(["python -m benchmarks", *sys.argv[1:]]),
                               "results": results}, indent=2) + "\n")
    print(f"\nwrote {out}\n")
    print("| system | workload | records | seconds | records/s | peak RSS MB | CPU s | correct |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['system']} | {r['workload']} | {r['records']} | {r['seconds']} | {r['records_per_s']} "
              f"| {r.get('peak_rss_mb', '')} | {r.get('cpu_s', '')} | {r.get('correct', '')} |")


if __name__ == "__main__":
    main()
