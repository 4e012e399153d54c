"""The chaos run of issue #3: WordCount in two processes, killed with SIGKILL at random moments.

Input lines flow into a 4-partition topic at a steady rate while, every few seconds, one of the two
app instances is killed without warning and restarted on the same state directory. When all input is
in and the output has caught up, the output topic is read `read_committed` and every word's sequence
of count updates is checked: under exactly-once it must be exactly 1, 2, ..., n with n the true count;
under at-least-once no count may end below the truth.

Under at-least-once the check is only "no input lost" (see `SequenceCheck.no_loss` for why repeats,
gaps and overcounts are all possible there, as in Kafka Streams).

Used by `tests/integration/test_chaos.py` (short form) and by `make chaos` (long form):

    python -m tests.integration.chaos --words 2000000 --kills 12 [--guarantee at_least_once]
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from examples.wordcount import split_words
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics

TARGET = "tests.integration.wordcount_app:topology"
VOCABULARY = [f"w{i:03d}" for i in range(300)]


@dataclass
class SequenceCheck:
    """What the output says about each word's update sequence."""

    words: int = 0
    updates: int = 0
    repeats: int = 0  # an update whose value was already seen for the word
    gaps: list[str] = field(default_factory=list)  # an update that jumps past max-so-far + 1
    undercounts: list[str] = field(default_factory=list)  # final count below the truth: lost input
    overcounts: list[str] = field(default_factory=list)  # final count above it: input counted twice
    missing_words: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not (self.repeats or self.gaps or self.undercounts or self.overcounts or self.missing_words)

    @property
    def no_loss(self) -> bool:
        """What at-least-once promises: no input lost, so no count ends below the truth. Input replayed
        after a crash counts twice (overcounts, repeats), and an update message can be missing from the
        output (a gap) when the crash came after the store's changelog record was written but before the
        output record was: the restored count is then ahead, and the replay emits the next value. Kafka
        Streams' at_least_once has both properties; only exactly-once rules them out."""
        return not (self.undercounts or self.missing_words)

    def summary(self) -> str:
        return (f"{self.words} words, {self.updates} updates: {self.repeats} repeats, {len(self.gaps)} gaps "
                f"{self.gaps[:3]}, {len(self.undercounts)} undercounts {self.undercounts[:3]}, "
                f"{len(self.overcounts)} overcounts {self.overcounts[:3]}, "
                f"{len(self.missing_words)} missing {self.missing_words[:3]}")


def check_sequences(sequences: dict[str, list[int]], expected: Counter[str]) -> SequenceCheck:
    check = SequenceCheck(words=len(expected))
    for word, n in expected.items():
        seq = sequences.get(word)
        if not seq:
            check.missing_words.append(word)
            continue
        check.updates += len(seq)
        top = 0
        for v in seq:
            if v <= top:
                check.repeats += 1
            elif v > top + 1:
                check.gaps.append(f"{word}: {top} -> {v}")
            top = max(top, v)
        if top < n:
            check.undercounts.append(f"{word}: {top} < {n}")
        elif top > n or seq[-1] != n:
            check.overcounts.append(f"{word}: {seq[-1]} (max {top}) != {n}")
    return check


def make_lines(words: int, rng: random.Random) -> list[str]:
    lines, total = [], 0
    while total < words:
        k = min(rng.randint(1, 6), words - total)
        lines.append(" ".join(rng.choice(VOCABULARY) for _ in range(k)))
        total += k
    return lines


_INPUT_DELIVERY_TIMEOUT_MS = 600_000
"""How long the harness's input producer keeps a batch while the broker is down or leaderless."""


async def produce_steadily(bootstrap: str, topic: str, lines: list[str], seconds: float) -> None:
    """Write `lines` spread evenly over about `seconds`, in small acknowledged chunks."""
    # aiokafka has no delivery.timeout.ms: a batch fails with LeaderNotAvailableError (or
    # NotLeaderForPartitionError) once it is older than request_timeout_ms (default 40 s) while the
    # metadata shows no leader. A KRaft broker fences itself on a clean stop (its partitions go
    # leaderless until it is back and unfenced), and on a loaded machine stop + start took ~2 minutes,
    # so a batch queued at the stop expired as soon as the returned broker's metadata was read. Give
    # the batches a lifetime longer than any restart in these tests instead of resending: a resend
    # could duplicate a batch the broker had written before the connection dropped.
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all", enable_idempotence=True,
                                request_timeout_ms=_INPUT_DELIVERY_TIMEOUT_MS)
    await producer.start()
    try:
        chunks = max(1, int(seconds * 10))
        size = max(1, len(lines) // chunks + 1)
        began = time.monotonic()
        for i in range(0, len(lines), size):
            futures = [await producer.send(topic, value=ln.encode()) for ln in lines[i:i + size]]
            await asyncio.gather(*futures)
            due = began + seconds * (i + size) / len(lines)
            await asyncio.sleep(max(0.0, due - time.monotonic()))
    finally:
        await producer.stop()


async def read_sequences(bootstrap: str, topic: str, expected: Counter[str], timeout: float,
                         progress: Any = None) -> dict[str, list[int]]:
    """Read the output `read_committed` until every word reached its count (or the timeout)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False, group_id=None, isolation_level="read_committed")
    await consumer.start()
    sequences: dict[str, list[int]] = {}
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500, max_records=50_000)
            for records in batch.values():
                for r in records:
                    sequences.setdefault(r.key.decode(), []).append(struct.unpack(">q", r.value)[0])
            if progress is not None:
                progress(sequences)
            if all(max(sequences.get(w, [0])) >= n for w, n in expected.items()):
                # Caught up: one more short read so that trailing duplicates would show.
                batch = await consumer.getmany(timeout_ms=2000)
                for records in batch.values():
                    for r in records:
                        sequences.setdefault(r.key.decode(), []).append(struct.unpack(">q", r.value)[0])
                return sequences
        return sequences
    finally:
        await consumer.stop()


@dataclass
class ChaosResult:
    guarantee: str
    words: int
    disruptions: int
    seconds: float
    check: SequenceCheck
    logs: list[str]
    # Per instance: whether it was still running when the run ended (a crashed app is not restarted by
    # anything but a disruption that does so on purpose), and its exit code once stopped.
    alive_at_end: list[bool] = field(default_factory=list)
    exit_codes: list[int | None] = field(default_factory=list)


Disruption = Callable[[list[AppProcess], random.Random, float, Callable[[str], Any]], Awaitable[int]]
"""Runs while the input is produced (over the given seconds); returns how many disruptions it made."""


def kill_randomly(kills: int) -> Disruption:
    """`kills` SIGKILLs of a random instance, at random moments spread over the production window,
    each followed by a restart on the same state directory."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        began = time.monotonic()
        slot = seconds / kills
        for k in range(kills):
            await asyncio.sleep(slot * rng.uniform(0.5, 1.0))
            victim = apps[rng.randrange(len(apps))]
            victim.kill()
            log(f"[chaos] kill -9 #{k + 1} of {victim.log_path.name} at {time.monotonic() - began:.1f}s")
            await asyncio.sleep(rng.uniform(0.2, 1.5))
            victim.start()
        return kills

    return disrupt


def freeze_one(after: float, frozen_for: float) -> Disruption:
    """SIGSTOP one instance for `frozen_for` seconds (longer than its session timeout), then SIGCONT:
    its partitions move away meanwhile, and when it wakes it must be fenced, not commit."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        await asyncio.sleep(after)
        victim = apps[0]
        victim.pause()
        log(f"[chaos] SIGSTOP {victim.log_path.name} for {frozen_for:.0f}s")
        await asyncio.sleep(frozen_for)
        victim.resume()
        log(f"[chaos] SIGCONT {victim.log_path.name}")
        return 1

    return disrupt


def restart_broker(broker: Any, after: float, down_for: float = 3.0) -> Disruption:
    """Stop the broker mid-run (a clean stop: the JVM exits), keep it down a moment, start it again on
    the same port with the same data."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        await asyncio.sleep(after)
        log("[chaos] stopping the broker")
        await asyncio.to_thread(broker._stop_process)
        await asyncio.sleep(down_for)
        await asyncio.to_thread(broker.start)
        log("[chaos] broker back")
        return 1

    return disrupt


def kill_broker(broker: Any, after: float, down_for: float) -> Disruption:
    """SIGKILL the broker's JVM mid-run (with exactly-once's 100 ms commits a transaction is always
    open), keep it down for `down_for` seconds, then start it again on the same port and data: the
    apps must wait, say what they wait for, and continue by themselves."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        await asyncio.sleep(after)
        log(f"[chaos] kill -9 of the broker (pid {broker.pid}) for {down_for:.0f}s")
        os.kill(broker.pid, signal.SIGKILL)
        await asyncio.to_thread(broker._stop_process)  # reaps the dead JVM; the ports stay ours
        await asyncio.sleep(down_for)
        await asyncio.to_thread(broker.start)
        log("[chaos] broker back")
        return 1

    return disrupt


def scale(steps: list[tuple[float, int]]) -> Disruption:
    """Change the number of running instances at the given moments: (seconds after the start, count).
    New instances get state directories of their own; removed ones close cleanly (SIGTERM)."""

    async def disrupt(apps: list[AppProcess], rng: random.Random, seconds: float, log: Callable[[str], Any]) -> int:
        began = time.monotonic()
        for at, count in steps:
            await asyncio.sleep(max(0.0, began + at - time.monotonic()))
            running = [a for a in apps if a.proc is not None and a.proc.poll() is None]
            added = []
            for _ in range(count - len(running)):
                clone = apps[0].clone(len(apps))
                apps.append(clone)
                added.append(clone.start())
            # A new instance counts once it runs tasks: on a loaded machine its interpreter alone can
            # take longer to start than the gap to the next step, and stopping it then tests nothing.
            await asyncio.gather(*(app.wait_for_log("started on", timeout=180) for app in added))
            for app in running[count:]:
                app.stop()
            log(f"[chaos] scaled from {len(running)} to {count} instances at {time.monotonic() - began:.1f}s")
        return len(steps)

    return disrupt


async def run_chaos(bootstrap: str, workdir: Path, *, words: int, disrupt: Disruption, guarantee: str,
                    produce_seconds: float, seed: int = 1, settle_timeout: float = 300,
                    extra_settings: dict[str, Any] | None = None, instances: int = 2,
                    log: Callable[[str], Any] = print,
                    instance_settings: Callable[[int], dict[str, Any]] | None = None) -> ChaosResult:
    rng = random.Random(seed)
    suffix = uuid.uuid4().hex[:8]
    inp, out = f"chaos-in-{suffix}", f"chaos-out-{suffix}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    lines = make_lines(words, rng)
    expected = Counter(w for ln in lines for w in split_words(ln))
    settings = {
        "bootstrap.servers": bootstrap, "application.id": f"chaos-{suffix}",
        "processing.guarantee": guarantee, "statestore.cache.max.bytes": 0,
        "commit.interval.ms": 100 if guarantee == "exactly_once_v2" else 200,
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
        "default.key.serde": "String", "default.value.serde": "String",
        **(extra_settings or {}),
    }
    env = {"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out}
    apps = [AppProcess(TARGET, {**settings, "state.dir": workdir / f"state-{i}",
                                **(instance_settings(i) if instance_settings else {})},
                       workdir / f"app-{i}.log", env=env)
            for i in range(instances)]
    began = time.monotonic()
    try:
        await apps[0].start().wait_for_log("to RUNNING", timeout=120)
        for app in apps[1:]:
            await app.start().wait_for_log("started on", timeout=120)
        producing = asyncio.create_task(produce_steadily(bootstrap, inp, lines, produce_seconds))
        disruptions = await disrupt(apps, rng, produce_seconds, log)
        await producing
        log(f"[chaos] all {words} words produced at {time.monotonic() - began:.1f}s; waiting for the output")
        sequences = await read_sequences(bootstrap, out, expected, settle_timeout)
    finally:
        alive = [app.proc is not None and app.proc.poll() is None for app in apps]
        codes = [app.stop() if app.proc is not None else None for app in apps]
    logs = [app.log_text() for app in apps]
    if any(c not in (0, None) for c in codes):
        log(f"[chaos] exit codes on stop: {codes}")
    check = check_sequences(sequences, expected)
    return ChaosResult(guarantee, words, disruptions, time.monotonic() - began, check, logs, alive, codes)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.integration.chaos")
    parser.add_argument("--words", type=int, default=2_000_000)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--guarantee", default="exactly_once_v2", choices=["exactly_once_v2", "at_least_once"])
    parser.add_argument("--produce-seconds", type=float, default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    from streamlet.testing import LocalKafkaBroker

    produce_seconds = args.produce_seconds or max(30.0, args.words / 8000)
    with tempfile.TemporaryDirectory(prefix="streamlet-chaos-") as tmp, LocalKafkaBroker() as broker:
        result = asyncio.run(run_chaos(broker.bootstrap_servers, Path(tmp), words=args.words,
                                       disrupt=kill_randomly(args.kills),
                                       guarantee=args.guarantee, produce_seconds=produce_seconds, seed=args.seed,
                                       settle_timeout=max(600.0, args.words / 2000)))
    verdict = "exactly once" if result.check.exact else ("no loss, with repeats" if result.check.no_loss
                                                          else "LOSS OR WRONG COUNTS")
    print(f"[chaos] {result.guarantee}: {result.disruptions} kills, {result.seconds:.0f}s: {verdict}: "
          f"{result.check.summary()}")
    ok = result.check.exact if args.guarantee == "exactly_once_v2" else result.check.no_loss
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
