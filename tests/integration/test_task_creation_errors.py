"""A configuration error met while a task is created stops the instance, on the real broker.

A store with no serdes of its own and no `default.key.serde` is found out only when the task that
holds it opens its stores, inside the rebalance callback. Rejoining the group cannot heal that: every
assignment would fail the same way, and the instance would go round the group forever while doing
nothing. Kafka Streams' thread dies on the StreamsException it raises there and its uncaught-exception
handler decides; streamlet's member fails the same way (state ERROR under the default `shutdown_client`,
`streamlet run` exits 1 with the reason).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import (
    Consumed,
    KafkaStreams,
    Processor,
    ProcessorContext,
    Produced,
    Record,
    Serdes,
    State,
    Stores,
    StreamsBuilder,
    StreamThreadExceptionResponse,
    Topology,
)
from streamlet.errors import ConfigError
from tests.helpers.app_process import AppProcess
from tests.helpers.kafka import create_topics, produce

pytestmark = [pytest.mark.anyio, pytest.mark.broker]

STORE = "serdeless-store"
TOPICS_ENV = "TASK_CREATION_TOPICS"


class _Remember(Processor):
    """Keeps each record's value under its key and forwards it."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store: Any = context.get_state_store(STORE)

    def process(self, record: Record) -> None:
        self.store.put(record.key, record.value)
        self.context.forward(record)


def serdeless_store_topology(inp: str, out: str) -> Topology:
    """A processor whose store has no serdes, so the task needs `default.key.serde` to open it."""
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store(STORE)))
    (builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .process(_Remember, STORE)
     .to(out, Produced(key_serde=Serdes.String(), value_serde=Serdes.String())))
    return builder.build()


def cli_topology() -> Topology:
    """`serdeless_store_topology` for `streamlet run` (topics from $TASK_CREATION_TOPICS, "in,out")."""
    import os

    inp, out = os.environ[TOPICS_ENV].split(",")
    return serdeless_store_topology(inp, out)


async def _topics(bootstrap: str, name: str) -> tuple[str, str]:
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"{name}-in-{sfx}", f"{name}-out-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 2})
    await produce(bootstrap, inp, [(b"k", b"v")])
    return inp, out


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
async def test_a_config_error_creating_a_task_fails_the_client(kafka_broker: Any, tmp_path: Path,
                                                               guarantee: str) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    inp, out = await _topics(bootstrap, "taskcfg")
    streams = KafkaStreams(serdeless_store_topology(inp, out), {
        "application.id": f"taskcfg-{uuid.uuid4().hex[:8]}", "bootstrap.servers": bootstrap,
        "state.dir": str(tmp_path), "processing.guarantee": guarantee})
    seen: list[BaseException] = []

    def handler(error: BaseException) -> StreamThreadExceptionResponse:
        seen.append(error)
        return StreamThreadExceptionResponse.SHUTDOWN_CLIENT

    streams.set_uncaught_exception_handler(handler)
    await streams.start()
    try:
        with anyio.fail_after(90):  # before the fix: joined, failed, rejoined... never ERROR
            while streams.state is not State.ERROR:
                await anyio.sleep(0.2)
    finally:
        await streams.close()
    assert len(seen) == 1, seen
    error = seen[0]
    assert isinstance(error, ConfigError), repr(error)
    assert STORE in str(error) and "default.key.serde" in str(error), str(error)


async def test_streamlet_run_exits_1_naming_the_missing_serde(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    inp, out = await _topics(bootstrap, "taskcfg-cli")
    app = AppProcess("tests.integration.test_task_creation_errors:cli_topology",
                     {"bootstrap.servers": bootstrap, "application.id": f"taskcfg-cli-{uuid.uuid4().hex[:8]}",
                      "state.dir": tmp_path / "state", "processing.guarantee": "exactly_once_v2"},
                     tmp_path / "run.log", env={TOPICS_ENV: f"{inp},{out}"})
    app.start()
    assert app.proc is not None
    try:
        with anyio.move_on_after(90):
            while app.proc.poll() is None:
                await anyio.sleep(0.2)
    finally:
        code = app.stop()
    output = app.log_text()
    assert code == 1, output[-3000:]
    last = output.strip().splitlines()[-1]
    assert last.startswith("streamlet: error: the application failed: ConfigError: "), last
    assert STORE in last and "default.key.serde" in last, last
    assert "rejoining the group" not in output, output[-3000:]
