"""`ProcessorStateManager`: a task's stores, their changelogs and the checkpoint file.

It is the `StateStoreContext` the stores see: it hands them the task's directory, routes their
changelog writes into the task's `RecordCollector` (partition = the task's partition, as Kafka
Streams does), and remembers the restore callbacks so that the runtime's `ChangelogReader` can
replay changelogs into them.

The checkpoint file maps each changelog partition to the offset up to which the local store is
known to hold the changelog's content. It is written only after a successful commit or a clean
close. A store found without a checkpoint is not trusted: it is wiped and restored from the start.

Under exactly-once the LevelDB stores hold only committed data (see `stores/leveldb/staging.py`): each
keeps the writes of the open transaction staged in memory and writes them, together with the changelog
offset they reach, in one LevelDB write batch once the transaction has committed (`seal`, then
`commit_transactions`). The task's directory then carries a marker file (`TRANSACTIONAL_MARKER`): its
stores can be trusted after any close, a kill -9 included, and restore only the changelog after the offset
each keeps (`restore_starts`). A task with a persistent store of another kind (a user's own) gets no
marker and is wiped after a dirty close, as before.

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
from streamlet.stores.leveldb.staging import StagedDatabase

CHECKPOINT_FILE = ".checkpoint"
TRANSACTIONAL_MARKER = ".transactional"
"""In a task's directory: every persistent store of the task keeps only committed data (exactly-once)."""

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
        self._transactional: dict[str, StagedDatabase] = {}  # LevelDB name -> its staging (exactly-once)
        self._restored: dict[str, int] = {}  # 'topic:partition' -> the offset a restore brought it to
        self._generation = 0  # of the last `seal`
        self.staging = False
        """True once `begin_transactions` turned the stores' staging on."""
        self.uncommitted_limit = int(config["statestore.uncommitted.max.bytes"])
        """The task's share of `statestore.uncommitted.max.bytes` (the runtime divides it among its tasks)."""
        self.on_uncommitted_full: Callable[[], None] = lambda: None
        """Called when the staged writes pass `uncommitted_limit` (the task asks for an early commit)."""

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

    def register_transactional(self, name: str, database: StagedDatabase) -> None:
        self._transactional[name] = database

    def log_change(self, store_name: str, key: bytes, value: bytes | None, timestamp: int,
                   headers: tuple[tuple[str, bytes], ...] | None = None) -> None:
        # Kafka Streams writes a changelog record without headers (its stores with headers and the suppression
        # buffer pass theirs): never the headers of the input record being processed.
        self._collector.send(self._changelog_for[store_name], key, value, timestamp,
                             () if headers is None else headers, self._partition)

    def changelog_writer(self, store_name: str) -> Callable[[bytes, bytes | None, int], None]:
        return ChangelogSender(self._collector, self._changelog_for, store_name, self._partition)

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
        self._transactional.clear()
        self.staging = False

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
        starts = {tp: offset for tp, offset in self.read_checkpoint().items() if tp in keep}
        for tp, offset in self.in_store_offsets().items():
            # Both are offsets the store holds at least: the later one restores less.
            if tp in keep and offset > starts.get(tp, -1):
                starts[tp] = offset
        return starts

    # -- exactly-once: stores that hold only committed data -------------------------------------------
    def in_store_offsets(self) -> dict[str, int]:
        """'topic:partition' -> the changelog offset a LevelDB store records it holds (see `staging.py`)."""
        found: dict[str, int] = {}
        for name, database in self._transactional.items():
            topic = self._changelog_for.get(name)
            offset = database.committed_offset() if topic is not None else None
            if offset is not None:
                found[f"{topic}:{self._partition}"] = offset
        return found

    def note_restored(self, changelog: str, offset: int) -> None:
        """A restore brought changelog 'topic:partition' to `offset` (recorded in the store by
        `begin_transactions`, so that a crash right after it does not restore it again)."""
        self._restored[changelog] = offset

    @property
    def transactional(self) -> bool:
        """Every persistent store of the task stages its writes (a store of a kind that cannot, such as a
        user's own persistent store, makes the task fall back to being wiped after a dirty close)."""
        return all(name in self._transactional for name, reg in self.registered.items() if reg.store.persistent)

    def keeps_committed_state(self) -> bool:
        """True when the task's directory holds only committed data (`TRANSACTIONAL_MARKER`): a dirty close
        or a crash leaves nothing to wipe."""
        return (self._task_dir / TRANSACTIONAL_MARKER).exists()

    def begin_transactions(self) -> None:
        """The stores are restored and the task starts processing under exactly-once: record the restored
        offsets in the stores, turn staging on and mark the directory; or, when some persistent store cannot
        stage, remove the mark (its stores are wiped after a dirty close)."""
        marker = self._task_dir / TRANSACTIONAL_MARKER
        if not self.transactional:
            marker.unlink(missing_ok=True)
            return
        share = self.uncommitted_limit // max(1, len(self._transactional))
        for name, database in self._transactional.items():
            topic = self._changelog_for.get(name)
            restored = self._restored.get(f"{topic}:{self._partition}") if topic is not None else None
            if restored is not None and restored != database.committed_offset():
                database.record_offset(restored)
            database.limit_bytes = share
            database.on_full = self.on_uncommitted_full
            database.staging = True
        self.staging = True
        if self._transactional and not marker.exists():
            self._task_dir.mkdir(parents=True, exist_ok=True)
            marker.touch()

    @property
    def generation(self) -> int:
        """The transaction generation of the last `seal`."""
        return self._generation

    def seal(self) -> int:
        """The stores' staged writes so far belong to the transaction being committed now; returns its
        generation (to name in `commit_transactions` once it committed)."""
        if self.staging:
            self._generation += 1
            for database in self._transactional.values():
                database.seal(self._generation)
        return self._generation

    def commit_transactions(self, generation: int | None, offsets: dict[str, int]) -> None:
        """The transactions up to `generation` (None: every sealed one) committed, bringing the changelogs
        to `offsets` ('topic:partition' -> next offset): each store writes their writes and its offset."""
        if not self.staging:
            return
        for name, database in self._transactional.items():
            topic = self._changelog_for.get(name)
            database.commit(generation, offsets.get(f"{topic}:{self._partition}") if topic is not None else None)

    def uncommitted_bytes(self) -> int:
        return sum(database.uncommitted_bytes for database in self._transactional.values())

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
