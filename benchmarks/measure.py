"""Measuring one system on one workload: throughput with a verified output, and latency at a fixed load.

Throughput. The clock starts when the system's consumer group is Stable with members: from then on it
consumes (process and JVM start-up are not counted; a system whose output shows up even earlier starts
the clock at its first output). The output topic is created with `message.timestamp.type=LogAppendTime`,
so every output record carries the moment the broker appended it, and nothing has to watch the output
(and take CPU from the system under test) while it runs: the runner only polls offsets, and the run is
over when the group has committed its whole input and the output has stopped growing. Then the output
is read from the start (`read_committed`) into the workload's Tracker: the clock stops at the latest
append time among the records read until the output was complete, and the verdict (`correct`) is the
Tracker's.
A run whose output and committed offsets stop moving for `stall_s` is ended there and reported as
stalled, and one that has committed its whole input while its output stays incomplete for `settled_s`
is ended as incomplete: a stuck system costs minutes of the suite's budget, not the whole `--timeout`.
Beside the rate: peak RSS and CPU seconds of the system's process tree, and the bytes under its state
directory at the end of the run and again after it was stopped (`state_disk_mb`, `state_disk_closed_mb`).

Latency. The input topic is fresh and empty; the runner writes 10,000 records/s into it (timestamp = the
moment of sending) while a consumer reads the output `read_committed` as it arrives. Until the system's
first output has arrived and its consumer group is Stable with all its members (two for streamlet with
two workers), only a trickle (100 records/s) is sent, so that start-up (a JVM's, a rebalance) does not
leave a backlog behind. Latency of an output record = its arrival time - its timestamp, which every
system sets to the timestamp of the input record it came from. Measured over the records sent during
`seconds` after the first output plus a warm-up; a system that has not delivered output from after that
window within `straggle_s` is reported as saturated (it could not keep up with the offered load).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from benchmarks import workloads as wl
from benchmarks.kafka_bench import (
    committed,
    cpu_seconds,
    create_topics,
    dir_mb,
    end_offsets,
    partitions_of,
    peak_rss_mb,
)
from benchmarks.systems import RunSpec, System, environment
from streamlet.runtime.parent_death import die_with_parent

REPO = Path(__file__).resolve().parents[1]


class Inputs:
    """The topics pre-loaded for a benchmark run."""

    def __init__(self, lines: str, events: str, users: str, records: int, keys: int | None = None,
                 updates: str = "", events_avro: str = "", registry: str | None = None,
                 schema_id: int | None = None, value_bytes: int = 0) -> None:
        self.lines, self.events, self.users, self.records = lines, events, users, records
        self.value_bytes = value_bytes  # `--value-bytes`: table_agg's update values padded to this size
        self.keys = keys  # `--keys`: the key cardinality the input was generated with (None: the usual)
        self.updates = updates
        self.events_avro = events_avro
        self.registry = registry  # the Avro workloads' schema registry (Confluent's API), else None
        self.schema_id = schema_id  # the id the Avro events' schema is registered under

    def of(self, workload: str) -> str:
        return {"lines": self.lines, "events": self.events, "updates": self.updates,
                "events_avro": self.events_avro}[wl.INPUT_OF[workload]]


SYSTEM_CPUS: set[int] | None = None
"""`python -m benchmarks --system-cpus`: the CPUs every system under test is confined to (with all its threads
and children), the broker and the runner having the others; None: no pinning."""


def start(system: System, run: RunSpec, log_path: Path) -> tuple[subprocess.Popen[bytes], Any]:
    log = open(log_path, "wb")  # noqa: SIM115 - closed by stop()
    # Its own process group (stop() kills the tree), and SIGKILL from Linux if the runner dies, so an
    # interrupted benchmark leaves no system running (`die_with_parent`; SIGKILL because a
    # system's clean shutdown may wait forever for a broker that died with the runner).
    proc = subprocess.Popen(system.command(run), cwd=REPO, env=environment(system, run), stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_pinned(die_with_parent(signal.SIGKILL), SYSTEM_CPUS))
    return proc, log


def _pinned(hook: Callable[[], None] | None, cpus: set[int] | None) -> Callable[[], None] | None:
    """`hook`, then (in the child, before exec) the child confined to `cpus`, which its threads inherit."""
    if cpus is None:
        return hook

    def pin() -> None:
        if hook is not None:
            hook()
        os.sched_setaffinity(0, cpus)
    return pin


def pin_systems(system_cpus: str, *service_pids: int | None) -> None:
    """`--system-cpus`: every system under test started after this runs on those CPUs only (see `start`);
    the services (`service_pids`: the broker, a registry) and this runner move to the other CPUs."""
    global SYSTEM_CPUS
    SYSTEM_CPUS = {int(c) for c in system_cpus.split(",")}
    others = set(range(os.cpu_count() or 1)) - SYSTEM_CPUS
    assert others, "--system-cpus must leave a CPU to the broker and the runner"
    for pid in (*service_pids, os.getpid()):
        if pid is not None:
            pin_process(pid, others)


def pin_process(pid: int, cpus: set[int]) -> None:
    """Confine every thread of a running process to `cpus` (threads it starts later inherit it)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:  # the thread ended meanwhile
            pass


def stop(proc: subprocess.Popen[bytes], log: Any) -> None:
    import os
    import signal

    # Everything was measured before this: a clean shutdown only costs the suite's time (faust and the
    # JVMs take seconds), so a system gets 3 s to close and is then killed.
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(3)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    except ProcessLookupError:
        pass
    log.close()


async def stable_members(admin: AIOKafkaAdminClient, group: str) -> int:
    """How many members the consumer group has once it is Stable (its assignment done); 0 before."""
    from aiokafka.errors import KafkaError

    try:
        responses = await admin.describe_consumer_groups([group])
    except KafkaError:
        return 0
    # DescribeGroups: (error_code, group_id, state, protocol_type, protocol, members, ...)
    return max((len(g[5]) for r in responses for g in r.groups if g[1] == group and g[2] == "Stable"), default=0)


async def group_stable(admin: AIOKafkaAdminClient, group: str) -> bool:
    return await stable_members(admin, group) > 0


class OutputReader:
    """Reads an output topic `read_committed` from the start, a piece at a time."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.consumer: AIOKafkaConsumer | None = None

    async def open(self) -> None:
        self.consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
                                         auto_offset_reset="earliest", isolation_level="read_committed",
                                         fetch_max_wait_ms=50, max_partition_fetch_bytes=4 << 20)
        await self.consumer.start()
        tps = await partitions_of(self.consumer, self.topic)
        for _ in range(100):  # a topic just created may not be in the metadata yet
            if tps:
                break
            await asyncio.sleep(0.1)
            tps = await partitions_of(self.consumer, self.topic)
        self.consumer.assign(tps)
        await self.consumer.seek_to_beginning(*tps)

    async def read_available(self, idle_ms: int = 1000) -> Iterator[Any]:
        """Everything readable now (stops after `idle_ms` without records)."""
        out: list[Any] = []
        async for records in self.batches_available(idle_ms):
            out.extend(records)
        return iter(out)

    async def batches_available(self, idle_ms: int = 1000) -> AsyncIterator[list[Any]]:
        """Everything readable now, a fetch at a time (stops after `idle_ms` without records): a scale run's
        millions of output records are judged as they come, never all held at once."""
        assert self.consumer is not None
        while True:
            batches = await self.consumer.getmany(timeout_ms=idle_ms, max_records=100_000)
            if not batches:
                return
            for records in batches.values():
                yield records

    async def close(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()


async def run_throughput(system: System, workload: str, inputs: Inputs, bootstrap: str, workdir: Path,
                         expected: wl.Expected, partitions: int, timeout: float,
                         stall_s: float = 120.0, settled_s: float = 30.0) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:6]
    run = RunSpec(workload=workload, bootstrap=bootstrap, app_id=f"bench-{workload}-{system.key}-{run_id}",
                  input=inputs.of(workload), output=f"out-{workload}-{system.key}-{run_id}",
                  guarantee=wl.guarantee(workload), commit_ms=wl.commit_ms(workload),
                  state_dir=workdir / f"state-{run_id}", table=inputs.users if workload == "join" else None,
                  registry=inputs.registry)
    await create_topics(bootstrap, {run.output: partitions}, {"message.timestamp.type": "LogAppendTime"})
    log_path = workdir / f"{run.app_id}.log"
    proc, log = start(system, run, log_path)
    tracker = expected.tracker()
    reader = OutputReader(bootstrap, run.output)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    first_ms = end_ms = latest_ms = None
    stable_ms: float | None = None
    rss = cpu = state_mb = None
    try:
        await admin.start()
        await reader.open()
        # The clock starts when the group has its members and an assignment: from there on the system
        # consumes (see the module docstring).
        start_deadline = time.monotonic() + 180
        while stable_ms is None and time.monotonic() < start_deadline and proc.poll() is None:
            if await group_stable(admin, run.app_id):
                stable_ms = time.time() * 1000
            else:
                await asyncio.sleep(0.05)
        deadline = time.monotonic() + timeout
        last_out, last_change = -1, time.monotonic()
        last_done, last_progress = -1, time.monotonic()
        stalled = False
        while True:
            if time.monotonic() > deadline:
                break
            if time.monotonic() - last_progress > stall_s:
                # Neither output nor committed input moved for stall_s: the run is stuck, not slow.
                stalled = True
                break
            if proc.poll() is not None:
                raise RuntimeError(f"{system.label} exited early (code {proc.returncode}); see {log_path}:\n"
                                   f"{log_path.read_text(errors='replace')[-3000:]}")
            await asyncio.sleep(0.5)
            ends_in = await end_offsets(bootstrap, [run.input])
            done = await committed(admin, run.app_id)
            ends_out = sum((await end_offsets(bootstrap, [run.output])).values())
            now = time.monotonic()
            if ends_out != last_out or sum(done.values()) != last_done:
                last_done, last_progress = sum(done.values()), now
            if ends_out != last_out:
                last_out, last_change = ends_out, now
            input_done = all(done.get(tp, -1) >= end for tp, end in ends_in.items() if end > 0)
            if input_done and now - last_change >= settled_s:
                break  # the whole input is committed and the output stopped short: incomplete, not slow
            if not (input_done and ends_out > 0 and now - last_change >= 1.0):
                continue
            # Records arrive partition by partition, not in append order: the clock stops at the latest
            # append time among the records read up to the one that completed the output (everything the
            # output needed had been appended by then), not at the completing record's own time.
            async for batch in reader.batches_available():
                for r in batch:
                    first_ms = r.timestamp if first_ms is None else min(first_ms, r.timestamp)
                    if not tracker.complete:
                        latest_ms = r.timestamp if latest_ms is None else max(latest_ms, r.timestamp)
                        tracker.add(r.key, r.value)
                        if tracker.complete:
                            end_ms = latest_ms
                    else:
                        tracker.add(r.key, r.value)
            if tracker.complete:
                break
        rss, cpu = peak_rss_mb(proc.pid), cpu_seconds(proc.pid)
        state_mb = dir_mb(run.state_dir)
    finally:
        stop(proc, log)
        await reader.close()
        await admin.close()
    # After the close too: Kafka Streams runs RocksDB without its write-ahead log, so until a memtable is
    # flushed (at close, or when its write buffers fill) its latest writes are in memory only, and the live figure
    # undercounts them; a close that outlasts stop()'s 3 s is killed and flushes nothing.
    closed_mb = dir_mb(run.state_dir)
    # Anything written after completion (a repeat) still counts against correctness.
    check = tracker.check()
    start_ms = first_ms if stable_ms is None or first_ms is None else min(stable_ms, first_ms)
    seconds = (end_ms - start_ms) / 1000 if start_ms is not None and end_ms is not None else None
    return {
        "system": system.label, "system_key": system.key, "workload": workload, "records": inputs.records,
        "seconds": None if seconds is None else round(seconds, 2),
        "records_per_s": round(inputs.records / seconds) if seconds else None,
        "peak_rss_mb": rss, "cpu_s": None if cpu is None else round(cpu, 1), "state_disk_mb": state_mb,
        "state_disk_closed_mb": closed_mb, "correct": check.correct and seconds is not None, "outputs": check.outputs,
        "duplicates": check.duplicates, "detail": check.detail or (
            (f"stalled: no progress for {stall_s:.0f} s" if stalled else "timed out") if seconds is None else ""),
        "log": str(log_path),
    }


def latency_record(workload: str, i: int, now_ms: int, rng: Any, keys: int | None = None,
                   schema_id: int | None = None, value_bytes: int = 0) -> tuple[bytes | None, bytes]:
    """Record `i` of a latency run's input, over the run's keys (`--keys`, else the usual ones); an Avro
    workload's event is written with the schema registered under `schema_id`."""
    if workload.startswith("wordcount"):
        return None, " ".join(f"w{rng.randrange(wl.WORDS if keys is None else keys)}" for _ in range(3)).encode()
    if workload == "table_agg":
        rows = wl.TABLE_ROWS if keys is None else keys
        return wl.update_record(rng.randrange(rows), rng.randrange(wl.groups_of(rows)), rng.randrange(1000),
                                value_bytes)
    key, value = wl.event(i, rng, keys)
    if wl.INPUT_OF[workload] == "events_avro":
        assert schema_id is not None, "an Avro workload's latency run needs the events' schema id"
        return key, wl.event_encoder(schema_id)(value)
    return key, orjson.dumps(value)


async def run_latency(system: System, workload: str, inputs: Inputs, bootstrap: str, workdir: Path,
                      partitions: int, rate: int = 10_000, seconds: float = 10.0,
                      warmup: float = 3.0, startup_timeout: float = 120.0,
                      straggle_s: float = 10.0) -> dict[str, Any]:
    """p50/p99 of (arrival - record timestamp) at `rate` records/s offered (see the module docstring)."""
    import random

    from streamlet.partitioner import default_partition

    run_id = uuid.uuid4().hex[:6]
    source = f"lat-in-{workload}-{system.key}-{run_id}"
    run = RunSpec(workload=workload, bootstrap=bootstrap, app_id=f"lat-{workload}-{system.key}-{run_id}",
                  input=source, output=f"lat-out-{workload}-{system.key}-{run_id}",
                  guarantee=wl.guarantee(workload), commit_ms=wl.commit_ms(workload),
                  state_dir=workdir / f"state-{run_id}", table=inputs.users if workload == "join" else None,
                  registry=inputs.registry)
    await create_topics(bootstrap, {source: partitions, run.output: partitions})
    log_path = workdir / f"{run.app_id}.log"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=1)
    await producer.start()
    reader = OutputReader(bootstrap, run.output)
    try:
        await reader.open()
    except BaseException:
        await producer.stop()
        await reader.close()
        raise
    assert reader.consumer is not None
    proc, log = start(system, run, log_path)
    latencies: list[float] = []
    state: dict[str, Any] = {"first_output": None, "measure_from": None, "measure_to": None, "sent": 0,
                             "ready": False}
    stop_sending = asyncio.Event()

    async def watch_group() -> None:
        """Full load only once the system is up: first output seen and every member in a Stable group."""
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            while not state["ready"] and not stop_sending.is_set():
                if state["first_output"] is not None and await stable_members(admin, run.app_id) >= system.members:
                    state["ready"] = True
                    state["measure_from"] = time.time() * 1000 + warmup * 1000
                    state["measure_to"] = state["measure_from"] + seconds * 1000
                    return
                await asyncio.sleep(0.1)
        finally:
            await admin.close()

    async def send() -> None:
        rng = random.Random(7)
        tick = 0.01
        per_tick = max(1, int(rate * tick))
        t0 = time.monotonic()
        n = 0
        while not stop_sending.is_set():
            now_ms = int(time.time() * 1000)
            # A trickle until the system's first output: its start-up must not become a backlog.
            for _ in range(per_tick if state["ready"] else 1):
                key, value = latency_record(workload, n, now_ms, rng, inputs.keys, inputs.schema_id,
                                            inputs.value_bytes)
                p = n % partitions if key is None else default_partition(key, partitions)
                await producer.send(source, value, key=key, partition=p, timestamp_ms=now_ms)
                n += 1
            state["sent"] = n
            t0 += tick
            delay = t0 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    quiet_ms = min(2.0, seconds) * 1000
    sender = asyncio.create_task(send())
    watcher = asyncio.create_task(watch_group())
    caught_up = saturated = False
    caught_up_at: float | None = None
    last_window_arrival = 0.0
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{system.label} exited early; see {log_path}")
            if time.monotonic() > deadline and state["measure_to"] is None:
                raise TimeoutError(f"{system.label}: not up (first output, all members) within {startup_timeout}s")
            batches = await reader.consumer.getmany(timeout_ms=100, max_records=10_000)
            arrival = time.time() * 1000
            for records in batches.values():
                for r in records:
                    if state["first_output"] is None:
                        state["first_output"] = arrival
                    if state["measure_from"] is None:
                        continue
                    if state["measure_from"] <= r.timestamp < state["measure_to"]:
                        latencies.append(arrival - r.timestamp)
                        last_window_arrival = arrival
                    if r.timestamp >= state["measure_to"] and caught_up_at is None:
                        caught_up_at = arrival
            # Caught up: output from after the window has arrived, and nothing of the window for 2 s since
            # (or for the window's own length, if shorter).
            caught_up = caught_up_at is not None and arrival >= max(caught_up_at, last_window_arrival) + quiet_ms
            if state["measure_to"] is not None and (caught_up or arrival >= state["measure_to"] + straggle_s * 1000):
                # Done once output from after the window arrives (the window's records are through; within a
                # partition output is in order), or after `straggle_s`: then the system could not keep up.
                saturated = not caught_up
                break
        rss, cpu = peak_rss_mb(proc.pid), cpu_seconds(proc.pid)
    finally:
        stop_sending.set()
        await sender
        await watcher
        await producer.stop()
        stop(proc, log)
        await reader.close()
    latencies.sort()

    def pct(q: float) -> float | None:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1) if latencies else None

    return {"system": system.label, "system_key": system.key, "workload": workload, "offered_per_s": rate,
            "measured_s": seconds, "samples": len(latencies), "saturated": saturated,
            "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "latency_cdf_ms": [pct(q / 100) for q in range(0, 100)] + [pct(0.999)], "latency_rss_mb": rss,
            "latency_cpu_s": cpu, "log": str(log_path)}
