"""`RecordingStateStoreContext`: a real, small `StateStoreContext` for store tests.

It records what a store sends to the runtime (changelog writes, registrations, record-context
changes) instead of talking to Kafka, hands out a temporary state directory, and lets a test set
the record context and the cache budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.config import StreamsConfig
from streamlet.stores.api import ChangelogEntry, RecordContext, RestoreCallback, StateStore, StateStoreContext
from tests.integration.wordcount_app import topology as wordcount_topology

APPLICATION_ID = "store-tests"


def record_context(timestamp: int, offset: int = 0, topic: str = "input", partition: int = 0,
                   headers: tuple[tuple[str, bytes], ...] = ()) -> RecordContext:
    return RecordContext(timestamp, headers, topic, partition, offset)


@dataclass(frozen=True)
class LoggedChange:
    store: str
    key: bytes
    value: bytes | None
    timestamp: int
    context: RecordContext
    headers: tuple[tuple[str, bytes], ...]
    """The changelog record's headers: the store's own when it gave them, else the record context's."""


@dataclass
class Registration:
    store: StateStore
    restore: RestoreCallback
    logged: bool
    with_headers: bool = False


class RecordingStateStoreContext(StateStoreContext):
    def __init__(self, state_dir: Path, cache_budget: int = 0, config: dict[str, object] | None = None,
                 partition: int = 0) -> None:
        self._state_dir = state_dir
        self.cache_budget = cache_budget
        self._config = StreamsConfig({"application.id": APPLICATION_ID, **(config or {})})
        self._partition = partition
        self.current = record_context(0)
        self.changelog: list[LoggedChange] = []
        self.registrations: dict[str, Registration] = {}
        self.context_changes: list[RecordContext] = []
        self.syncs: list[Callable[[], None]] = []

    @property
    def application_id(self) -> str:
        return self._config.application_id

    @property
    def task_id(self) -> str:
        return f"0_{self._partition}"

    @property
    def partition(self) -> int:
        return self._partition

    @property
    def app_config(self) -> StreamsConfig:
        return self._config

    @property
    def state_dir(self) -> Path:
        self._state_dir.mkdir(parents=True, exist_ok=True)
        return self._state_dir

    def register(self, store: StateStore, restore: RestoreCallback, *, logged: bool,
                 with_headers: bool = False) -> None:
        self.registrations[store.name] = Registration(store, restore, logged, with_headers)

    def register_sync(self, sync: Callable[[], None]) -> None:
        self.syncs.append(sync)

    def log_change(self, store_name: str, key: bytes, value: bytes | None, timestamp: int,
                   headers: tuple[tuple[str, bytes], ...] | None = None) -> None:
        self.changelog.append(LoggedChange(store_name, key, value, timestamp, self.current,
                                           self.current.headers if headers is None else headers))

    def record_context(self) -> RecordContext:
        return self.current

    def set_record_context(self, context: RecordContext) -> None:
        self.context_changes.append(context)
        self.current = context

    def cache_budget_bytes(self, store_name: str) -> int:
        return self.cache_budget

    # -- helpers for tests --------------------------------------------------------------------------
    def at(self, timestamp: int, offset: int = 0) -> RecordingStateStoreContext:
        """Pretend the task now processes a record with this timestamp and offset."""
        self.current = record_context(timestamp, offset)
        return self

    def changelog_entries(self, store_name: str) -> list[Any]:
        """What a changelog reader would hand back to the store's restore callback (`ChangelogEntry`s, or
        `HeadedChangelogEntry`s for a store registered `with_headers`)."""
        if self.registrations[store_name].with_headers:
            return [(c.key, c.value, c.timestamp, c.headers) for c in self.changelog if c.store == store_name]
        return [(c.key, c.value, c.timestamp) for c in self.changelog if c.store == store_name]

    def restore(self, store_name: str, entries: list[ChangelogEntry], batch_size: int = 3) -> None:
        """Replay entries in batches, as the runtime's changelog reader does."""
        callback = self.registrations[store_name].restore
        for start in range(0, len(entries), batch_size):
            callback(entries[start:start + batch_size])


def wordcount_task(state_root: Path, application_id: str) -> StreamTask:
    """The seed WordCount's counting task (partition 0, its persistent `counts-store`, no cache), built
    as the runtime builds one, its stores not yet opened."""
    topology = wordcount_topology()
    config = StreamsConfig({"application.id": application_id, "default.key.serde": "String",
                            "default.value.serde": "String"})
    sub = next(s for s in topology.sub_topologies() if s.stores)
    return StreamTask(topology, sub, 0, config, RecordCollector(lambda _t: 1), state_root, clock=lambda: 0,
                      resolve_topic=lambda t: t, cache_bytes=0)
