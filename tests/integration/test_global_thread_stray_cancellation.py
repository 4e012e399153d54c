"""A cancellation that escapes into the global stores' background loop (a client library cancelling a
future the loop awaits) must not stop the global stores' updates in silence while the client says
RUNNING: it fails the group member, which is replaced loudly, and the global stores stay current."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from streamlet import KafkaStreams
from streamlet.runtime.global_state import GlobalStreamThread
from streamlet.runtime.kafka_streams import State
from tests.helpers.kafka import create_topics, produce
from tests.integration import global_fk_app

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

LOOP_POLL_MS = 100
"""The background loop's poll timeout (restoration polls with another one)."""


async def test_a_stray_cancellation_in_the_global_loop_replaces_the_member(
        kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    orders, customers, out = f"gs-orders-{sfx}", f"gs-customers-{sfx}", f"gs-out-{sfx}"
    await create_topics(bootstrap, {orders: 2, customers: 2, out: 2})
    for name, topic in (("GJ_ORDERS", orders), ("GJ_CUSTOMERS", customers), ("GJ_OUTPUT", out)):
        monkeypatch.setenv(name, topic)
    real_poll_once = GlobalStreamThread._poll_once
    strays: list[int] = []

    async def poll_once(self: GlobalStreamThread, timeout_ms: int) -> int:
        if timeout_ms == LOOP_POLL_MS and not strays:
            strays.append(1)
            raise asyncio.CancelledError  # what a cancelled library future delivers to its awaiter
        return await real_poll_once(self, timeout_ms)

    monkeypatch.setattr(GlobalStreamThread, "_poll_once", poll_once)
    await produce(bootstrap, customers, [(b"c1", b"first")])
    streams = KafkaStreams(global_fk_app.global_join_topology(), {
        "application.id": f"gs-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100, "default.key.serde": "String", "default.value.serde": "String"})
    with caplog.at_level(logging.INFO, logger="streamlet.runtime.kafka_streams"):
        async with streams:
            for _ in range(600):  # the member fails on the stray cancellation and a new one starts
                if "replacing the failed group member" in caplog.text and streams.state is State.RUNNING:
                    break
                await asyncio.sleep(0.1)
            await produce(bootstrap, customers, [(b"c1", b"second")])
            view = streams.store("customers-global")
            for _ in range(300):  # the replacement's global loop keeps the store current
                found = view.get("c1")
                if found is not None and found.value == "second":
                    break
                await asyncio.sleep(0.1)
            assert found is not None and found.value == "second"
            assert streams.state is State.RUNNING
    assert strays == [1]
    assert "StrayCancellationError: an unexpected cancellation surfaced in the global stream thread" in caplog.text
