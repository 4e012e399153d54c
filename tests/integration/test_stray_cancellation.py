"""A cancellation that escapes from inside the group member (a client library cancelling a future the
member awaits) must not stop processing silently while the client still says RUNNING: the member is
replaced, loudly. It once did, in the 60 s broker-outage test: no output for five minutes, then an
instant "close"."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet.runtime.kafka_streams import KafkaStreams, State
from streamlet.runtime.supervisor import Supervisor
from tests.integration.kafka_helpers import create_topics, produce, read_until
from tests.integration.test_runtime_pipe import upper_topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def test_a_stray_cancellation_replaces_the_member_instead_of_stopping_it_silently(
        kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"stray-in-{sfx}", f"stray-out-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    real_poll_loop = Supervisor._poll_loop
    calls: list[int] = []

    async def poll_loop_cancelled_once(self: Supervisor) -> None:
        calls.append(1)
        if len(calls) == 1:
            await anyio.sleep(0.5)
            raise asyncio.CancelledError  # what a cancelled library future delivers to its awaiter
        await real_poll_loop(self)

    monkeypatch.setattr(Supervisor, "_poll_loop", poll_loop_cancelled_once)
    streams = KafkaStreams(upper_topology(inp, out), {"application.id": f"stray-{sfx}", "bootstrap.servers": bootstrap,
                                                      "state.dir": str(tmp_path), "commit.interval.ms": 100})
    with caplog.at_level(logging.INFO, logger="streamlet.runtime.kafka_streams"):
        async with streams:
            await produce(bootstrap, inp, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)])
            got = await read_until(bootstrap, out, lambda rs: len(rs) >= 20, timeout=60)
            assert streams.state is State.RUNNING
    assert len(calls) == 2
    assert sorted(r.value for r in got) == sorted(f"V{i}".encode() for i in range(20))
    assert "the group member stopped on an unexpected cancellation" in caplog.text
    assert "replacing the failed group member" in caplog.text
