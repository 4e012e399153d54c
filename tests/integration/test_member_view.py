"""`MemberView`: the read-only view of a group member that the metrics and `KafkaStreams` read, on a
real broker. It must follow the member's parts through its life: empty before `run()`, then the
assignment, the next offset of every partition (what the consumer lag is measured from), the host
map, the partition counts and the commit count."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamlet.config import StreamsConfig
from streamlet.metrics.streams_metrics import partition_lags
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.supervisor import Supervisor
from tests.helpers.kafka import create_topics, produce, read_until
from tests.integration.topologies import upper_topology


def test_before_run_the_view_shows_no_assignment_and_zero_counts(tmp_path: Path) -> None:
    view = Supervisor(upper_topology("in", "out"),
                      StreamsConfig({"application.id": "view", "state.dir": str(tmp_path)})).view
    assert view.assigned == frozenset() and dict(view.next_offsets) == {}
    assert view.hosts is None and dict(view.partition_counts) == {}
    assert (view.commits, view.dirty_recoveries, view.lost_memberships, view.full_queue_pauses) == (0, 0, 0, 0)


@pytest.mark.anyio
@pytest.mark.broker
async def test_the_view_follows_the_running_member_and_cannot_change_it(kafka_broker: Any, tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out = f"view-in-{sfx}", f"view-out-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 3})
    streams = KafkaStreams(upper_topology(inp, out), {
        "application.id": f"view-{sfx}", "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100, "application.server": "localhost:7070"})
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(40)]
    async with streams:
        await produce(bootstrap, inp, records)
        await read_until(bootstrap, out, lambda rs: len(rs) >= len(records), timeout=60)
        sup = streams._supervisor
        assert sup is not None
        view = sup.view
        with anyio.fail_after(20):
            while view.commits == 0:
                await anyio.sleep(0.1)
        assert view.assigned == {(inp, 0), (inp, 1)}
        # Every record was handed to its task: each partition's next offset is its end, so no lag.
        ends = await sup.consumer.end_offsets([tp for tp in sup.consumer.assignment()])
        assert dict(view.next_offsets) == {(tp.topic, tp.partition): end for tp, end in ends.items()}
        assert sum(ends.values()) == len(records)
        assert partition_lags(sup) == {(inp, 0): 0, (inp, 1): 0}
        assert view.hosts is not None and [h.endpoint for h in view.hosts] == ["localhost:7070"]
        assert view.partition_counts[inp] == 2 and view.partition_counts[out] == 3
        assert streams.metrics["commits"] == view.commits
        with pytest.raises(TypeError):
            view.partition_counts[out] = 1  # type: ignore[index]
        with pytest.raises(AttributeError):
            view.commits = 0  # type: ignore[misc]
