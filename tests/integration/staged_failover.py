"""Two `streamlet run` instances under exactly_once_v2 fed input in stages, one killed with SIGKILL while a
stage is in flight; the output, read `read_committed`, must equal what `TopologyTestDriver` writes for the
same input, key by key, in order: nothing lost, nothing twice, nothing early.

Every topic has one partition: the driver keeps one stream time for all input (as Kafka Streams' driver
does), and with one partition per topic so does each of the app's tasks, so windows close, suppressed
results come out and unmatched join results are emitted at the same input record in both. The instance
that holds the task is the one killed, so the survivor takes it over from its changelogs.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamlet import Serdes, Topology
from streamlet.testing.test_driver import TopologyTestDriver
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce_at, read_until

Rows = list[tuple[str, str, int]]  # (key, value, timestamp ms)
"""One stage's records for one topic."""


@dataclass
class FailoverResult:
    expected: dict[str, list[str | None]]
    got: dict[str, list[str | None]]
    expected_total: int
    got_total: int
    expected_after: list[int]  # expected output records after each stage
    takeover_log: str


def _by_key(pairs: list[tuple[str, str | None]]) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for key, value in pairs:
        out.setdefault(key, []).append(value)
    return out


def _decode(records: list[Any]) -> list[tuple[str, str | None]]:
    return [(r.key.decode(), None if r.value is None else r.value.decode()) for r in records]


def _holds_task(log: str, task: str = "0_0") -> bool:
    """The instance runs `task` now: it started the task after it last closed it."""
    return log.rfind(f"task {task} started") > log.rfind(f"task {task} closed")


def _topology(factory: Callable[[], Topology], env: dict[str, str]) -> Topology:
    os.environ.update(env)
    try:
        return factory()
    finally:
        for name in env:
            del os.environ[name]


async def run_staged_failover(bootstrap: str, workdir: Path, target: str, factory: Callable[[], Topology],
                              topic_env: dict[str, str], output_env: str,
                              stages: list[tuple[str, Rows]], kill_at_stage: int,
                              extra_settings: dict[str, Any] | None = None) -> FailoverResult:
    """`topic_env` maps environment names to topic stems (inputs and the output, `output_env` naming the
    output); `stages` are (environment name of an input, rows); `extra_settings` go to the driver and to
    both instances. Returns expected and committed output."""
    suffix = uuid.uuid4().hex[:8]
    env = {name: f"{stem}-{suffix}" for name, stem in topic_env.items()}
    out = env[output_env]
    await create_topics(bootstrap, dict.fromkeys(env.values(), 1))
    app_id = f"failover-{suffix}"

    expected_after: list[int] = []
    pairs: list[tuple[str, str | None]] = []
    with TopologyTestDriver(_topology(factory, env), {"application.id": app_id, "default.key.serde": "String",
                                                      "default.value.serde": "String",
                                                      **(extra_settings or {})}) as driver:
        output = driver.create_output_topic(out, Serdes.String(), Serdes.String())
        for name, rows in stages:
            pipe = driver.create_input_topic(env[name], Serdes.String(), Serdes.String())
            for key, value, ts in rows:
                pipe.pipe_input(key, value, ts)
            pairs += [(kv.key, kv.value) for kv in output.read_key_values_to_list()]
            expected_after.append(len(pairs))

    settings = {"bootstrap.servers": bootstrap, "application.id": app_id,
                "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
                "commit.interval.ms": 100, "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
                "default.key.serde": "String", "default.value.serde": "String", **(extra_settings or {})}
    apps = [AppProcess(target, {**settings, "state.dir": workdir / f"s{i}"}, workdir / f"app-{i}.log", env=env)
            for i in range(2)]

    async def committed(at_least: int) -> list[Any]:
        return await read_until(bootstrap, out, lambda rs: len(rs) >= at_least, timeout=120,
                                isolation_level="read_committed")

    takeover = ""
    try:
        await apps[0].start().wait_for_log("to RUNNING", timeout=120)
        await apps[1].start().wait_for_log("to RUNNING", timeout=120)
        for index, (name, rows) in enumerate(stages):
            await produce_at(bootstrap, env[name], [(k, v.encode(), ts) for k, v, ts in rows])
            if index == kill_at_stage:
                await asyncio.sleep(0.3)  # the stage is in flight
                holders = [i for i in range(2) if _holds_task(apps[i].log_text())]
                assert len(holders) == 1, f"expected one instance to run task 0_0, got {holders}"
                victim = holders[0]
                survivor = apps[1 - victim]
                before = len(survivor.log_text())
                apps[victim].kill()
            if expected_after[index]:
                await committed(expected_after[index])
        await asyncio.sleep(2)  # anything extra (a duplicate) would show up now
        got = _decode(await committed(expected_after[-1]))
        takeover = survivor.log_text()[before:]
    finally:
        for app in apps:
            if app.proc is not None and app.proc.poll() is None:
                app.stop()
    return FailoverResult(_by_key(pairs), _by_key(got), expected_after[-1], len(got), expected_after, takeover)
