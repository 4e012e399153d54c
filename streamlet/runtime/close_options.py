"""`CloseOptions`: how `KafkaStreams.close()` ends the instance (Kafka Streams' `CloseOptions`, KIP-1153).

Two choices: how long `close()` may take, and what happens to the instance's membership in the consumer
group. Leaving the group lets the other instances take its tasks over at once (one rebalance now);
remaining in it keeps the tasks where they are until the member's session times out, which is what an
instance about to come back (a rolling restart) wants: no rebalance at all if it rejoins in time.

Kafka Streams' `DEFAULT` for the classic group protocol is to remain (its consumers skip LeaveGroup on
close); streamlet's `DEFAULT` leaves, as `close()` always did here, so that a closed instance's partitions
never wait a session timeout. Ask for `REMAIN_IN_GROUP` explicitly to get Kafka Streams' behaviour.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from datetime import timedelta

from streamlet.errors import StreamsError


class GroupMembershipOperation(enum.Enum):
    """What `close()` does with the instance's consumer-group membership."""

    DEFAULT = "default"
    """streamlet's default: leave the group (see the module docstring for Kafka Streams' default)."""
    LEAVE_GROUP = "leave_group"
    """Send LeaveGroup: the other instances rebalance and take the tasks over at once."""
    REMAIN_IN_GROUP = "remain_in_group"
    """Close without leaving: the member stays in the group until its session times out."""


@dataclass(frozen=True)
class CloseOptions:
    """Options of `KafkaStreams.close(CloseOptions...)`, built like Kafka Streams' fluent ones::

        await streams.close(CloseOptions.group_membership_operation(GroupMembershipOperation.REMAIN_IN_GROUP)
                            .with_timeout(timedelta(seconds=30)))

    `timeout` (None: wait as long as closing takes) bounds how long `close()` waits for the tasks to
    commit and close; `close()` returns False when it was cut short."""

    timeout_s: float | None = None
    operation: GroupMembershipOperation = GroupMembershipOperation.DEFAULT

    @staticmethod
    def timeout(timeout: timedelta | float) -> CloseOptions:
        """Options with a timeout (a timedelta, or seconds) and the default membership operation."""
        return CloseOptions().with_timeout(timeout)

    @staticmethod
    def group_membership_operation(operation: GroupMembershipOperation) -> CloseOptions:
        """Options with a membership operation and no timeout."""
        return CloseOptions().with_group_membership_operation(operation)

    def with_timeout(self, timeout: timedelta | float) -> CloseOptions:
        """The same options with a timeout (a timedelta, or seconds)."""
        seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
        if seconds < 0:
            raise StreamsError(f"the close timeout must not be negative, got {timeout!r}")
        return replace(self, timeout_s=seconds)

    def with_group_membership_operation(self, operation: GroupMembershipOperation) -> CloseOptions:
        """The same options with another membership operation."""
        if not isinstance(operation, GroupMembershipOperation):
            raise TypeError(f"expected a GroupMembershipOperation, got {operation!r}")
        return replace(self, operation=operation)

    @property
    def leaves_group(self) -> bool:
        """Whether closing sends LeaveGroup."""
        return self.operation is not GroupMembershipOperation.REMAIN_IN_GROUP
