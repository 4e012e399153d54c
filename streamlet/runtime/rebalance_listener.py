"""`StreamsRebalanceListener`: what the member does when the group takes partitions away and hands them out.

Kafka Streams' rebalance listener, on aiokafka's eager protocol. On revoke, dispatch stops and
everything processed so far is flushed and committed. On assign, tasks whose partitions left are
closed and new tasks are created and restored before any of their records is dispatched (their
partitions stay paused until then); tasks whose partitions stayed keep their open stores; standby
tasks follow the assignor's standby list; then every partition is sought explicitly (see
`PartitionPositions`), and a batch fetched before the rebalance is dropped and fetched again.
A failure to take the assignment over is retried by rejoining the group (the broker may have gone
away meanwhile), except when retrying cannot help: a missing ACL, or a task that cannot be created as
configured (`ConfigError`, `TopologyError`); those end the member.

Tasks are *lost* (Kafka Streams' `onPartitionsLost`) when the member was out of the group at some
point since it was handed them (see `GroupMembership`): another member may have processed and
committed their partitions meanwhile, so their stores and positions are stale. They are closed dirty
without committing anything (Kafka Streams' `handleLostAll`), and whatever comes back is created
anew: restored from the changelog and started at the group's committed offsets. aiokafka has no
separate "lost" callback, so both callbacks check the membership first.

Why a class of its own: the callbacks run in aiokafka's group coordination task, concurrently with
the poll loop. Kept apart, what the two share is visible: they take turns at the dispatch lock, and
they meet only in `PartitionPositions`, `GroupMembership` and the `Committer`'s dirty recovery.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any, Protocol

import anyio
from aiokafka import ConsumerRebalanceListener
from aiokafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailed,
)

from streamlet.actors.task_id import TaskId
from streamlet.errors import ConfigError, TopologyError
from streamlet.kafka.client_settings import KafkaAuthorizationError
from streamlet.runtime.commit_protocol import CommitFailed
from streamlet.runtime.committer import Committer
from streamlet.runtime.membership import Membership
from streamlet.runtime.positions import PartitionPositions
from streamlet.runtime.standby import StandbyTasks
from streamlet.runtime.task_manager import TaskManager

log = logging.getLogger(__name__)

_AUTHORIZATION_ERRORS = (TransactionalIdAuthorizationFailed, GroupAuthorizationFailedError,
                         TopicAuthorizationFailedError, ClusterAuthorizationFailedError)
_SETUP_ERRORS = (ConfigError, TopologyError)
"""Errors of a task's creation that come from the application's configuration or topology, not from
the cluster: taking the assignment over again cannot succeed."""


def _authorization_message(exc: BaseException, app_id: str) -> str:
    """What the cluster refused, with the ACL Kafka Streams documents for it."""
    if isinstance(exc, TransactionalIdAuthorizationFailed):
        return (f"the cluster refuses this instance's transactional id (exactly-once needs WRITE and DESCRIBE "
                f"on TRANSACTIONAL_ID with the prefix {app_id!r}, e.g. ALL on it): {exc}")
    if isinstance(exc, GroupAuthorizationFailedError):
        return f"the cluster refuses the consumer group {app_id!r} (needs READ on GROUP {app_id!r}): {exc}"
    if isinstance(exc, ClusterAuthorizationFailedError):
        return f"the cluster refuses a cluster-level operation (e.g. IDEMPOTENT_WRITE on CLUSTER): {exc}"
    return f"the cluster refuses access to a topic (READ on inputs, WRITE on outputs, ALL on {app_id!r}-*): {exc}"


class AssignmentSource(Protocol):
    """Where the listener reads the assignment's tasks: streamlet's assignor (classic group) or the
    streams group membership (the broker's assignment)."""

    @property
    def active_tasks(self) -> Collection[TaskId]: ...

    @property
    def standby_tasks(self) -> Collection[TaskId]: ...

    @property
    def shutdown_requested(self) -> bool: ...


class StreamsRebalanceListener(ConsumerRebalanceListener):
    """Takes partitions away from the member's tasks and hands new ones over (see the module docstring).

    `on_rebalance(running)` tells the client a rebalance began (False) or its tasks are all restored
    and running (True). `request_shutdown()` is called when the assignment says the application shuts
    down, `fail(error)` when taking the assignment over cannot succeed however often it is retried."""

    def __init__(self, *, app_id: str, tasks: TaskManager, standbys: StandbyTasks | None, assignor: AssignmentSource,
                 positions: PartitionPositions, membership: Membership, committer: Committer,
                 dispatch_lock: anyio.Lock, on_rebalance: Callable[[bool], None],
                 request_shutdown: Callable[[], None], fail: Callable[[BaseException], None],
                 on_assigned: Callable[[], None] = lambda: None) -> None:
        self._app_id = app_id
        self._on_assigned = on_assigned
        """Told once an assignment was taken over (Kafka Streams' thread: PARTITIONS_ASSIGNED)."""
        self._tasks = tasks
        self._standbys = standbys
        self._assignor = assignor
        self._positions = positions
        self._membership = membership
        self._committer = committer
        self._lock = dispatch_lock
        self._on_rebalance = on_rebalance
        self._request_shutdown = request_shutdown
        self._fail = fail
        self.lost_memberships = 0  # times the member's tasks were closed as lost

    async def on_partitions_revoked(self, revoked: Any) -> None:
        """Stop dispatching and commit what was processed, unless the tasks were lost already."""
        self._on_rebalance(False)
        membership = self._membership
        async with self._lock:
            self._positions.revoke_all()
            if membership.out_of_group():
                await self._close_lost_tasks(membership.lost_since_assignment() or "this member is out of the group")
                return
            try:
                await self._tasks.commit()
            except CommitFailed as exc:
                await self._committer.recover_dirty(exc, rejoin=False)  # the group is rejoining already
            except Exception:
                log.exception("commit on revocation failed; the new owners will reprocess from the last commit")
            if membership.out_of_group():
                # The commit was refused because the group had moved on without this member (at-least-once;
                # under exactly-once the refusal already closed the tasks dirty).
                await self._close_lost_tasks(membership.lost_since_assignment() or "the revocation commit was refused")

    async def on_partitions_assigned(self, assigned: Any) -> None:
        """Take the assignment over: close what left, create and restore what came, seek every partition."""
        if self._assignor.shutdown_requested:
            self._request_shutdown()
            return
        async with self._lock:
            self._positions.new_epoch()
            lost = self._membership.lost_since_assignment()
            if lost is not None:
                # Missed by the revocation callback (e.g. a generation this member never saw assigned).
                await self._close_lost_tasks(lost)
            self._membership.assignment_taken()
            parts = {(tp.topic, tp.partition) for tp in assigned}
            try:
                await self._take_over(parts)
            except _AUTHORIZATION_ERRORS as exc:
                # A missing ACL does not heal by rejoining: every attempt would fail the same way (and
                # aiokafka swallows what a rebalance callback raises), so the member stops with the reason.
                error = KafkaAuthorizationError(_authorization_message(exc, self._app_id))
                error.__cause__ = exc
                self._fail(error)
                return
            except _SETUP_ERRORS as exc:
                # A task that cannot be set up as configured (a store with no serde and no default one, a
                # processor asking for a store it is not connected to) fails on every assignment alike:
                # rejoining would go round the group forever. As Kafka Streams' thread dies on the
                # StreamsException of a task's creation, the member fails and the uncaught-exception
                # handler decides.
                log.error("a task of the assignment cannot be created as configured: %s", exc)
                self._fail(exc)
                return
            except Exception:
                # E.g. the broker went away while a task was created. Dispatch nothing of this
                # assignment and go through the group again: the next assignment creates what is missing.
                log.exception("taking over the assigned partitions failed; rejoining the group")
                self._membership.request_rejoin()
                return
            self._positions.assign(parts)
            self._on_assigned()
        if not self._tasks.restoring:
            self._on_rebalance(True)

    async def _take_over(self, parts: set[tuple[str, int]]) -> None:
        """Active and standby tasks as the assignment says, restoring partitions paused, every partition sought."""
        standby = set(self._assignor.standby_tasks) - set(self._assignor.active_tasks)
        if self._standbys is not None:
            self._standbys.release(standby)  # a standby that became active here lets go first
        await self._tasks.assign(parts)
        if self._standbys is not None:
            await self._standbys.update(standby)  # after an active that became standby closed
        restoring = self._tasks.restoring_partitions()
        if restoring:
            # Nothing of a restoring task is fetched until its stores are complete.
            self._positions.pause(restoring)
        await self._positions.seek(parts)

    async def _close_lost_tasks(self, reason: str) -> None:
        """Kafka Streams' handleLostAll: every task closed dirty, nothing committed (the offsets and
        the open transaction belong to a membership the group has ended). Under exactly-once the local
        state is wiped; a task assigned again is restored and starts at the group's committed offsets."""
        tasks = self._tasks
        open_tasks = sorted(a.task_id for a in tasks.actors.values())
        open_tasks += sorted(task.task_id for task, _, _ in tasks.restoring.values())
        self._membership.forget_assignment()
        if not open_tasks:
            return
        self.lost_memberships += 1
        log.warning("group membership lost (%s): closing tasks %s dirty without committing; those assigned "
                    "again are restored from their changelogs", reason, ", ".join(open_tasks))
        self._positions.revoke_all()
        await tasks.close_all(clean=False)
