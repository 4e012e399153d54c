"""`streamlet run --workers N` on the real broker: N group members, a killed worker is replaced."""

from __future__ import annotations

import os
import random
import re
import signal
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from examples.wordcount import split_words
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce
from tests.integration.chaos import check_sequences, make_lines, read_sequences

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


def worker_pids(log: str) -> dict[int, int]:
    """worker index -> pid of its latest start, from the supervisor's log."""
    return {int(i): int(pid) for i, pid in re.findall(r"worker (\d+) started \(pid (\d+)\)", log)}


@dataclass
class TwoWorkerWordCount:
    bootstrap: str
    input: str
    output: str
    lines: list[str]
    expected: Counter[str]
    app: AppProcess


async def two_worker_wordcount(kafka_broker: Any, tmp_path: Path, name: str, n_lines: int, seed: int,
                               settings: dict[str, Any]) -> TwoWorkerWordCount:
    """Fresh 4-partition topics, seeded input lines with their true counts, and the WordCount app with
    `--workers 2` (created, not started)."""
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"{name}-in-{sfx}", f"{name}-out-{sfx}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    lines = make_lines(n_lines, random.Random(seed))
    expected = Counter(w for ln in lines for w in split_words(ln))
    app = AppProcess("tests.integration.wordcount_app:topology", {
        "bootstrap.servers": bootstrap, "application.id": f"{name}-{sfx}", "state.dir": tmp_path / "state",
        "default.key.serde": "String", "default.value.serde": "String", **settings,
    }, tmp_path / "app.log", env={"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out}, extra_args=["--workers", "2"])
    return TwoWorkerWordCount(bootstrap, inp, out, lines, expected, app)


async def test_two_workers_share_the_tasks_and_a_killed_worker_is_replaced(
    kafka_broker: Any, tmp_path: Path
) -> None:
    run = await two_worker_wordcount(kafka_broker, tmp_path, "workers", 20_000, 9, {
        "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
    })
    bootstrap, inp, out, lines, expected, app = run.bootstrap, run.input, run.output, run.lines, run.expected, run.app
    app.start()
    try:
        with anyio.fail_after(90):
            while app.log_text().count("to RUNNING") < 2 or len(worker_pids(app.log_text())) < 2:
                await anyio.sleep(0.2)
        first = worker_pids(app.log_text())
        await produce(bootstrap, inp, [(None, ln.encode()) for ln in lines[: len(lines) // 2]])
        os.kill(first[1], signal.SIGKILL)
        with anyio.fail_after(60):
            while worker_pids(app.log_text()).get(1) == first[1]:
                await anyio.sleep(0.2)
        await produce(bootstrap, inp, [(None, ln.encode()) for ln in lines[len(lines) // 2:]])
        sequences = await read_sequences(bootstrap, out, expected, timeout=120)
        check = check_sequences(sequences, expected)
        assert check.exact, check.summary()
        log = app.log_text()
        assert "worker 1 (pid" in log and "replacing it" in log
        # Both workers ran tasks: two members of one group, each with a state directory of its own.
        assert {p.name for p in (tmp_path / "state").iterdir()} >= {"worker-0", "worker-1"}
    finally:
        code = app.stop()
    assert code == 0, app.log_text()[-3000:]


async def test_tasks_moving_to_a_second_worker_under_at_least_once(kafka_broker: Any, tmp_path: Path) -> None:
    """The input is already there when the two workers start, so the first worker is busy with every task
    when the second joins and half of them move (eager rebalance). The moved tasks are closed once the new
    assignment arrives, when their partitions are no longer this consumer's: their offsets were committed
    on revocation, and committing them again must not fail the takeover (it did in the benchmark's
    two-worker window count, and the group then kept rebalancing). Nothing may be lost. On this machine
    the race did not show here without the fix either: this guards the scenario, not that exact timing."""
    run = await two_worker_wordcount(kafka_broker, tmp_path, "workers-alos", 40_000, 11, {
        "processing.guarantee": "at_least_once", "commit.interval.ms": 200, "statestore.cache.max.bytes": 0,
    })
    bootstrap, out, expected, app = run.bootstrap, run.output, run.expected, run.app
    await produce(bootstrap, run.input, [(None, ln.encode()) for ln in run.lines])
    app.start()
    try:
        sequences = await read_sequences(bootstrap, out, expected, timeout=120)
        check = check_sequences(sequences, expected)
        assert check.no_loss, check.summary()
        assert "taking over the assigned partitions failed" not in app.log_text()
    finally:
        code = app.stop()
    assert code == 0, app.log_text()[-3000:]
