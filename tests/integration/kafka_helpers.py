"""Small helpers for integration tests against the real broker: topics, producing, reading output."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from benchmarks.kafka_bench import create_topics

__all__ = ["create_topics"]

REPO = Path(__file__).resolve().parents[2]


async def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    await producer.start()
    try:
        futures = [await producer.send(topic, key=k, value=v) for k, v in records]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def produce_in_order(bootstrap: str, topic: str, records: list[tuple[str, str, int]]) -> None:
    """(key, value, timestamp) string records, each acknowledged before the next is sent: when their order
    is the point of the test."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    await producer.start()
    try:
        for key, value, ts in records:
            await (await producer.send(topic, key=key.encode(), value=value.encode(), timestamp_ms=ts))
    finally:
        await producer.stop()


def decoded(records: list[Any]) -> list[tuple[str, str, int]]:
    """Consumed string records as sorted (key, value, timestamp)."""
    return sorted((r.key.decode(), r.value.decode(), r.timestamp) for r in records)


def driver_output_in_two_phases(out: Any, first: list[tuple[Any, list[tuple[str, str, int]]]],
                                second: list[tuple[Any, list[tuple[str, str, int]]]]
                                ) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """A TopologyTestDriver run in two phases, the expectation of a restart test: pipe each (input topic,
    records) of `first`, read `out`, then pipe `second`; (what the first phase gave, everything)."""
    def run(phase: list[tuple[Any, list[tuple[str, str, int]]]]) -> list[tuple[str, str, int]]:
        for topic, records in phase:
            for key, value, ts in records:
                topic.pipe_input(key, value, ts)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]

    given = run(first)
    return given, given + run(second)


async def read_until(
    bootstrap: str,
    topic: str,
    done: Callable[[list[Any]], bool],
    timeout: float = 120.0,
    isolation_level: str = "read_uncommitted",
) -> list[Any]:
    """Read `topic` from the beginning until `done(records)` holds; raise TimeoutError otherwise."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False, group_id=None, isolation_level=isolation_level)
    await consumer.start()
    records: list[Any] = []
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for recs in batch.values():
                records.extend(recs)
            if done(records):
                return records
        raise TimeoutError(f"{topic}: condition not met after {timeout}s with {len(records)} records")
    finally:
        await consumer.stop()


class AppProcess:
    """A `streamlet run` app instance in its own OS process."""

    def __init__(self, target: str, settings: dict[str, Any], log_path: Path,
                 env: dict[str, str] | None = None, extra_args: list[str] | None = None) -> None:
        self.target = target
        self.extra_args = extra_args or []
        self.settings = settings
        self.log_path = log_path
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> AppProcess:
        args = [sys.executable, "-m", "streamlet", "run", self.target, *self.extra_args]
        for k, v in self.settings.items():
            args += ["--set", f"{k}={v}"]
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", **self.env)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        return self

    def stop(self, timeout: float = 60) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self._log.close()

    def clone(self, index: int) -> AppProcess:
        """Another instance of the same application, with its own state directory and log."""
        settings = dict(self.settings)
        if "state.dir" in settings:
            settings["state.dir"] = Path(settings["state.dir"]).with_name(f"state-{index}")
        return AppProcess(self.target, settings, self.log_path.with_name(f"app-{index}.log"), self.env,
                          self.extra_args)

    def pause(self) -> None:
        """SIGSTOP: the process is frozen (no heartbeats, no commits) but keeps its connections."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_for_log(self, text: str, timeout: float = 60.0) -> None:
        """Wait until the app's log contains `text` (e.g. a task started after a rebalance)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the app exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}")
            await asyncio.sleep(0.2)
        raise TimeoutError(f"{text!r} not in the app's log after {timeout}s:\n{self.log_text()[-3000:]}")
