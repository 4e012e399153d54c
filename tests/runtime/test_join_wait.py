"""`JoinWait`: the line a long classic-group join logs, without a broker (the broker test restarts an
instance after kill -9: tests/integration/test_static_membership.py)."""

from __future__ import annotations

import logging

import anyio
import pytest

from streamlet.kafka.group_description import GroupDescription
from streamlet.runtime.join_wait import JoinWait

OWN = "app-1111-StreamThread-1-consumer"
OTHER = "app-2222-StreamThread-1-consumer"


def _group(*client_ids: str) -> GroupDescription:
    return GroupDescription("app", "PreparingRebalance", "consumer", "streamlet", client_ids)


async def _none() -> GroupDescription | None:
    return None


def _wait(own: str | None = OWN, static: bool = False) -> JoinWait:
    return JoinWait(joining=lambda: True, describe=_none, own_client_id=own, session_timeout_ms=45000, static=static)


def test_a_previous_member_of_this_instance_is_named_with_its_session_timeout() -> None:
    line = _wait().report(_group(OWN, OTHER, OWN), 3.2)
    assert line.startswith("joining the group for 3s: waiting for the previous member's session to expire "
                           "(session.timeout.ms=45000)")
    assert OWN in line


@pytest.mark.parametrize(("own", "static", "members"), [
    (OWN, False, (OWN, OTHER)),  # only this member itself: the group waits for others
    (None, False, (OWN, OWN)),  # client.id set by the user: instances share it, nothing tells them apart
    (OWN, True, (OWN, OWN)),  # a static member takes its predecessor's place; it is not waited for
])
def test_otherwise_the_line_names_the_group_it_waits_for(own: str | None, static: bool,
                                                        members: tuple[str, ...]) -> None:
    line = _wait(own, static).report(_group(*members), 5)
    assert "previous member" not in line
    assert "the coordinator answers once every member it knows has rejoined or its session has expired" in line
    assert "2 member(s)" in line


def test_a_group_without_members_is_not_said_to_wait_for_any() -> None:
    line = _wait().report(GroupDescription("app", "Dead", "", "", ()), 3)
    assert "no member yet (state Dead)" in line and "session" not in line


@pytest.mark.anyio
async def test_one_line_per_join_that_lasts(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    joining = [False]

    async def describe() -> GroupDescription:
        return _group(OWN, OWN)

    wait = JoinWait(joining=lambda: joining[0], describe=describe, own_client_id=OWN, session_timeout_ms=10000,
                    static=False, report_after_s=3.0, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="streamlet.runtime.join_wait")
    async with anyio.create_task_group() as tg:
        tg.start_soon(wait.run, 0.001)
        for step in [(True, 1.0)] * 8 + [(False, 1.0)] * 2 + [(True, 1.0)] * 2:  # a long join, a short one
            joining[0], dt = step
            now[0] += dt
            await anyio.sleep(0.02)
        tg.cancel_scope.cancel()
    assert len(wait.reports) == 1 and "session.timeout.ms=10000" in wait.reports[0]
    assert [r.getMessage() for r in caplog.records] == wait.reports
