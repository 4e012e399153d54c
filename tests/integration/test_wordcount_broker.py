"""WordCount on the real broker: two instances in separate processes, and restoring lost state."""

from __future__ import annotations

import random
import shutil
import struct
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from examples.wordcount import INPUT_TOPIC, OUTPUT_TOPIC, split_words
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce, read_until
from tests.integration.wordcount_app import TARGET, settings, topic_env

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

WORDS = ["kafka", "streams", "python", "actor", "state", "store", "topic", "partition", "task", "commit",
         "window", "join", "table", "stream", "offset", "leader"]


def make_lines(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def latest_counts(records: list[Any]) -> dict[str, int]:
    latest: dict[str, int] = {}
    for r in records:
        latest[r.key.decode()] = struct.unpack(">q", r.value)[0]
    return latest


async def run_topics(bootstrap: str, suffix: str, partitions: int) -> tuple[str, str]:
    # Fresh topic names per test keep tests independent on the shared session broker.
    inp, out = f"{INPUT_TOPIC}-{suffix}", f"{OUTPUT_TOPIC}-{suffix}"
    await create_topics(bootstrap, {inp: partitions, out: partitions})
    return inp, out


async def test_two_instances_in_separate_processes_count_correctly(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, out = await run_topics(bootstrap, suffix, 4)
    rng = random.Random(7)
    lines = make_lines(3000, rng)
    expected = Counter(w for ln in lines for w in split_words(ln))
    app_id = f"wc-two-{suffix}"
    apps = [
        AppProcess(TARGET, settings(bootstrap, app_id, tmp_path / f"state-{i}"), tmp_path / f"app-{i}.log",
                   env=topic_env(inp, out))
        for i in range(2)
    ]
    try:
        # One after the other, so that the second join is a rebalance that gives each instance tasks
        # before any input exists (otherwise the first could count everything on its own).
        await apps[0].start().wait_for_log("to RUNNING")
        await apps[1].start().wait_for_log("started on")
        await produce(bootstrap, inp, [(str(i).encode(), ln.encode()) for i, ln in enumerate(lines)])
        records = await read_until(bootstrap, out, lambda rs: latest_counts(rs) == dict(expected), timeout=150)
        assert latest_counts(records) == dict(expected)
        # Both processes took part: each ran at least one task.
        for app in apps:
            assert "task " in app.log_text() and "started on" in app.log_text(), app.log_text()[-3000:]
    finally:
        codes = [app.stop() for app in apps if app.proc is not None]
    assert codes == [0, 0], [a.log_text()[-3000:] for a in apps]


async def test_restart_with_deleted_state_restores_from_changelog(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    inp, out = await run_topics(bootstrap, suffix, 2)
    rng = random.Random(11)
    first, second = make_lines(500, rng), make_lines(500, rng)
    state_dir = tmp_path / "state"
    app_settings = settings(bootstrap, f"wc-restore-{suffix}", state_dir)

    app = AppProcess(TARGET, app_settings, tmp_path / "app-1.log", env=topic_env(inp, out)).start()
    try:
        await produce(bootstrap, inp, [(None, ln.encode()) for ln in first])
        expected_first = Counter(w for ln in first for w in split_words(ln))
        await read_until(bootstrap, out, lambda rs: latest_counts(rs) == dict(expected_first))
    finally:
        assert app.stop() == 0, app.log_text()[-3000:]

    assert state_dir.exists()
    shutil.rmtree(state_dir)

    app2 = AppProcess(TARGET, app_settings, tmp_path / "app-2.log", env=topic_env(inp, out)).start()
    try:
        await produce(bootstrap, inp, [(None, ln.encode()) for ln in second])
        expected_total = Counter(w for ln in first + second for w in split_words(ln))
        records = await read_until(bootstrap, out, lambda rs: latest_counts(rs) == dict(expected_total))
        assert latest_counts(records) == dict(expected_total)
    finally:
        assert app2.stop() == 0, app2.log_text()[-3000:]
    assert "restored" in app2.log_text()
