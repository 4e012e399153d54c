"""Standby replicas on the real broker: a failover restores only the changelog tail, not all of it."""

from __future__ import annotations

import random
import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from examples.wordcount import split_words
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce
from tests.integration.chaos import check_sequences, make_lines, read_sequences

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def failover_restored_records(bootstrap: str, tmp_path: Path, standby_replicas: int) -> tuple[int, Any]:
    """Two instances count words; one is killed; returns how many changelog records the survivor
    restored to take over, and the exactness check of the output."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"standby-in-{sfx}", f"standby-out-{sfx}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    rng = random.Random(12)
    first, second = make_lines(20_000, rng), make_lines(2_000, rng)
    expected = Counter(w for ln in first + second for w in split_words(ln))
    settings = {"bootstrap.servers": bootstrap, "application.id": f"standby-{sfx}",
                "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
                "num.standby.replicas": standby_replicas, "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 1000, "default.key.serde": "String", "default.value.serde": "String"}
    env = {"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out}
    apps = [AppProcess("tests.integration.wordcount_app:topology", {**settings, "state.dir": tmp_path / f"s{i}"},
                       tmp_path / f"app-{i}.log", env=env) for i in range(2)]
    try:
        await apps[0].start().wait_for_log("to RUNNING")
        await apps[1].start().wait_for_log("started on")
        await produce(bootstrap, inp, [(None, ln.encode()) for ln in first])
        first_counts = Counter(w for ln in first for w in split_words(ln))
        await read_sequences(bootstrap, out, first_counts, timeout=120)
        survivor_log_before = len(apps[1].log_text())
        apps[0].kill()
        await produce(bootstrap, inp, [(None, ln.encode()) for ln in second])
        check = check_sequences(await read_sequences(bootstrap, out, expected, timeout=120), expected)
        takeover = apps[1].log_text()[survivor_log_before:]
    finally:
        for app in apps:
            if app.proc is not None and app.proc.poll() is None:
                app.stop()
    restored = sum(int(n) for n in re.findall(r"restored (\d+) records into", takeover))
    return restored, check


async def test_failover_with_a_standby_restores_only_the_tail(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    cold, cold_check = await failover_restored_records(bootstrap, tmp_path / "cold", 0)
    warm, warm_check = await failover_restored_records(bootstrap, tmp_path / "warm", 1)
    print(f"records restored at failover: without a standby {cold}, with one {warm}")
    assert cold_check.exact, cold_check.summary()
    assert warm_check.exact, warm_check.summary()
    assert cold > 3_000  # the victim's half of 20,000 words' changelog
    assert warm < cold / 10
