"""`ForeignMembersWait`: a join refused for another protocol's members is logged once, then now and then,
and becomes a fatal error naming task.timeout.ms only once that much time has passed."""

from __future__ import annotations

import logging

import pytest
from aiokafka.errors import InconsistentGroupProtocolError

from streamlet.errors import GroupHeldByOtherProtocolError
from streamlet.kafka.group_description import GroupDescription
from streamlet.runtime.foreign_members import ForeignMembersWait

pytestmark = pytest.mark.anyio

LOGGER = "streamlet.runtime.foreign_members"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def java_holders() -> GroupDescription:
    return GroupDescription("app", "Stable", "consumer", "stream", ("app-1-StreamThread-1-consumer",))


async def test_logged_once_then_every_reminder_interval_not_per_refusal(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    described = 0

    async def describe() -> GroupDescription:
        nonlocal described
        described += 1
        return java_holders()

    wait = ForeignMembersWait("app", 300_000, describe, remind_every=15.0, clock=clock)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for _ in range(40):  # one refusal a second for 40 s
            await wait.refused(InconsistentGroupProtocolError())
            clock.now += 1.0
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 3, lines  # at 0 s, 15 s and 30 s
    first = lines[0]
    assert "still holds members of another protocol" in first
    assert "protocol 'stream' (Kafka Streams)" in first and "app-1-StreamThread-1-consumer" in first
    assert "session.timeout.ms" in first and "task.timeout.ms (300000 ms)" in first
    assert all("still waiting to join group 'app' after" in line for line in lines[1:])
    assert described == 3  # the group is described only when a line is written
    assert wait.waiting and wait.refusals == 40


async def test_gives_up_after_task_timeout_naming_the_setting() -> None:
    clock = Clock()
    wait = ForeignMembersWait("app", 5_000, clock=clock)
    await wait.refused(InconsistentGroupProtocolError())
    clock.now += 4.9
    await wait.refused(InconsistentGroupProtocolError())  # not yet
    clock.now += 0.1
    with pytest.raises(GroupHeldByOtherProtocolError, match=r"raise task\.timeout\.ms \(5000 ms\)") as raised:
        await wait.refused(InconsistentGroupProtocolError())
    assert isinstance(raised.value.__cause__, InconsistentGroupProtocolError)


async def test_a_successful_poll_ends_the_wait_and_a_later_refusal_starts_a_new_one(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    wait = ForeignMembersWait("app", 5_000, clock=clock)
    wait.polled()  # no wait in progress: nothing to say
    with caplog.at_level(logging.INFO, logger=LOGGER):
        await wait.refused(InconsistentGroupProtocolError())
        clock.now += 4.0
        wait.polled()
    assert not wait.waiting
    assert "joined group 'app' after waiting 4.0 s" in caplog.records[-1].getMessage()
    clock.now += 10.0
    await wait.refused(InconsistentGroupProtocolError())  # a new wait: its own 5 s, no error yet
    clock.now += 4.0
    await wait.refused(InconsistentGroupProtocolError())


def test_aiokafka_per_retry_fatal_line_for_error_23_is_filtered(caplog: pytest.LogCaptureFixture) -> None:
    ForeignMembersWait("app", 5_000)
    coordinator = logging.getLogger("aiokafka.consumer.group_coordinator")
    with caplog.at_level(logging.ERROR, logger="aiokafka"):
        coordinator.error("Attempt to join group failed due to fatal error: %s", InconsistentGroupProtocolError())
        coordinator.error("Attempt to join group failed due to fatal error: %s", ValueError("other"))
    assert [r.getMessage() for r in caplog.records] == ["Attempt to join group failed due to fatal error: other"]
