"""A start-up that fails half-way releases what it had acquired (clients, the instance id)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from examples.bench_topologies_windows_join import window_count_topology
from streamlet.config import StreamsConfig
from streamlet.runtime import supervisor as supervisor_module
from streamlet.runtime.instance_id import ID_FILE, claim_instance_id
from streamlet.runtime.supervisor import Supervisor
from tests.helpers.kafka import create_topics

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


class StoreDirectoryBroken(Exception):
    pass


async def test_failed_start_stops_started_clients_and_releases_the_instance_id(
        kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suffix = uuid.uuid4().hex[:8]
    inp, out = f"start-in-{suffix}", f"start-out-{suffix}"
    await create_topics(kafka_broker.bootstrap_servers, {inp: 1, out: 1})
    monkeypatch.setenv("BENCH_INPUT", inp)
    monkeypatch.setenv("BENCH_OUTPUT", out)
    config = StreamsConfig({"bootstrap.servers": kafka_broker.bootstrap_servers, "application.id": f"start-{suffix}",
                            "state.dir": str(tmp_path / "state"), "processing.guarantee": "exactly_once_v2",
                            "num.standby.replicas": 1})

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise StoreDirectoryBroken("standby state directory unusable")

    # The failure comes after the instance id was claimed and the standby consumer started.
    monkeypatch.setattr(supervisor_module, "StandbyTasks", broken)
    sup = Supervisor(window_count_topology(), config)
    with pytest.raises(StoreDirectoryBroken):
        await sup.run()

    assert sup.standby_consumer is not None and sup.standby_consumer._closed
    state_root = sup._state_root()
    claimed = (state_root / ID_FILE).read_text().strip()
    # Released: the next instance on this directory gets the same id (a held lock would give a fresh one).
    again, release = claim_instance_id(state_root)
    try:
        assert again == claimed
    finally:
        release()
