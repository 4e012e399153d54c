"""`ProcessorStateManager`: a task's stores, their changelogs and the checkpoint file.

It is the `StateStoreContext` the stores see: it hands them the task's directory, routes their
changelog writes into the task's `RecordCollector` (partition = the task's partition, as Kafka
Streams does), and remembers the restore callbacks so that the runtime's `ChangelogReader` can
replay changelogs into them.

The checkpoint file maps each changelog partition to the offset up to which the local store is
known to hold the changelog's content. It is written only after a successful commit or a clean
close. A store found without a checkpoint is not trusted: it is wiped and restored from the start.

Writing a checkpoint is the one place that costs disk syncs (the stores' logs, then the file), so a
running task writes one only when its changelogs moved far enough since the last one, as Kafka
Streams does (`maybe_checkpoint`): an older checkpoint is still true, it only means a longer
restore after a crash. A clean close always writes one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from streamlet.actors.record_collector import ChangelogSender, RecordCollector
from streamlet.config import StreamsConfig
from streamlet.stores.api import RecordContext, RestoreCallback, StateStore, StateStoreContext
from streamlet.stores.cache import SharedCacheBudget

CHECKPOINT_FILE = ".checkpoint"

OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT = 10_000
"""A running task's checkpoint is rewritten once its changelogs moved more than this many offsets in
all since the last one (Kafka Streams' `StateManagerUtil.OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT`)."""


def changelog_topic_name(application_id: str, store_name: str) -> str:
    return f"{application_id}-{store_name}-changelog"


@dataclass
class RegisteredStore:
    store: StateStore
    restore: RestoreCallback
    logged: bool
    changelog_topic: str | None
    with_headers: bool = False
    """Restored with `HeadedChangelogEntry`s (see `StateStoreContext.register`)."""


class ProcessorStateManager(StateStoreContext):
    def __init__(
        self,
        application_id: str,
        task_id: str,
        partition: int,
        config: StreamsConfig,
        task_dir: Path,
        collector: RecordCollector,
        record_context: Callable[[], RecordContext],
        set_record_context: Callable[[RecordContext], None],
        cache_budget: Callable[[str], int],
        shared_cache: SharedCacheBudget | None = None,
    ) -> None:
        self._application_id = application_id
        self._task_id = task_id
        self._partition = partition
        self._config = config
        self._task_dir = task_dir
        self._collector = collector
        self._record_context = record_context
        self._set_record_context = set_record_context
        self._cache_budget = cache_budget
        self._shared_cache = shared_cache
        self.registered: dict[str, RegisteredStore] = {}
        self._changelog_for: dict[str, str] = {}
        self._syncs: list[Callable[[], None]] = []
        self._checkpointed: dict[str, int] | None = None  # the checkpoint file's content, once read

    # -- StateStoreContext ------------------------------------------------------------------------
    @property
    def application_id(self) -> str:
        return self._application_id

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def partition(self) -> int:
        return self._partition

    @property
    def app_config(self) -> StreamsConfig:
        return self._config

    @property
    def state_dir(self) -> Path:
        self._task_dir.mkdir(parents=True, exist_ok=True)
        return self._task_dir

    def register(self, store: StateStore, restore: RestoreCallback, *, logged: bool,
                 with_headers: bool = False) -> None:
        topic = changelog_topic_name(self._application_id, store.name) if logged else None
        self.registered[store.name] = RegisteredStore(store, restore, logged, topic, with_headers)
        if topic is not None:
            self._changelog_for[store.name] = topic

    def register_sync(self, sync: Callable[[], None]) -> None:
        self._syncs.append(sync)

    def log_change(self, store_name: str, key: bytes, value: bytes | None, timestamp: int,
                   headers: tuple[tuple[str, bytes], ...] | None = None) -> None:
        self._collector.send(self._changelog_for[store_name], key, value, timestamp,
                             self._record_context().headers if headers is None else headers, self._partition)

    def changelog_writer(self, store_name: str) -> Callable[[bytes, bytes | None, int], None]:
        return ChangelogSender(self._collector, self._changelog_for, store_name, self._partition, self._record_context)

    def record_context(self) -> RecordContext:
        return self._record_context()

    def set_record_context(self, context: RecordContext) -> None:
        self._set_record_context(context)

    def record_context_reader(self) -> Callable[[], RecordContext]:
        return self._record_context  # the task's C `partial`: no Python frame per store write

    def record_context_writer(self) -> Callable[[RecordContext], None]:
        return self._set_record_context

    def cache_budget_bytes(self, store_name: str) -> int:
        return self._cache_budget(store_name)

    def shared_cache_budget(self, store_name: str) -> SharedCacheBudget | None:
        return self._shared_cache

    # -- changelogs and checkpoints -----------------------------------------------------------------
    def changelog_partitions(self) -> dict[str, tuple[str, int]]:
        """store name -> (changelog topic, partition) for every logged store."""
        return {name: (topic, self._partition) for name, topic in self._changelog_for.items()}

    def flush(self) -> None:
        """Push every store's cached writes down (and to the changelog); nothing is synced to disk."""
        for reg in self.registered.values():
            reg.store.flush()

    def sync(self) -> None:
        """Make the persistent stores' writes so far durable (before a checkpoint vouches for them)."""
        for sync in self._syncs:
            sync()

    def close(self) -> None:
        for reg in self.registered.values():
            if reg.store.is_open:
                reg.store.close()

    def forget_stores(self) -> None:
        """Close and unregister every store, so that the task can open them afresh (after a wipe)."""
        self.close()
        self.registered.clear()
        self._changelog_for.clear()
        self._syncs.clear()

    @property
    def task_dir(self) -> Path:
        """The task's directory, not created (`state_dir` creates it for the stores)."""
        return self._task_dir

    @property
    def checkpoint_path(self) -> Path:
        return self._task_dir / CHECKPOINT_FILE

    def has_checkpoint(self) -> bool:
        """True when a checkpoint file is there (a clean close or a commit wrote one), whatever it holds."""
        return self.checkpoint_path.exists()

    def read_checkpoint(self) -> dict[str, int]:
        """'topic:partition' -> next offset to restore from; empty if there is no checkpoint."""
        try:
            data = json.loads(self.checkpoint_path.read_text())
        except (FileNotFoundError, ValueError):
            data = {}
        self._checkpointed = {str(k): int(v) for k, v in data.items()}
        return dict(self._checkpointed)

    def _checkpointable(self) -> set[str]:
        """The changelogs ('topic:partition') of the stores that keep their content on disk: only those can a
        checkpoint vouch for. An in-memory store is empty whenever it opens, so its changelog is restored from
        the start every time, as in Kafka Streams (whose checkpoint file holds persistent stores only)."""
        return {f"{reg.changelog_topic}:{self._partition}" for reg in self.registered.values()
                if reg.changelog_topic is not None and reg.store.persistent}

    def restore_starts(self) -> dict[str, int]:
        """'topic:partition' -> the offset to restore from, for the changelogs whose local store the checkpoint
        vouches for (an entry of an in-memory store, left by an older version, is ignored)."""
        keep = self._checkpointable()
        return {tp: offset for tp, offset in self.read_checkpoint().items() if tp in keep}

    def maybe_checkpoint(self, offsets: dict[str, int], enforce: bool) -> None:
        """Merge `offsets` ('topic:partition' -> next offset) of the persistent stores' changelogs into the
        checkpoint and write it, when `enforce`d (a clean close) or when they moved more than
        `OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT` in all past the last checkpoint (a partition missing from it
        counts from 0, as in Kafka Streams' `StateManagerUtil.checkpointNeeded`)."""
        keep = self._checkpointable()
        offsets = {tp: offset for tp, offset in offsets.items() if tp in keep}
        if not offsets and not (enforce and self.registered):
            return  # a clean close of a task with stores writes one, empty or not: its local stores are sound
        old = self.read_checkpoint() if self._checkpointed is None else self._checkpointed
        old = {tp: offset for tp, offset in old.items() if tp in keep}
        delta = sum(offset - old.get(tp, 0) for tp, offset in offsets.items())
        if enforce or delta > OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT:
            self.write_checkpoint({**old, **offsets})

    def write_checkpoint(self, offsets: dict[str, int]) -> None:
        """Sync the stores, then atomically replace the checkpoint (write a temp file, fsync, rename):
        the checkpoint never vouches for writes an OS crash could still take back."""
        self.sync()
        self._task_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.checkpoint_path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(offsets, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.checkpoint_path)
        self._checkpointed = dict(offsets)

    def delete_checkpoint(self) -> None:
        self._checkpointed = {}
        try:
            self.checkpoint_path.unlink()
        except FileNotFoundError:
            pass

    def wipe_local_state(self) -> None:
        """Delete the task's directory: its stores' files can't be trusted (no checkpoint, dirty close)."""
        shutil.rmtree(self._task_dir, ignore_errors=True)
        self._checkpointed = {}
