"""`KafkaStreams.close(timeout)` while the group is stuck in a rebalance: it returns within the
timeout and leaves no client unclosed.

A rebalance gets stuck when a member that must rejoin is frozen: the coordinator waits for it until its
session expires. An instance asked to close meanwhile must not sit in the JoinGroup until then."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet.runtime.kafka_streams import KafkaStreams, State
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics
from tests.integration import wordcount_app

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

SESSION_MS = 30_000


async def test_close_during_a_stuck_rebalance_returns_in_time_and_closes_every_client(
        kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"close-in-{sfx}", f"close-out-{sfx}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    env = {"WORDCOUNT_INPUT": inp, "WORDCOUNT_OUTPUT": out}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = {"application.id": f"close-{sfx}", "bootstrap.servers": bootstrap,
                "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 1000,
                "default.key.serde": "String", "default.value.serde": "String"}
    frozen = AppProcess("tests.integration.wordcount_app:topology", {**settings, "state.dir": tmp_path / "state-b"},
                        tmp_path / "app-b.log", env).start()
    joiner = frozen.clone(3)
    try:
        await frozen.wait_for_log("to RUNNING", timeout=60)
        streams = KafkaStreams(wordcount_app.topology(), {**settings, "state.dir": str(tmp_path / "state-a")})
        states: list[State] = []
        streams.set_state_listener(lambda new, _old: states.append(new))
        await streams.start()
        with anyio.fail_after(60):
            while streams.state is not State.RUNNING or states.count(State.RUNNING) < 1:
                await anyio.sleep(0.1)
        frozen.pause()  # B stops heartbeating; the coordinator notices only after SESSION_MS
        running_before = states.count(State.RUNNING)
        joiner.start()  # C's JoinGroup starts a rebalance that waits for B until its session expires
        with anyio.fail_after(60):
            while streams.state is not State.REBALANCING:
                await anyio.sleep(0.1)
        await anyio.sleep(3)  # A is inside the rebalance now, waiting for B
        assert states.count(State.RUNNING) == running_before, "the rebalance was expected to be stuck"
        supervisor: Any = streams._supervisor
        clients = {"main consumer": supervisor.consumer, "restore consumer": supervisor.restore_consumer}
        began = time.monotonic()
        finished = await streams.close(timeout=10)
        took = time.monotonic() - began
        assert streams.state is State.NOT_RUNNING
        # Every client was stopped to the end: its metadata task gone and no connection left open.
        left_open = [name for name, client in clients.items()
                     if client._client._sync_task is not None
                     or any(conn.connected() for conn in client._client._conns.values())]
        assert not left_open, f"not closed: {left_open}"
        assert finished and took < 5, f"close took {took:.1f}s"
    finally:  # the other two instances are not under test: no need to wait for their clean close
        frozen.kill()
        if joiner.proc is not None:
            joiner.kill()
