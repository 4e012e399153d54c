"""A rolling move between Kafka Streams 4.4.0 (Java) and streamlet in one streams group, without downtime.

With `group.protocol=streams` the broker assigns the tasks of one application to every member,
whatever runs it: Kafka Streams instances and streamlet instances share the group on disjoint tasks
(the topology each sends must be the same, or the broker refuses the later one). While the input is
produced (a share of it during each step), the Java instances are replaced one by one by streamlet
instances, one of those is killed with kill -9 and restarted, and one streamlet instance is replaced
by Kafka Streams again: every word's count updates must be exactly 1..n under exactly_once_v2.

The Java application is the interop module's WordCount (`tests/interop`, Kafka Streams 4.4.0 built
with Maven); without it (or without java and mvn) the test is skipped.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from examples.wordcount import split_words
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics
from tests.integration.chaos import TARGET, check_sequences, make_lines, produce_steadily, read_sequences

interop = pytest.importorskip("tests.interop.kafka_streams_app", reason="the Kafka Streams interop module")

pytestmark = [pytest.mark.anyio, pytest.mark.broker,
              pytest.mark.skipif(not interop.java_available(), reason="needs java and mvn")]


_WORDS = 60_000
_STEPS = 6  # input slices: before the moves, during each of the four, after them
_STEP_SECONDS = 6.0


async def _rolling_move(bootstrap: str, workdir: Path, seed: int) -> tuple[Any, list[str]]:
    suffix = uuid.uuid4().hex[:8]
    inp, out, app = f"roll-in-{suffix}", f"roll-out-{suffix}", f"roll-{suffix}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    rng = random.Random(seed)
    lines = make_lines(_WORDS, rng)
    expected = Counter(w for ln in lines for w in split_words(ln))
    events: list[str] = []
    began = time.monotonic()

    def note(what: str) -> None:
        events.append(f"{time.monotonic() - began:5.1f}s {what}")

    def java(i: int) -> Any:
        settings = {"bootstrap.servers": bootstrap, "application.id": app, "group.protocol": "streams",
                    "commit.interval.ms": 100, "state.dir": workdir / f"java-state-{i}"}
        return interop.KafkaStreamsApp("wordcount", {"input": inp, "output": out}, settings,
                                       workdir / f"java-{i}.log")

    def python(i: int) -> AppProcess:
        settings = {"bootstrap.servers": bootstrap, "application.id": app, "group.protocol": "streams",
                    "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
                    "commit.interval.ms": 100, "default.key.serde": "String", "default.value.serde": "String",
                    "state.dir": workdir / f"py-state-{i}"}
        return AppProcess(TARGET, settings, workdir / f"py-{i}.log",
                          env={"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out})

    slices = [lines[i::_STEPS] for i in range(_STEPS)]

    async def during(step: int, move: Callable[[], Awaitable[None]]) -> None:
        """Produce the step's share of the input while the move happens."""
        producing = asyncio.create_task(produce_steadily(bootstrap, inp, slices[step], _STEP_SECONDS))
        try:
            await move()
        finally:
            await producing
        note(f"input slice {step} produced")

    javas = [java(0).start(), java(1).start()]
    pythons: list[AppProcess] = []

    async def nothing() -> None:
        return None

    async def java_to_streamlet(i: int) -> None:
        await asyncio.sleep(1)
        await javas[i].close(leave_group=True)
        note(f"Kafka Streams instance {i} closed")
        pythons.append(python(i).start())
        await pythons[-1].wait_for_log("running active tasks", timeout=120)
        note(f"streamlet instance {i} running tasks")

    async def kill_streamlet() -> None:
        await asyncio.sleep(1)
        pythons[0].kill()
        note("kill -9 of streamlet instance 0")
        await asyncio.sleep(1)
        pythons[0].start()

    async def streamlet_to_java() -> None:
        await asyncio.sleep(1)
        pythons[1].stop()
        note("streamlet instance 1 stopped")
        javas.append(java(2).start())
        await javas[-1].wait_for_active_tasks(120)
        note("Kafka Streams instance 2 running tasks")

    try:
        for j in javas:
            await j.wait_for_line("STATE RUNNING", 180)
        note("two Kafka Streams instances running")
        await during(0, nothing)
        await during(1, lambda: java_to_streamlet(0))
        await during(2, lambda: java_to_streamlet(1))
        await during(3, kill_streamlet)
        await during(4, streamlet_to_java)
        await during(5, nothing)  # Kafka Streams and streamlet together to the end
        sequences = await read_sequences(bootstrap, out, expected, 240)
        note("output read")
    finally:
        for p in pythons:
            if p.proc is not None and p.proc.poll() is None:
                p.stop()
        for j in javas:
            if j.proc is not None and j.proc.poll() is None:
                await j.close(leave_group=True)
    return check_sequences(sequences, expected), events


@pytest.mark.usefixtures("streams_groups")
async def test_rolling_move_between_kafka_streams_and_streamlet_is_exact(kafka_broker: Any, tmp_path: Path) -> None:
    check, events = await _rolling_move(kafka_broker.bootstrap_servers, tmp_path, seed=21)
    print("\n".join(events))
    assert check.exact, check.summary() + "\n" + "\n".join(events)
    assert check.updates == _WORDS
    for i in (0, 1):
        log = (tmp_path / f"py-{i}.log").read_text()
        assert "running active tasks" in log
        assert "Traceback" not in log, log[-3000:]
