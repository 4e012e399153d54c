"""The uncaught-exception handler on the real broker: replace the member, or shut the application down."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import (
    KafkaStreams,
    State,
    StreamThreadExceptionResponse,
)
from tests.helpers.kafka import create_topics, produce, read_until
from tests.integration.topologies import failing_topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def test_replace_thread_resumes_after_a_failure(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"uncaught-in-{sfx}", f"uncaught-out-{sfx}"
    await create_topics(bootstrap, {inp: 1, out: 1})
    failures: list[str] = []
    seen: list[BaseException] = []
    streams = KafkaStreams(failing_topology(inp, out, failures), {
        "application.id": f"uncaught-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "processing.guarantee": "exactly_once_v2"})

    def handler(error: BaseException) -> StreamThreadExceptionResponse:
        seen.append(error)
        return StreamThreadExceptionResponse.REPLACE_THREAD

    streams.set_uncaught_exception_handler(handler)
    async with streams:
        await produce(bootstrap, inp, [(b"k", b"a"), (b"k", b"boom"), (b"k", b"b")])
        got = await read_until(bootstrap, out, lambda rs: len(rs) >= 3, isolation_level="read_committed")
        assert streams.state is State.RUNNING
    assert [r.value for r in got] == [b"A", b"BOOM", b"B"]  # exactly once across the replacement
    assert len(seen) == 1 and "boom" in str(seen[0])


async def test_shutdown_application_stops_every_instance(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"shutdown-in-{sfx}", f"shutdown-out-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    config = {"application.id": f"shutdown-{sfx}", "bootstrap.servers": bootstrap,
              "uncaught.exception.handler": "shutdown_application", "session.timeout.ms": 6000}
    instances = [KafkaStreams(failing_topology(inp, out, []), {**config, "state.dir": str(tmp_path / str(i))})
                 for i in range(2)]
    try:
        for s in instances:
            await s.start()
        with anyio.fail_after(60):
            while not all(s.state is State.RUNNING for s in instances):
                await anyio.sleep(0.1)
        # One poison record: the instance that gets it fails and asks for the application shutdown;
        # the other one has nothing wrong and must stop because it was asked to.
        await produce(bootstrap, inp, [(b"k0", b"boom")])
        with anyio.fail_after(90):
            while not all(s.state is State.ERROR for s in instances):
                await anyio.sleep(0.1)
        errors = sorted(type(s.error).__name__ for s in instances)
        assert errors == ["ApplicationShutdownError", "RuntimeError"], [repr(s.error) for s in instances]
    finally:
        for s in instances:
            await s.close()
