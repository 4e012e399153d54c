"""`make soak`: mixed faults at random moments against three exactly-once applications at once (issue #11).

One broker of its own and, in front of it, one toxiproxy proxy per app instance. Three applications
run side by side, two instances each, all under `exactly_once_v2` with caching off:
- WordCount (`tests.integration.wordcount_app`): every word's updates must read exactly 1..n;
- the 1-minute windowed count (`examples.bench_topologies_windows_join:window_count_topology`):
  every window's updates exactly 1..n;
- the stream-table join (`...:join_topology`): every event enriched exactly once.

While input flows at a steady rate, faults are injected one after another at random moments, in
shuffled rounds of the four kinds, so that each kind comes up in every round: kill -9 of a random
instance (restarted at once on its state directory), a freeze (SIGSTOP) past the session timeout,
the broker's JVM killed with SIGKILL and restarted, and a network cut of one instance longer than
its session timeout. Then the input stops, the output catches up, and everything is checked.

What counts as input is what the input topics hold (read back at the end), not what the harness
meant to send: a send that failed while the broker was down is simply not part of the truth.
The run ends with a table of the faults by kind and, per application, records in, updates out,
lost and duplicated; it exits 0 only when both are 0 everywhere and no instance crashed.

    python -m tests.integration.soak --minutes 30 [--seed N] [--rate RECORDS_PER_S]

The suite runs a short form, one round of the four faults (`tests/integration/test_soak.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import struct
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from examples.wordcount import split_words
from streamlet.testing.local_broker import LocalKafkaBroker, free_ports
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics
from tests.integration.chaos import VOCABULARY, check_sequences
from tests.integration.toxiproxy import Proxy, ToxiproxyServer, find_server

PARTITIONS = 4
INSTANCES = 2
SESSION_TIMEOUT_S = 6
USERS = [f"u{i:02d}" for i in range(40)]
WINDOW_MS = 60_000
FAULT_KINDS = ("kill -9", "freeze", "broker kill", "network cut")


# -- the three applications --------------------------------------------------------------------------

@dataclass
class _App:
    """One application under test: its topology, topics, instances and the proxies they connect through."""

    name: str
    target: str
    env: dict[str, str]
    input_topic: str
    output_topic: str
    instances: list[AppProcess] = field(default_factory=list)
    proxies: list[Proxy] = field(default_factory=list)


def _settings(app_id: str, bootstrap: str, state_dir: Path, serdes: bool) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": state_dir,
        "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0, "commit.interval.ms": 100,
        "session.timeout.ms": SESSION_TIMEOUT_S * 1000, "heartbeat.interval.ms": 1000,
    }
    if serdes:
        settings |= {"default.key.serde": "String", "default.value.serde": "String"}
    return settings


# -- input ---------------------------------------------------------------------------------------------

class _Inputs:
    """Makes each application's input records (the join's users table is written once, up front)."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._event_id = 0
        self._line_ts = 0

    def line(self) -> tuple[bytes | None, bytes, int | None]:
        """A line stamped with a timestamp of its own (the wall clock, but never the same twice): an
        output update carries its line's timestamp, so a line counted twice can be named afterwards."""
        words = " ".join(self._rng.choice(VOCABULARY) for _ in range(self._rng.randint(1, 6)))
        self._line_ts = max(self._line_ts + 1, int(time.time() * 1000))
        return None, words.encode(), self._line_ts

    def event(self) -> tuple[bytes | None, bytes, int | None]:
        """An event keyed by user, stamped with the wall clock: per partition the times only grow, so the
        windowed count (no grace) never sees a late record and every event counts."""
        self._event_id += 1
        user = self._rng.choice(USERS)
        value = orjson.dumps({"id": self._event_id, "user": user, "amount": self._event_id % 1000})
        return user.encode(), value, int(time.time() * 1000)


async def _produce_until(bootstrap: str, topic: str, make: Callable[[], tuple[bytes | None, bytes, int | None]],
                         rate: float, deadline: float, log: Callable[[str], Any]) -> None:
    """`rate` records a second until `deadline`, ten chunks a second. A chunk that fails (the broker is
    down) is dropped and logged: the truth is what the topic holds at the end."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all", enable_idempotence=True,
                                request_timeout_ms=15_000)
    await producer.start()
    try:
        per_tick = max(1, round(rate / 10))
        while time.monotonic() < deadline:
            tick = time.monotonic()
            try:
                futures = [await producer.send(topic, key=k, value=v, timestamp_ms=ts)
                           for k, v, ts in (make() for _ in range(per_tick))]
                await asyncio.gather(*futures)
            except Exception as exc:  # the broker was killed under us: carry on
                log(f"[soak] input chunk to {topic} not confirmed ({type(exc).__name__}); going on")
            await asyncio.sleep(max(0.0, tick + 0.1 - time.monotonic()))
    finally:
        await producer.stop()


async def _read_all(bootstrap: str, topic: str, isolation_level: str = "read_committed",
                    timeout: float = 120) -> list[Any]:
    """Every record of `topic` up to its current end."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                isolation_level=isolation_level, auto_offset_reset="earliest")
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        records: list[Any] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            positions = [await consumer.position(tp) for tp in parts]
            if all(pos >= ends[tp] for pos, tp in zip(positions, parts, strict=True)):
                return records
            for batch in (await consumer.getmany(timeout_ms=500, max_records=50_000)).values():
                records.extend(batch)
        raise TimeoutError(f"{topic}: not read to its end in {timeout:.0f}s")
    finally:
        await consumer.stop()


# -- faults ----------------------------------------------------------------------------------------------

class _Faults:
    """Injects the four kinds of fault, one at a time (see the module docstring)."""

    def __init__(self, broker: LocalKafkaBroker, apps: list[_App], rng: random.Random,
                 log: Callable[[str], Any]) -> None:
        self.broker = broker
        self.apps = apps
        self.rng = rng
        self.log = log
        self.injected: Counter[str] = Counter()

    def _victim(self) -> tuple[_App, int]:
        app = self.rng.choice(self.apps)
        return app, self.rng.randrange(len(app.instances))

    async def inject(self, kind: str) -> None:
        app, i = self._victim()
        instance = app.instances[i]
        if kind == "kill -9":
            instance.kill()
            await asyncio.sleep(self.rng.uniform(0.2, 1.5))
            instance.start()
            self.log(f"[soak] kill -9 of {app.name}[{i}], restarted")
        elif kind == "freeze":
            frozen_for = SESSION_TIMEOUT_S * 2
            instance.pause()
            await asyncio.sleep(frozen_for)
            instance.resume()
            self.log(f"[soak] froze {app.name}[{i}] for {frozen_for}s")
        elif kind == "broker kill":
            down_for = self.rng.uniform(2, 6)
            assert self.broker.pid is not None
            os.kill(self.broker.pid, signal.SIGKILL)
            await asyncio.to_thread(self.broker._stop_process)  # reaps the dead JVM; the ports stay ours
            await asyncio.sleep(down_for)
            await asyncio.to_thread(self.broker.start)
            self.log(f"[soak] broker killed with SIGKILL, back after {down_for:.1f}s")
        elif kind == "network cut":
            cut_for = SESSION_TIMEOUT_S * 2 + self.rng.uniform(0, 3)
            app.proxies[i].set_enabled(False)
            await asyncio.sleep(cut_for)
            app.proxies[i].set_enabled(True)
            self.log(f"[soak] cut {app.name}[{i}] off the broker for {cut_for:.1f}s")
        else:
            raise ValueError(kind)
        self.injected[kind] += 1

    async def run_until(self, deadline: float) -> None:
        """Shuffled rounds of all four kinds, with a random quiet gap before each fault. The first
        round always runs to its end, so even a short run meets every kind of fault once."""
        first_round = True
        while True:
            for kind in self.rng.sample(FAULT_KINDS, len(FAULT_KINDS)):
                await asyncio.sleep(self.rng.uniform(3, 8))
                if time.monotonic() >= deadline and not first_round:
                    return
                await self.inject(kind)
            first_round = False


# -- checks ----------------------------------------------------------------------------------------------

@dataclass
class AppVerdict:
    """One application's outcome: what went in, what came out, and what was lost or repeated."""

    name: str
    records_in: int
    updates_out: int
    lost: int
    duplicated: int
    detail: str
    in_order: bool = True  # every key's updates rose one by one (exactly-once's 1..n)
    crashed: list[int] = field(default_factory=list)  # instances that were not running at the end


def _sequence_verdict(name: str, records_in: int, sequences: dict[str, list[int]],
                      expected: Counter[str]) -> AppVerdict:
    """Counts read as update sequences, per key with true count n: lost = values of 1..n never seen,
    duplicated = updates beyond one per value of 1..n (repeats, and values past the truth). Order
    is checked too: `check_sequences` counts a value not above the highest so far as a repeat."""
    lost = duplicated = 0
    for key, n in expected.items():
        seq = sequences.get(key, [])
        seen = {v for v in seq if 1 <= v <= n}
        lost += n - len(seen)
        duplicated += len(seq) - len(seen)
    check = check_sequences(sequences, expected)
    return AppVerdict(name, records_in, sum(len(s) for s in sequences.values()), lost, duplicated, check.summary(),
                      in_order=check.exact)


async def _verdicts(bootstrap: str, wordcount: _App, window: _App, join: _App, settle: float) -> list[AppVerdict]:
    lines = [r.value.decode() for r in await _read_all(bootstrap, wordcount.input_topic, "read_uncommitted")]
    word_truth = Counter(w for ln in lines for w in split_words(ln))
    window_events = await _read_all(bootstrap, window.input_topic, "read_uncommitted")
    window_truth = Counter(f"{r.key.decode()}@{r.timestamp - r.timestamp % WINDOW_MS}" for r in window_events)
    join_events = await _read_all(bootstrap, join.input_topic, "read_uncommitted")
    join_truth = {orjson.loads(r.value)["id"] for r in join_events}

    deadline = time.monotonic() + settle
    while True:  # wait for the outputs to catch up (read_committed), then judge what is there
        word_seqs = _sequences(await _read_all(bootstrap, wordcount.output_topic))
        window_seqs = _sequences(await _read_all(bootstrap, window.output_topic))
        join_out = await _read_all(bootstrap, join.output_topic)
        caught_up = (all(max(word_seqs.get(w, [0])) >= n for w, n in word_truth.items())
                     and all(max(window_seqs.get(k, [0])) >= n for k, n in window_truth.items())
                     and {orjson.loads(r.value)["id"] for r in join_out} >= join_truth)
        if caught_up or time.monotonic() >= deadline:
            break
        await asyncio.sleep(2)
    join_ids = Counter(orjson.loads(r.value)["id"] for r in join_out)
    join_lost = len(join_truth - set(join_ids))
    join_dup = sum(n - 1 for n in join_ids.values()) + sum(1 for i in join_ids if i not in join_truth)
    return [
        _sequence_verdict("wordcount", len(lines), word_seqs, word_truth),
        _sequence_verdict("window_count", len(window_events), window_seqs, window_truth),
        AppVerdict("join", len(join_events), len(join_out), join_lost, join_dup,
                   f"{len(join_truth)} events, {len(join_ids)} distinct ids out"),
    ]


def _sequences(records: list[Any]) -> dict[str, list[int]]:
    seqs: dict[str, list[int]] = {}
    for r in records:
        seqs.setdefault(r.key.decode(), []).append(struct.unpack(">q", r.value)[0])
    return seqs


# -- the run ---------------------------------------------------------------------------------------------

@dataclass
class SoakResult:
    """What a soak run did and found; `ok` when nothing was lost, duplicated or crashed."""

    seconds: float
    faults: Counter[str]
    verdicts: list[AppVerdict]
    logs_dir: Path

    @property
    def ok(self) -> bool:
        return all(v.lost == 0 and v.duplicated == 0 and v.in_order and not v.crashed for v in self.verdicts)

    def table(self) -> str:
        rows = [f"soak: {self.seconds / 60:.1f} min; faults injected: "
                + ", ".join(f"{k} {self.faults[k]}" for k in FAULT_KINDS) + f" ({sum(self.faults.values())} in all)",
                f"{'application':<14}{'records in':>12}{'updates out':>13}{'lost':>7}{'duplicated':>12}  crashed",
                ]
        for v in self.verdicts:
            rows.append(f"{v.name:<14}{v.records_in:>12}{v.updates_out:>13}{v.lost:>7}{v.duplicated:>12}  "
                        f"{v.crashed or 'none'}")
        rows.append(f"logs: {self.logs_dir}")
        return "\n".join(rows)


async def run_soak(workdir: Path, *, minutes: float, seed: int = 1, rate: float = 100.0,
                   settle: float = 300.0, log: Callable[[str], Any] = print) -> SoakResult:
    rng = random.Random(seed)
    suffix = uuid.uuid4().hex[:8]
    proxy_ports = free_ports(3 * INSTANCES)
    with ToxiproxyServer(workdir / "toxiproxy.log", find_server()) as server, \
            LocalKafkaBroker(data_dir=workdir / "kafka", proxied_ports=proxy_ports) as broker:
        bootstrap = broker.bootstrap_servers
        module = "examples.bench_topologies_windows_join"
        apps = [
            _App("wordcount", "tests.integration.wordcount_app:topology",
                 {"WORDCOUNT_INPUT": f"soak-lines-{suffix}", "WORDCOUNT_OUTPUT": f"soak-counts-{suffix}"},
                 f"soak-lines-{suffix}", f"soak-counts-{suffix}"),
            _App("window_count", f"{module}:window_count_topology",
                 {"BENCH_INPUT": f"soak-wevents-{suffix}", "BENCH_OUTPUT": f"soak-wcounts-{suffix}"},
                 f"soak-wevents-{suffix}", f"soak-wcounts-{suffix}"),
            _App("join", f"{module}:join_topology",
                 {"BENCH_INPUT": f"soak-jevents-{suffix}", "BENCH_TABLE": f"soak-users-{suffix}",
                  "BENCH_OUTPUT": f"soak-joined-{suffix}"},
                 f"soak-jevents-{suffix}", f"soak-joined-{suffix}"),
        ]
        await create_topics(bootstrap, {t: PARTITIONS for a in apps for t in (a.input_topic, a.output_topic)}
                            | {f"soak-users-{suffix}": PARTITIONS})
        await _write_users(bootstrap, f"soak-users-{suffix}")
        ports = iter(proxy_ports)
        for app in apps:
            for i in range(INSTANCES):
                port = next(ports)
                proxy = server.create_proxy(f"{app.name}-{i}", port, f"127.0.0.1:{broker.proxied_upstreams[port]}")
                settings = _settings(f"soak-{app.name}-{suffix}", proxy.address, workdir / f"state-{app.name}-{i}",
                                     serdes=app.name == "wordcount")
                app.proxies.append(proxy)
                app.instances.append(AppProcess(app.target, settings, workdir / f"{app.name}-{i}.log", env=app.env))
        began = time.monotonic()
        try:
            for app in apps:
                for instance in app.instances:
                    instance.start()
            for app in apps:
                for instance in app.instances:
                    await instance.wait_for_log("to RUNNING", timeout=180)
            log(f"[soak] 3 applications x {INSTANCES} instances running; faults for {minutes:g} min")
            deadline = time.monotonic() + minutes * 60
            inputs = _Inputs(rng)
            faults = _Faults(broker, apps, rng, log)
            await asyncio.gather(
                _produce_until(bootstrap, apps[0].input_topic, inputs.line, rate, deadline, log),
                _produce_until(bootstrap, apps[1].input_topic, inputs.event, rate, deadline, log),
                _produce_until(bootstrap, apps[2].input_topic, inputs.event, rate, deadline, log),
                faults.run_until(deadline),
            )
            log(f"[soak] input stopped after {(time.monotonic() - began) / 60:.1f} min; checking the output")
            verdicts = await _verdicts(bootstrap, *apps, settle=settle)
        finally:
            alive = {(a.name, i): inst.proc is not None and inst.proc.poll() is None
                     for a in apps for i, inst in enumerate(a.instances)}
            codes = {(a.name, i): inst.stop() for a in apps for i, inst in enumerate(a.instances)
                     if inst.proc is not None}
        for v in verdicts:
            v.crashed = [i for i in range(INSTANCES) if not alive[(v.name, i)] or codes.get((v.name, i)) != 0]
        return SoakResult(time.monotonic() - began, faults.injected, verdicts, workdir)


async def _write_users(bootstrap: str, topic: str) -> None:
    """The join's table: every user known before the first event, stamped an hour back."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        then = int(time.time() * 1000) - 3_600_000
        futures = [await producer.send(topic, key=u.encode(), value=orjson.dumps({"user": u, "region": f"r{i % 5}"}),
                                       timestamp_ms=then) for i, u in enumerate(USERS)]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.integration.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--rate", type=float, default=100.0, help="records a second into each application")
    parser.add_argument("--keep", type=Path, default=None, help="where the logs stay (default: a new temp dir)")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="streamlet-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"[soak] seed {args.seed}, logs in {workdir}", flush=True)
    result = asyncio.run(run_soak(workdir, minutes=args.minutes, seed=args.seed, rate=args.rate,
                                  log=lambda m: print(m, flush=True)))
    print(result.table())
    for v in result.verdicts:
        print(f"  {v.name}: {v.detail}")
    raise SystemExit(0 if result.ok else 1)


if __name__ == "__main__":
    main()
