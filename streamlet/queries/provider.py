"""Which local copies of a store answer a query, and the errors Kafka Streams gives when none can.

A copy is the store of one task on this instance: an active task that runs, an active task still
restoring its changelog, or a standby task. Without stale stores only running active copies answer,
and only while the client is RUNNING: during a rebalance (or while a task restores) the store may be
moving, so the query fails with `StateStoreMigratedError` and the caller re-discovers the owner. With
stale stores, restoring and standby copies answer too, and a rebalance does not stop them.

Copies are looked up again at every call of a view's method, so a view stays valid across rebalances.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import (
    InvalidStateStoreError,
    InvalidStateStorePartitionError,
    StateStoreMigratedError,
    StateStoreNotAvailableError,
)
from streamlet.queries.parameters import StoreQueryParameters


@dataclass(frozen=True)
class LocalCopy:
    """One task's copy of a store on this instance; `role` is "active", "restoring" or "standby"."""

    partition: int
    store: Any
    role: str


def local_copies(supervisor: Any, name: str) -> list[LocalCopy]:
    """Every open copy of store `name` this instance holds, active first, by partition."""
    copies: list[LocalCopy] = []
    tasks = supervisor.tasks if supervisor is not None else None
    if tasks is None:
        return copies
    for actor in tasks.actors.values():
        if name in actor.task.stores:
            copies.append(LocalCopy(actor.task.partition, actor.task.stores[name], "active"))
    for task, _sender, _partitions in tasks.restoring.values():
        if name in task.stores:
            copies.append(LocalCopy(task.partition, task.stores[name], "restoring"))
    global_thread = getattr(supervisor, "global_thread", None)
    if global_thread is not None and name in global_thread.stores:  # a global store: one full copy
        copies.append(LocalCopy(-1, global_thread.stores[name], "active"))
    standbys = supervisor.standbys
    if standbys is not None:
        for task in standbys.tasks.values():
            if name in task.stores:
                copies.append(LocalCopy(task.partition, task.stores[name], "standby"))
    return sorted((c for c in copies if c.store.is_open), key=lambda c: (c.role != "active", c.partition))


class StoreProvider:
    """Resolves the copies a query may read, from the client's state and the query parameters.

    `client_state` returns the client's state name ("RUNNING", "REBALANCING", ...) and `copies` the
    local copies of the store (see `local_copies`); both are read at each call."""

    def __init__(self, params: StoreQueryParameters, client_state: Callable[[], str],
                 copies: Callable[[], list[LocalCopy]]) -> None:
        self.params = params
        self._client_state = client_state
        self._copies = copies

    def stores(self) -> list[Any]:
        """The stores to read, or Kafka Streams' error for why there are none."""
        return [c.store for c in self.copies()]

    def copies(self) -> list[LocalCopy]:
        """The copies to read (partition, store, role), active first, or Kafka Streams' error for why
        there are none."""
        params, name = self.params, self.params.store_name
        state = self._client_state()
        if state in ("PENDING_SHUTDOWN", "NOT_RUNNING", "ERROR"):
            raise StateStoreNotAvailableError(
                f"state store {name!r} is not available: the client is {state} (query another instance)")
        if not params.stale_stores and state != "RUNNING":
            raise StateStoreMigratedError(
                f"cannot get state store {name!r} because the client is {state}, not RUNNING: the store may be "
                "migrating to another instance; re-discover its owner, or query with enable_stale_stores()")
        chosen = [c for c in self._copies() if params.stale_stores or c.role == "active"]
        if params.partition is not None:
            chosen = [c for c in chosen if c.partition == params.partition]
        if not chosen:
            if params.partition is not None:
                raise InvalidStateStorePartitionError(
                    f"the specified partition {params.partition} for store {name!r} does not exist on this instance")
            raise StateStoreMigratedError(
                f"the state store {name!r} may have migrated to another instance (no local copy)")
        wanted = params.queryable_store_type
        for copy in chosen:
            if not wanted.accepts(copy.store):
                raise InvalidStateStoreError(
                    f"cannot get state store {name!r} because the queryable store type {wanted} does not accept "
                    f"the actual store type {type(copy.store).__name__}")
        return chosen


def closed_under_query(name: str, cause: InvalidStateStoreError) -> StateStoreMigratedError:
    """The error for a copy that closed while it was read (its task moved away mid-query)."""
    error = StateStoreMigratedError(
        f"state store {name!r} is not available any more and may have been migrated to another instance; "
        "re-discover its location from the streams metadata")
    error.__cause__ = cause
    return error
