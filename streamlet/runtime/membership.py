"""`GroupMembership`: whether this member is still the one the group handed its tasks to.

Keeping a task across a rebalance is safe only while this member stayed in the group the whole
time: then nobody else can have run the task in between. A member that was dropped (frozen past its
session timeout, cut off from the coordinator) learns it from a heartbeat or a commit that the
coordinator answers with "unknown member" or "illegal generation"; aiokafka then resets its member id
and rejoins through the same revoke/assign callbacks as an ordinary rebalance, and may well be handed
its own tasks back. Those tasks are *lost*, as Kafka Streams calls it (`onPartitionsLost`): another
member may have processed and committed their partitions meanwhile (see `StreamsRebalanceListener`).

Why a class of its own: three parts of the member ask this one question — the rebalance listener
(keep the tasks, or were they lost?), the poll loop (may this batch be dispatched?) and the
at-least-once commit (may these offsets be committed?) — and the answer comes from aiokafka's group
coordinator, a private object. This is the one place that reads it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from aiokafka.errors import CommitFailedError

from streamlet.runtime.commit_protocol import Metadata, Offsets, with_metadata

log = logging.getLogger(__name__)


class Membership(Protocol):
    """What the poll loop, the committer and the rebalance listener ask of a member's group membership:
    `GroupMembership` (the classic consumer group) or `StreamsGroupMembership` (a KIP-1071 streams group)."""

    def out_of_group(self) -> bool: ...

    def assignment_taken(self) -> None: ...

    def forget_assignment(self) -> None: ...

    def lost_since_assignment(self) -> str | None: ...

    def request_rejoin(self) -> None: ...


class GroupMembership:
    """This member's id and generation in the consumer group, and the ones its current tasks were
    assigned under."""

    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer
        # (member id, generation) under which the current tasks were assigned: see lost_since_assignment.
        self._assigned_as: tuple[str, int] | None = None

    def current(self) -> tuple[str, int]:
        """This member's id and generation as the consumer's group coordinator knows them now."""
        coordinator = self._consumer._coordinator
        return str(coordinator.member_id or ""), int(coordinator.generation)

    def out_of_group(self) -> bool:
        """True once aiokafka reset the membership (the coordinator did not know this member any more)."""
        member_id, generation = self.current()
        return generation < 0 or not member_id

    def assignment_taken(self) -> None:
        """The tasks of the assignment being taken over belong to the membership current now."""
        self._assigned_as = self.current()

    def forget_assignment(self) -> None:
        """No task is held under any membership any more (they were all closed as lost)."""
        self._assigned_as = None

    def lost_since_assignment(self) -> str | None:
        """Why the tasks of the last assignment cannot be kept, or None while they can.

        Kept tasks are safe only if this member took part in every generation since it was handed
        them: the same member id (a dropped member rejoins under a new one) and the next generation
        (a gap means a generation whose assignment this member never received, in which the tasks may
        have run elsewhere)."""
        if self._assigned_as is None:
            return None
        before_id, before_generation = self._assigned_as
        member_id, generation = self.current()
        if generation < 0 or not member_id:
            return f"the group coordinator no longer knows member {before_id} of generation {before_generation}"
        if member_id != before_id:
            return f"this member rejoined as {member_id}; its tasks were assigned to {before_id}"
        if generation != before_generation + 1:
            return (f"the group went from generation {before_generation} to {generation}; "
                    "this member missed the assignments in between")
        return None

    def request_rejoin(self) -> None:
        """Go through the group again: the next assignment decides who runs what."""
        self._consumer._coordinator.request_rejoin()

    async def commit_offsets(self, offsets: Offsets, metadata: Metadata) -> None:
        """At-least-once offset commit. A task that moved to another member in an eager rebalance is
        closed (cleanly) only once the new assignment arrives, when its partitions are no longer this
        consumer's: their offsets were committed on revocation, and committing them now would fail the
        whole takeover. Such offsets are skipped; at worst the new owner replays a little (at-least-once)."""
        if self.out_of_group():
            # aiokafka would send generation -1, which the coordinator takes as a group-less commit
            # when the group is empty: stale offsets of a dropped member would overwrite its successor's.
            raise CommitFailedError("this member is out of the group; its partitions may be another member's now")
        assigned = self._consumer.assignment()
        mine = {tp: o for tp, o in with_metadata(offsets, metadata).items() if tp in assigned}
        if len(mine) < len(offsets):
            log.debug("not committing offsets of %d partitions no longer assigned", len(offsets) - len(mine))
        if mine:
            await self._consumer.commit(mine)
