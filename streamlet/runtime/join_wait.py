"""`JoinWait`: says what a long join of a classic consumer group waits for, while it waits.

A member joining a classic group is answered once every member the coordinator knows has rejoined or
has had its session expire. After an instance is killed (kill -9, a lost container) and restarted, the
coordinator still counts the member it was: the restarted instance joins under a new member id, and
its JoinGroup is held until the old member's `session.timeout.ms` has run out (45 s by default), with
no line in the log meanwhile. aiokafka then even reports the join as a request that timed out, which
reads like a broker failure although the broker answered everything (`broker_wait_log` says what that
line means). An operator needs to read at once what the member waits for and how long it may take.

`JoinWait.run()` watches the member's consumer: once a join has lasted `report_after_s`, it describes
the group (who is in it) and logs one line: the previous member of this same instance (a member with
this instance's client id, which carries its process id) and its session timeout, or else the members
the group waits for. Static membership (`group.instance.id`) avoids the wait: the restarted member takes
its predecessor's place at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from streamlet.kafka.group_description import GroupDescription

log = logging.getLogger(__name__)

REPORT_AFTER_S = 3.0
"""How long a join may take before the member says what it waits for."""


class JoinWait:
    """Reports a classic group join that takes long (see the module docstring).

    `joining()` says whether the member is in a join now; `describe()` describes the group (None when it
    cannot); `own_client_id` is this member's main consumer client id, None when `client.id` was set by
    the user (then instances share it and it cannot tell the previous member apart)."""

    def __init__(self, *, joining: Callable[[], bool], describe: Callable[[], Awaitable[GroupDescription | None]],
                 own_client_id: str | None, session_timeout_ms: int, static: bool,
                 report_after_s: float = REPORT_AFTER_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._joining = joining
        self._describe = describe
        self._own = own_client_id
        self._session_timeout_ms = session_timeout_ms
        self._static = static
        self._report_after_s = report_after_s
        self._clock = clock
        self.reports: list[str] = []
        """The lines logged, oldest first (what a test reads)."""

    async def run(self, poll_interval_s: float = 0.5) -> None:
        """Watch until cancelled: one line per join that lasts `report_after_s`."""
        since: float | None = None
        reported = False
        while True:
            await anyio.sleep(poll_interval_s)
            if not self._joining():
                since, reported = None, False
                continue
            now = self._clock()
            since = now if since is None else since
            if not reported and now - since >= self._report_after_s:
                reported = True
                self.report(await self._describe(), now - since)

    def report(self, group: GroupDescription | None, waited_s: float) -> str:
        """Log (and keep) the line for a join that has waited `waited_s` seconds, given the group's description."""
        session = f"session.timeout.ms={self._session_timeout_ms}"
        previous = (group is not None and self._own is not None and not self._static
                    and group.client_ids.count(self._own) >= 2)
        if previous:
            line = (f"joining the group for {waited_s:.0f}s: waiting for the previous member's session to expire "
                    f"({session}): the group still counts the member this instance was before it restarted "
                    f"(client id {self._own}), which did not leave the group; the coordinator answers the join "
                    "once that session has run out (a static member, group.instance.id, would not wait)")
        elif group is not None and not group.client_ids:
            line = (f"joining the group for {waited_s:.0f}s: the group has no member yet (state {group.state}); "
                    "its coordinator is still starting up or being found")
        else:
            members = group.summary() if group is not None else "its members could not be described"
            line = (f"joining the group for {waited_s:.0f}s: the coordinator answers once every member it knows "
                    f"has rejoined or its session has expired ({session}); the group: {members}")
        self.reports.append(line)
        log.warning("%s", line)
        return line


def joining_classic_group(consumer: Any) -> Callable[[], bool]:
    """Whether `consumer` (aiokafka, subscribed) is in a join of its group now: its subscription awaits an
    assignment."""

    def joining() -> bool:
        subscription = getattr(consumer, "_subscription", None)
        return bool(subscription is not None and subscription.subscription is not None
                    and subscription.reassignment_in_progress)

    return joining
