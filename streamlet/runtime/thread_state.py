"""The group member's state, named as Kafka Streams names its StreamThread's states.

Kafka Streams 4.x reports each stream thread's state as metrics (KIP-1091: `thread-state`, the state's
ordinal, and `state`, its name). A streamlet group member plays the stream thread's part, but its life is
spread over the supervisor, the rebalance listener and the poll loop rather than one state machine; this
tracker is where they report the moments Kafka Streams' thread changes state, so the metrics (and tests)
read one value with Kafka Streams' meaning. Once shutting down, only DEAD may follow, as in Kafka Streams,
whose thread ignores a rebalance's transitions during its shutdown.
"""

from __future__ import annotations

import enum
from collections import deque


class ThreadState(enum.Enum):
    """Kafka Streams' `StreamThread.State`, in its order (the `thread-state` metric reports the ordinal)."""

    CREATED = 0
    STARTING = 1
    PARTITIONS_REVOKED = 2
    PARTITIONS_ASSIGNED = 3
    RUNNING = 4
    PENDING_SHUTDOWN = 5
    DEAD = 6


_ENDING = (ThreadState.PENDING_SHUTDOWN, ThreadState.DEAD)


class ThreadStateTracker:
    """The member's current `ThreadState` and its recent transitions (`history`, oldest first)."""

    def __init__(self) -> None:
        self.state = ThreadState.CREATED
        self.history: deque[ThreadState] = deque([ThreadState.CREATED], maxlen=64)

    def set(self, state: ThreadState) -> None:
        """Move to `state`; a repeat is no transition, and after PENDING_SHUTDOWN only DEAD is taken."""
        current = self.state
        if state is current or current is ThreadState.DEAD:
            return
        if current is ThreadState.PENDING_SHUTDOWN and state is not ThreadState.DEAD:
            return
        self.state = state
        self.history.append(state)

    @property
    def ending(self) -> bool:
        """True once shutting down or dead."""
        return self.state in _ENDING
