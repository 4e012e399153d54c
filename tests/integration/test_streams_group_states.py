"""The client's state in a streams group (KIP-1071) on the real Kafka 4.4 broker, as Kafka Streams 4.4
reports it: a member is RUNNING once its first assignment arrived, even when that assignment holds no
task yet (the tasks it is to run are still another member's); tasks handed over later move it to
REBALANCING and back to RUNNING. `/health/ready` answers 200 exactly in RUNNING."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet import KafkaStreams, State
from tests.helpers.kafka import create_topics, produce
from tests.integration.topologies import STREAMS, upper_topology


@pytest.mark.anyio
@pytest.mark.broker
@pytest.mark.usefixtures("streams_groups")
async def test_a_member_is_running_before_it_holds_tasks(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"sg-state-in-{sfx}", f"sg-state-out-{sfx}"
    await create_topics(bootstrap, {inp: 4, out: 4})
    await produce(bootstrap, inp, [(f"k{i}".encode(), b"v") for i in range(20)])
    config = {"application.id": f"sg-state-{sfx}", "bootstrap.servers": bootstrap, **STREAMS,
              "commit.interval.ms": 100}
    first = KafkaStreams(upper_topology(inp, out), {**config, "state.dir": str(tmp_path / "0")})
    second = KafkaStreams(upper_topology(inp, out), {**config, "state.dir": str(tmp_path / "1")})
    seen: list[tuple[State, int]] = []  # the second member's states, with the partitions it held then

    def listener(new: State, _old: State) -> None:
        sup = second._supervisor
        seen.append((new, len(sup.view.assigned) if sup is not None else 0))

    second.set_state_listener(listener)
    try:
        await first.start()
        with anyio.fail_after(120):  # the first member runs every task
            while not (first.state is State.RUNNING and first._supervisor is not None
                       and len(first._supervisor.view.assigned) == 4):
                await anyio.sleep(0.1)
        await second.start()
        with anyio.fail_after(120):  # the second one takes tasks over once the first gave them up
            while not (second.state is State.RUNNING and second._supervisor is not None
                       and second._supervisor.view.assigned):
                await anyio.sleep(0.1)
    finally:
        await second.close()
        await first.close()
    running = [held for state, held in seen if state is State.RUNNING]
    # RUNNING first with nothing held (all tasks were the first member's), later with tasks.
    assert running[0] == 0, seen
    assert any(held for held in running), seen
