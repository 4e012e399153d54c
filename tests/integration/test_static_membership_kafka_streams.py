"""A static member of a streams group killed with kill -9 and restarted at once: Kafka Streams 4.4.0 (Java)
and streamlet side by side in one group on one broker.

Two Kafka Streams instances and one streamlet instance run the same WordCount (exactly_once_v2) in one
streams group, each static (`group.instance.id`). The streamlet instance and one Kafka Streams instance
are killed with kill -9 and restarted at once while input flows; the broker's description of the group
(StreamsGroupDescribe) is read all along. The broker treats both alike: it refuses the restarted static
member (UNRELEASED_INSTANCE_ID) while the killed one's session lasts. What the client does with the
refusal differs. Kafka Streams' stream thread fails with UnreleasedInstanceIdException (the check's
uncaught exception handler answers SHUTDOWN_CLIENT, Kafka Streams' default response): the client ends in
ERROR, and once the killed member's session expired the broker hands its tasks to the other members; it
runs again only when started anew. streamlet waits for the old session to expire, says so, and rejoins by
itself; which member then gets its old tasks depends on whose heartbeat reaches the broker first after the
expiry (streamlet retries every half second, the others heartbeat every few seconds), so this test does
not assert it. Every word's count updates are exactly 1..n.

A clean close needs no such test here: both keep a closed static member's tasks until it is back (epoch
-2), as tests/integration/test_static_membership.py shows for streamlet.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka.errors import KafkaError

from examples.wordcount import split_words
from tests.helpers.app_process import AppProcess
from tests.helpers.group_members import Group, describe, settled
from tests.helpers.kafka import create_topics
from tests.integration.chaos import TARGET, check_sequences, make_lines, produce_steadily, read_sequences

interop = pytest.importorskip("tests.interop.kafka_streams_app", reason="the Kafka Streams interop module")

pytestmark = [pytest.mark.anyio, pytest.mark.broker,
              pytest.mark.skipif(not interop.java_available(), reason="needs java and mvn")]

_WORDS = 8_000
_PARTITIONS = 3  # two subtopologies: 6 tasks over 3 members
_ACTIVE_TASKS = re.compile(r"Assigning active tasks \{\d")
_REFUSED = "cannot join the group because the instance id is owned by"


class _Run:
    """The three instances, the group's descriptions seen and what happened when."""

    def __init__(self, bootstrap: str, workdir: Path) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.bootstrap, self.workdir = bootstrap, workdir
        self.input, self.output, self.app = f"static-in-{suffix}", f"static-out-{suffix}", f"static-{suffix}"
        self.seen: list[Group] = []
        self.began = time.monotonic()
        self.events: list[str] = []
        common = {"bootstrap.servers": bootstrap, "application.id": self.app, "group.protocol": "streams",
                  "commit.interval.ms": 100}
        self.java_settings = [{**common, "state.dir": workdir / f"java-state-{i}",
                               "group.instance.id": f"static-java-{i}"} for i in range(2)]
        self.javas = [self.java(i, f"java-{i}.log") for i in range(2)]
        self.pythons = [AppProcess(
            TARGET, {**common, "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
                     "default.key.serde": "String", "default.value.serde": "String",
                     "state.dir": workdir / f"py-state-{i}", "group.instance.id": f"static-py-{i}"},
            workdir / f"py-{i}.log", env={"WORDCOUNT_INPUT": self.input, "WORDCOUNT_OUTPUT": self.output})
            for i in range(1)]

    def java(self, i: int, log: str, **settings: Any) -> Any:
        """Kafka Streams instance `i` (not started) logging to `log`."""
        return interop.KafkaStreamsApp("wordcount", {"input": self.input, "output": self.output},
                                       {**self.java_settings[i], **settings}, self.workdir / log)

    def note(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.began:5.1f}s {what}")

    async def watch(self) -> None:
        while True:
            try:
                self.seen.append(await describe(self.bootstrap, self.app, True))
            except KafkaError as exc:  # the coordinator moving or loading: described again next round
                self.note(f"describing the group failed: {exc!r}")
            await asyncio.sleep(0.3)

    def seen_since(self, count: int) -> list[Group]:
        return self.seen[count:]


async def _until(what: str, done: Any, timeout: float = 150) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        await asyncio.sleep(0.2)


def _streamlet_runs(app: AppProcess, starts: int) -> bool:
    return app.log_text().count("running active tasks") > starts


def _java_assignments(app: Any) -> int:
    """How often the Kafka Streams instance (all its runs, one log) was handed active tasks."""
    return len(_ACTIVE_TASKS.findall(app.log_path.read_text(errors="replace")))


@pytest.mark.usefixtures("streams_groups")
async def test_kafka_streams_and_streamlet_static_members_killed_are_refused_alike(kafka_broker: Any,
                                                                                   tmp_path: Path) -> None:
    run = _Run(kafka_broker.bootstrap_servers, tmp_path)
    await create_topics(run.bootstrap, {run.input: _PARTITIONS, run.output: _PARTITIONS})
    lines = make_lines(_WORDS, random.Random(15))
    expected = Counter(w for ln in lines for w in split_words(ln))
    java_victim, py_victim = run.javas[0], run.pythons[0]
    watcher: asyncio.Task[None] | None = None
    producing: asyncio.Task[None] | None = None
    restart: Any = None
    try:
        # The Kafka Streams restart's JVM is started now and warmed (on a loaded machine a cold start took
        # longer than the group's session timeout); it joins only when told, after the kill.
        restart = run.java(0, "java-0-restarted.log", **{"start.on.stdin": "true"}).start()
        for app in (*run.javas, *run.pythons):
            app.start()
        baseline = await settled(run.bootstrap, run.app, True, 3)
        run.note("three members stable")
        by_instance = baseline.by_instance()
        old_java = by_instance["static-java-0-1"]
        watcher = asyncio.create_task(run.watch())
        producing = asyncio.create_task(produce_steadily(run.bootstrap, run.input, lines, 30))
        await asyncio.sleep(2)

        # kill -9 of one instance of each kind, both restarted at once.
        await restart.wait_for_line("READY", 180)
        py_runs = py_victim.log_text().count("running active tasks")
        java_victim.kill()
        py_victim.kill()
        killed_at = len(run.seen)
        restart.proc.stdin.write("start\n")
        restart.proc.stdin.flush()
        py_victim.start()
        run.note("kill -9 of java-0 and py-0, both restarted")

        # Kafka Streams: the broker's refusal is fatal to its stream thread; the client ends in ERROR.
        await _until("java-0 restarted, refused or running",
                     lambda: {"STATE ERROR", "STATE RUNNING"} & set(restart.lines))
        run.note(f"java-0 restarted: {[x for x in restart.lines if not x.startswith('DESCRIBE')]}")
        # (Were it running unrefused, it reached the broker only after the killed one's session had expired:
        # a restart slower than the group's session timeout, which this test does not exercise.)
        assert "STATE ERROR" in restart.lines, "\n".join(run.events)
        failure = next(line for line in restart.lines if line.startswith("FAILED "))
        assert "UnreleasedInstanceIdException" in failure, failure
        assert f"instance id static-java-0-1 {_REFUSED} {old_java.member_id}" in failure, failure
        # streamlet: the same refusal, logged; it waits.
        await py_victim.wait_for_log("waiting for the previous member with group.instance.id 'static-py-0-1'", 120)
        run.note("py-0 restarted: refused, waits")
        assert _REFUSED in py_victim.log_text()

        # Once the killed Kafka Streams member's session expired, the broker hands its tasks to the others.
        def java_tasks_moved() -> bool:
            return any(old_java.assigned <= {t for m in group.members if m.instance_id != "static-java-0-1"
                                             for t in m.assigned} for group in run.seen_since(killed_at))

        await _until("the killed Kafka Streams member's tasks reassigned", java_tasks_moved)
        run.note("java-0's tasks went to the other members")
        # streamlet rejoins by itself; Kafka Streams runs again once started anew.
        await _until("py-0 running again", lambda: _streamlet_runs(py_victim, py_runs))
        run.note("py-0 runs tasks again")
        restart.kill()
        java_runs = _java_assignments(java_victim)
        java_victim.start()
        await _until("java-0 running again", lambda: _java_assignments(java_victim) > java_runs)
        run.note("java-0, started anew, runs tasks again")

        await producing
        final = await settled(run.bootstrap, run.app, True, 3)
        sequences = await read_sequences(run.bootstrap, run.output, expected, 120)
        run.note("output read")
    finally:
        for task in (watcher, producing):
            if task is not None:
                task.cancel()
        for py in run.pythons:
            if py.proc is not None and py.proc.poll() is None:
                py.stop()
        for java in (*run.javas, restart):
            if java is not None and java.proc is not None and java.proc.poll() is None:
                await java.close(leave_group=True)
        print("\n".join(run.events))
        (tmp_path / "seen.txt").write_text("\n".join(
            f"{g.state} " + " ".join(f"{m.instance_id}:{m.member_id[:8]}:{sorted(m.assigned)}" for m in g.members)
            for g in run.seen))

    check = check_sequences(sequences, expected)
    assert check.exact, check.summary() + "\n" + "\n".join(run.events)
    # Only the restarted members were refused.
    assert "UnreleasedInstanceId" not in "\n".join(run.javas[1].lines)
    assert {m.instance_id for m in final.members} == {"static-java-0-1", "static-java-1-1", "static-py-0-1"}, final
