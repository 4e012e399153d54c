"""`streamlet topics create` and `streamlet reset` on the real broker.

After a reset and a restart the application reprocesses its input from scratch: its output then equals
what a fresh run produced (here, the first run's), record for record. A reset refuses while an instance
runs, and `--dry-run` changes nothing."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streamlet.kafka.topic_manager import describe_partition_counts
from tests.helpers.app_process import REPO, AppProcess
from tests.helpers.kafka import produce, read_until

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

LINES = [f"w{i % 7} w{i % 3} shared" for i in range(120)]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streamlet", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


async def _topic_counts(bootstrap: str, topics: set[str]) -> dict[str, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return await describe_partition_counts(admin, topics)
    finally:
        await admin.close()


async def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        return {p: await consumer.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        await consumer.stop()


def _by_word(records: list[Any]) -> dict[str, list[int]]:
    seen: dict[str, list[int]] = defaultdict(list)
    for r in records:
        seen[r.key.decode()].append(int.from_bytes(r.value, "big", signed=True))
    return dict(seen)


async def test_topics_create_then_reset_reprocesses_from_scratch(kafka_broker: Any, tmp_path: Path) -> None:
    import os

    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out, app_id = f"reset-in-{sfx}", f"reset-out-{sfx}", f"reset-{sfx}"
    env = dict(os.environ, PYTHONPATH=str(REPO), WORDCOUNT_INPUT=inp, WORDCOUNT_OUTPUT=out)
    target = "tests.integration.wordcount_app:topology"
    common = ["--set", f"bootstrap.servers={bootstrap}", "--set", f"application.id={app_id}",
              "--set", f"state.dir={tmp_path / 'state'}"]

    created = _cli("topics", "create", target, *common, "--partitions", "2", env=env)
    assert created.returncode == 0, created.stderr
    assert f"created {inp} (2 partitions)" in created.stdout and f"created {out} (2 partitions)" in created.stdout
    assert await _topic_counts(bootstrap, {inp, out}) == {inp: 2, out: 2}
    again = _cli("topics", "create", target, *common, env=env)
    assert again.returncode == 0 and "exists already" in again.stdout, again.stdout + again.stderr

    await produce(bootstrap, inp, [(None, line.encode()) for line in LINES])
    total = sum(len(line.split()) for line in LINES)
    settings = {"bootstrap.servers": bootstrap, "application.id": app_id, "state.dir": tmp_path / "state",
                "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
                "default.key.serde": "String", "default.value.serde": "String"}
    app = AppProcess(target, settings, tmp_path / "run-1.log", {"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out})
    app.start()
    try:
        first = await read_until(bootstrap, out, lambda rs: len(rs) >= total, timeout=90,
                                 isolation_level="read_committed")
        refused = _cli("reset", target, *common, env=env)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "still has 1 running instance" in refused.stderr and "stop every instance" in refused.stderr
    finally:
        assert app.stop() == 0
    assert len(first) == total
    state_dir = tmp_path / "state" / app_id
    changelog, repartition = f"{app_id}-counts-store-changelog", f"{app_id}-counts-store-repartition"
    assert state_dir.is_dir()
    assert set(await _topic_counts(bootstrap, {changelog, repartition})) == {changelog, repartition}
    before = await _committed(bootstrap, app_id, inp, 2)
    assert sum(v or 0 for v in before.values()) == len(LINES)

    dry = _cli("reset", target, *common, "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert f"offset {inp}-0 -> 0" in dry.stdout and f"delete internal topic {changelog}" in dry.stdout
    assert f"wipe local state {state_dir}" in dry.stdout and "nothing changed" in dry.stdout
    assert await _committed(bootstrap, app_id, inp, 2) == before and state_dir.is_dir()

    reset = _cli("reset", target, *common, env=env)
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert await _committed(bootstrap, app_id, inp, 2) == {0: 0, 1: 0}
    assert not state_dir.exists()
    assert not await _topic_counts(bootstrap, {changelog, repartition})

    app = AppProcess(target, settings, tmp_path / "run-2.log", {"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out})
    app.start()
    try:
        both = await read_until(bootstrap, out, lambda rs: len(rs) >= 2 * total, timeout=90,
                                isolation_level="read_committed")
    finally:
        assert app.stop() == 0
    second = both[len(first):]
    assert len(second) == total
    assert _by_word(second) == _by_word(first)
    assert all(counts == list(range(1, len(counts) + 1)) for counts in _by_word(second).values())
