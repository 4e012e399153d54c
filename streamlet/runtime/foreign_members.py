"""Waiting out a group still held by members of another protocol, instead of failing on it.

Why this exists: the usual way to move a Kafka Streams (Java) application to streamlet is to close it
and start streamlet with the same `application.id`. But Kafka Streams' consumers do not leave the group
when they close (they skip LeaveGroup on purpose, so a restart does not cost a rebalance): the group
keeps their members, of protocol `stream`, until their `session.timeout.ms` (45 s by default) expires.
Meanwhile the broker refuses streamlet's JoinGroup, whose protocol (`streamlet`) no member offers:
`InconsistentGroupProtocolError`, error 23. aiokafka takes that for fatal and hands it to the next
poll; it retries the join only once the error has been read. Kafka Streams itself would die on it
too (its consumer throws), but for a move this refusal is expected and clears by itself, so the
member waits: it logs once what it waits for and why (with the group's protocol and client ids as the
coordinator describes them), reminds now and then, retries the join at a slow pace, and gives up with
`GroupHeldByOtherProtocolError` only after `task.timeout.ms`, the setting Kafka Streams uses for how
long a task may stall on retriable errors. aiokafka's own "fatal error" line, one per retry, is
filtered out: this module's lines say more.

The two groups cannot simply be shared by offering Kafka Streams' protocol name: each side's leader
would read the other's subscription bytes (streamlet's user data is not Kafka Streams'
SubscriptionInfo) and the assignment would be garbage. See `streamlet.kafka.assignor`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from aiokafka.errors import InconsistentGroupProtocolError

from streamlet.errors import GroupHeldByOtherProtocolError
from streamlet.kafka.assignor import ASSIGNOR_NAME
from streamlet.kafka.group_description import GroupDescription

log = logging.getLogger(__name__)

RETRY_INTERVAL_S = 1.0
"""How long the member pauses between two joins the broker refused (one JoinGroup per pause)."""
REMIND_EVERY_S = 15.0
"""How often, while it lasts, the wait is logged again."""
_AIOKAFKA_COORDINATOR_LOGGER = "aiokafka.consumer.group_coordinator"
_AIOKAFKA_FATAL_JOIN = "Attempt to join group failed due to fatal error"


class _RefusedJoinFilter(logging.Filter):
    """Drops aiokafka's per-retry "fatal error" line for error 23 (`ForeignMembersWait` explains it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (str(record.msg).startswith(_AIOKAFKA_FATAL_JOIN)
                    and any(isinstance(arg, InconsistentGroupProtocolError) for arg in record.args or ()))


def _quiet_aiokafka_refusals() -> None:
    target = logging.getLogger(_AIOKAFKA_COORDINATOR_LOGGER)
    if not any(isinstance(f, _RefusedJoinFilter) for f in target.filters):
        target.addFilter(_RefusedJoinFilter())


class ForeignMembersWait:
    """Keeps track of one member's wait for a group held by another protocol (see the module docstring).

    The poll loop calls `refused()` whenever a poll raised `InconsistentGroupProtocolError` (then pauses
    `RETRY_INTERVAL_S` before the next poll, which retries the join) and `polled()` after every poll
    that returned. `describe()` says who holds the group (None when unknown)."""

    def __init__(self, group: str, task_timeout_ms: int,
                 describe: Callable[[], Awaitable[GroupDescription | None]] | None = None,
                 remind_every: float = REMIND_EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.group = group
        self.task_timeout_ms = task_timeout_ms
        self.remind_every = remind_every
        self._describe = describe
        self._clock = clock
        self._since: float | None = None
        self._reminded_at = 0.0
        self.refusals = 0  # joins refused in the current wait
        _quiet_aiokafka_refusals()

    @property
    def waiting(self) -> bool:
        return self._since is not None

    async def refused(self, error: InconsistentGroupProtocolError) -> None:
        """The broker refused the join again: log the wait (the first time, then every `remind_every`
        seconds); raise `GroupHeldByOtherProtocolError` once it has lasted `task.timeout.ms`."""
        now = self._clock()
        self.refusals += 1
        if self._since is None:
            self._since = self._reminded_at = now
            log.warning(
                "cannot join group %r yet: the group still holds members of another protocol (%s); this "
                "member offers protocol %r. A Kafka Streams application's members do not leave the group when "
                "it closes: they expire after their session.timeout.ms (45000 ms by default). Waiting for them "
                "and retrying every %.0f s, for up to task.timeout.ms (%d ms). (A Kafka Streams application "
                "closed with CloseOptions.groupMembershipOperation(LEAVE_GROUP) leaves at once.)",
                self.group, await self._holders(), ASSIGNOR_NAME, RETRY_INTERVAL_S, self.task_timeout_ms)
            return
        waited = now - self._since
        if waited * 1000 >= self.task_timeout_ms:
            raise GroupHeldByOtherProtocolError(
                f"group {self.group!r} still holds members of another protocol ({await self._holders()}) after "
                f"{waited:.0f} s, so this member (protocol {ASSIGNOR_NAME!r}) cannot join it: stop the other "
                f"application's instances, or raise task.timeout.ms ({self.task_timeout_ms} ms) to wait longer"
            ) from error
        if now - self._reminded_at >= self.remind_every:
            self._reminded_at = now
            log.warning("still waiting to join group %r after %.0f s: it still holds members of another "
                        "protocol (%s); giving up in %.0f s (task.timeout.ms)", self.group, waited,
                        await self._holders(), self.task_timeout_ms / 1000 - waited)

    def polled(self) -> None:
        """A poll returned: the member is in the group (again); ends a wait in progress."""
        if self._since is not None:
            log.info("joined group %r after waiting %.1f s for the members of another protocol to leave it "
                     "(%d refused joins)", self.group, self._clock() - self._since, self.refusals)
            self._since = None
            self.refusals = 0

    async def _holders(self) -> str:
        described = await self._describe() if self._describe is not None else None
        return described.summary() if described is not None else "not described"
