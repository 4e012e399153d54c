"""`KafkaStreams.close(CloseOptions)` (KIP-1153) on a real broker: `REMAIN_IN_GROUP` closes without
LeaveGroup (the member stays in the consumer group until its session times out, so an instance coming
back finds its tasks where it left them), `LEAVE_GROUP` and streamlet's `DEFAULT` leave at once (the group
is empty right after close), and a timeout given in the options bounds the close."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from streamlet import CloseOptions, GroupMembershipOperation, KafkaStreams
from streamlet.errors import StreamsError
from tests.helpers.group_members import describe_classic
from tests.helpers.kafka import create_topics, produce, read_until
from tests.integration.topologies import upper_topology

pytestmark = [pytest.mark.anyio, pytest.mark.broker]


async def _members(bootstrap: str, group: str) -> int:
    return len((await describe_classic(bootstrap, group)).members)


async def _close_with(kafka_broker: Any, tmp_path: Path, options: CloseOptions | None) -> int:
    """Run a member until it processed some records, close it with `options`; the group's member count
    right after the close."""
    bootstrap = kafka_broker.bootstrap_servers
    sfx = uuid.uuid4().hex[:8]
    inp, out, app = f"close-in-{sfx}", f"close-out-{sfx}", f"close-{sfx}"
    await create_topics(bootstrap, {inp: 2, out: 1})
    streams = KafkaStreams(upper_topology(inp, out), {
        "application.id": app, "bootstrap.servers": bootstrap, "state.dir": str(tmp_path),
        "commit.interval.ms": 100, "session.timeout.ms": 45000})
    await streams.start()
    try:
        await produce(bootstrap, inp, [(b"k", b"v")])
        await read_until(bootstrap, out, lambda rs: len(rs) >= 1, timeout=60)
        assert await _members(bootstrap, app) == 1
    finally:
        assert await (streams.close() if options is None else streams.close(options))
    return await _members(bootstrap, app)


async def test_remain_in_group_keeps_the_member_until_its_session_times_out(kafka_broker: Any,
                                                                             tmp_path: Path) -> None:
    options = CloseOptions.group_membership_operation(GroupMembershipOperation.REMAIN_IN_GROUP)
    assert await _close_with(kafka_broker, tmp_path, options.with_timeout(timedelta(seconds=60))) == 1


@pytest.mark.parametrize("operation", [GroupMembershipOperation.LEAVE_GROUP, GroupMembershipOperation.DEFAULT, None])
async def test_leave_group_and_the_default_leave_at_once(kafka_broker: Any, tmp_path: Path,
                                                         operation: GroupMembershipOperation | None) -> None:
    options = None if operation is None else CloseOptions.group_membership_operation(operation)
    assert await _close_with(kafka_broker, tmp_path, options) == 0


def test_options_are_built_fluently_and_checked() -> None:
    options = CloseOptions.timeout(timedelta(seconds=5)).with_group_membership_operation(
        GroupMembershipOperation.REMAIN_IN_GROUP)
    assert options.timeout_s == 5 and not options.leaves_group
    assert CloseOptions.timeout(2.5).leaves_group and CloseOptions().timeout_s is None
    with pytest.raises(StreamsError):
        CloseOptions.timeout(-1)
    with pytest.raises(TypeError):
        CloseOptions.group_membership_operation("leave")  # type: ignore[arg-type]
