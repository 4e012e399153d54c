"""The store contract shared by every backend and by the runtime.

Layers, inner to outer, as in Kafka Streams (but each a small class of its own):
a *bytes store* (LevelDB or in-memory, bytes -> bytes, iterated in byte order), optionally wrapped by
a *change-logging* layer (every write also goes to the changelog through the `StateStoreContext`),
optionally by a *caching* layer (dedups writes per key until flush/eviction, then forwards them to a
flush listener), and finally a *typed* facade that applies the serdes (`KeyValueStore`).

The runtime owns one `StateStoreContext` per task; stores never talk to Kafka themselves.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from streamlet.record import KeyValue

if TYPE_CHECKING:
    from streamlet.config import StreamsConfig
    from streamlet.stores.cache import SharedCacheBudget

K = TypeVar("K")
V = TypeVar("V")

ChangelogEntry = tuple[bytes, bytes | None, int]
"""(key bytes, value bytes or None for a delete, record timestamp) as read back from a changelog."""

HeadedChangelogEntry = tuple[bytes, bytes | None, int, tuple[tuple[str, bytes], ...]]
"""A `ChangelogEntry` with the record's headers, for the stores that register `with_headers=True`: a store
whose changelog says its value layout in a header (the suppression buffer's `v`, as Kafka Streams writes it)."""

RestoreCallback = Callable[[list[ChangelogEntry]], None] | Callable[[list[HeadedChangelogEntry]], None]
"""Applies one batch of changelog entries to a store during restoration."""

FlushListener = Callable[[Any, Any, Any, int, tuple[tuple[str, bytes], ...]], None]
"""`listener(key, new_value, old_value, timestamp, headers)`, called by a caching store when it
evicts/flushes; timestamp and headers are those of the record that made the latest update."""


class ValueAndTimestamp(NamedTuple):
    """A value with the timestamp of the record that last wrote it (timestamped stores)."""

    value: Any
    timestamp: int


class ValueTimestampHeaders(NamedTuple):
    """A value with the timestamp and the headers of the record that last wrote it: what a timestamped key-value
    store with headers keeps (`Stores.timestamped_key_value_store_with_headers_builder`), as Kafka Streams'
    `ValueTimestampHeaders`. `headers` are (name, value) pairs in order; a header's value may be None."""

    value: Any
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


class AggregationWithHeaders(NamedTuple):
    """A session's aggregate with the headers of the record that last wrote it: what a session store with
    headers keeps (`Stores.session_store_with_headers_builder`), as Kafka Streams' `AggregationWithHeaders`.
    `headers` are (name, value) pairs in order; a header's value may be None."""

    aggregation: Any
    headers: tuple[tuple[str, bytes | None], ...] = ()


def checked_with_headers(value: Any, kind: type[Any], store: str) -> Any:
    """What a store with headers writes for `value`, a `kind` (`ValueTimestampHeaders` or
    `AggregationWithHeaders`): None for a delete (None, or a `kind` whose value or aggregate is None, as Java's
    `make` gives null), else `value` with its headers as a tuple."""
    if value is None:
        return None
    if not isinstance(value, kind):
        raise TypeError(f"a {store} takes {kind.__name__} values, got {type(value).__name__}")
    if value[0] is None:
        return None
    headers = value.headers
    if headers is None or type(headers) is not tuple:
        value = value._replace(headers=tuple(headers or ()))
    return value


class RecordContext(NamedTuple):
    """The record a write came from; a cache keeps it so that a later flush forwards with it."""

    timestamp: int
    headers: tuple[tuple[str, bytes], ...]
    topic: str | None
    partition: int
    offset: int


class StateStoreContext(ABC):
    """What the runtime offers a store: identity, directories, the changelog and the record context."""

    @property
    @abstractmethod
    def application_id(self) -> str: ...

    @property
    @abstractmethod
    def task_id(self) -> str: ...

    @property
    @abstractmethod
    def partition(self) -> int: ...

    @property
    @abstractmethod
    def app_config(self) -> StreamsConfig: ...

    @property
    @abstractmethod
    def state_dir(self) -> Path:
        """This task's own directory; a persistent store keeps its files in `state_dir / name`."""

    @abstractmethod
    def register(self, store: StateStore, restore: RestoreCallback, *, logged: bool,
                 with_headers: bool = False) -> None:
        """Called once from `store.init`: the runtime restores a logged store through `restore`, with
        `ChangelogEntry`s, or `HeadedChangelogEntry`s when `with_headers` (only those stores pay for reading
        each record's headers)."""

    @abstractmethod
    def register_sync(self, sync: Callable[[], None]) -> None:
        """Called from a persistent store's `open`: `sync` makes the store's writes so far durable
        (fsync). The runtime calls it before a checkpoint vouches for those writes and at a clean
        close, not at every commit: as in Kafka Streams, a commit pushes caches down, and the costly
        disk flush comes only with a checkpoint."""

    def register_transactional(self, name: str, database: Any) -> None:
        """Called from a LevelDB store's `open` under exactly-once with its `StagedDatabase`: the runtime
        turns its staging on once the store is restored, seals and commits its staged writes with each
        transaction, and reads the changelog offset it keeps. A context that runs no transactions (a test's,
        a global store's) ignores it, and the store then writes straight to LevelDB."""

    @abstractmethod
    def log_change(self, store_name: str, key: bytes, value: bytes | None, timestamp: int,
                   headers: tuple[tuple[str, bytes], ...] | None = None) -> None:
        """Append one update to the store's changelog (sent with the task's next flush), with `headers` when
        given, else the current record's."""

    def changelog_writer(self, store_name: str) -> Callable[[bytes, bytes | None, int], None]:
        """`log_change` of one store, without headers (the current record's), for the store to bind once at
        `init` and call per logged write. The runtime's needs no Python frame per write."""
        return functools.partial(self.log_change, store_name)

    @abstractmethod
    def record_context(self) -> RecordContext:
        """The context of the record being processed (or of the punctuation in progress)."""

    @abstractmethod
    def set_record_context(self, context: RecordContext) -> None:
        """Used by a cache flush so that downstream nodes see the flushed entry's record context."""

    def record_context_reader(self) -> Callable[[], RecordContext]:
        """A callable equal to `record_context`, for a store to bind once at `init` and call per write. The
        runtime's context returns the task's own getter, so a write costs no forwarding frame."""
        return self.record_context

    def record_context_writer(self) -> Callable[[RecordContext], None]:
        """A callable equal to `set_record_context`, bound once like `record_context_reader`."""
        return self.set_record_context

    @abstractmethod
    def cache_budget_bytes(self, store_name: str) -> int:
        """How many bytes this store's cache may hold; 0 disables caching (every update emitted)."""

    def shared_cache_budget(self, store_name: str) -> SharedCacheBudget | None:
        """The budget this store's cache shares with other stores' (`cache_budget_bytes` is then its
        whole size); None when the store's budget is its own."""
        return None


class StateStore(ABC):
    """Anything a processor can reach by name through `ProcessorContext.get_state_store`."""

    name: str

    @abstractmethod
    def init(self, context: StateStoreContext) -> None:
        """Open the store and register it (and its restore callback) with the runtime."""

    @abstractmethod
    def flush(self) -> None:
        """Push cached writes down (and to the changelog); called at every commit."""

    @abstractmethod
    def close(self) -> None:
        """Release the store's resources; the runtime calls it when the task closes."""

    @property
    @abstractmethod
    def persistent(self) -> bool:
        """True when the store keeps its data on disk (LevelDB) and can be reopened without a full restore."""

    @property
    @abstractmethod
    def is_open(self) -> bool:
        """True between `init` and `close`."""


class KeyValueIterator(Generic[K, V], Iterator[KeyValue]):
    """An iterator of `KeyValue` in serialized-key byte order; also a context manager."""

    def __init__(self, source: Iterator[KeyValue], on_close: Callable[[], None] | None = None) -> None:
        self._source = source
        self._on_close = on_close
        self._closed = False

    def __iter__(self) -> KeyValueIterator[K, V]:
        return self

    def __next__(self) -> KeyValue:
        if self._closed:
            raise StopIteration
        return next(self._source)

    def peek_next_key(self) -> Any:
        """The key the next iteration returns, without moving on (StopIteration at the end)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the iterator (a LevelDB snapshot); iterators are also context managers."""
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> KeyValueIterator[K, V]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class StoreBuilder(ABC):
    """Builds a new store instance per task; carries the logging and caching choices."""

    name: str
    logging_enabled: bool = True
    caching_enabled: bool = False
    logging_config: dict[str, str]

    @abstractmethod
    def build(self) -> StateStore:
        """A new store instance (the runtime builds one per task)."""

    @abstractmethod
    def with_logging_enabled(self, config: dict[str, str] | None = None) -> StoreBuilder:
        """Back the store with a changelog topic, `<application.id>-<store>-changelog`, with these extra topic
        configs; the default."""

    @abstractmethod
    def with_logging_disabled(self) -> StoreBuilder:
        """No changelog: the store's content is lost when its task moves or its local files go."""

    @abstractmethod
    def with_caching_enabled(self) -> StoreBuilder:
        """Put the record cache (`statestore.cache.max.bytes`) in front of the store: repeated updates of a key are
        merged before they reach the store, the changelog and downstream."""

    @abstractmethod
    def with_caching_disabled(self) -> StoreBuilder:
        """Every update goes through to the store, the changelog and downstream; the default for Processor-API
        stores."""


# -- the bytes level under every store type's typed facade -------------------------------------------


class BytesIterator(Iterator[tuple[bytes, bytes]]):
    """(key, value) byte pairs in unsigned byte order of keys; a context manager that frees its cursor.

    Plain tuples rather than `KeyValue` because this is the inner loop of every scan: the typed layer
    builds the `KeyValue` it returns from them anyway.
    """

    def __init__(self, source: Iterator[tuple[bytes, bytes]], on_close: Callable[[], None] | None = None) -> None:
        self._source = source
        self._on_close = on_close
        self._closed = False

    def __iter__(self) -> BytesIterator:
        return self

    def __next__(self) -> tuple[bytes, bytes]:
        if self._closed:
            raise StopIteration
        return next(self._source)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> BytesIterator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class BytesWriteBatch(ABC):
    """Writes collected and applied together when the `with` block ends without an exception."""

    @abstractmethod
    def put(self, key: bytes, value: bytes | None) -> None:
        """Queue a write; `None` queues a delete."""

    @abstractmethod
    def write(self) -> None:
        """Apply the queued writes; called by `__exit__` on success."""

    def put_all(self, writes: list[tuple[bytes, bytes | None]]) -> None:
        """Queue many writes in order (a restore batch); backends may take the list as it is."""
        put = self.put
        for key, value in writes:
            put(key, value)

    def __enter__(self) -> BytesWriteBatch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.write()


class QueuedWriteBatch(BytesWriteBatch):
    """A batch for stores whose single writes are cheap and local (memory, Spark's per-batch buffer):
    it queues the writes and replays them through `put` in order."""

    def __init__(self, put: Callable[[bytes, bytes | None], None]) -> None:
        self._put = put
        self._writes: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes | None) -> None:
        self._writes.append((key, value))

    def write(self) -> None:
        put = self._put
        for key, value in self._writes:
            put(key, value)
        self._writes = []


class CachedStateStore(ABC):
    """A store that may hold writes in a cache and forward them when it flushes or evicts them."""

    @abstractmethod
    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Install the listener for flushed entries; True iff this store caches (else forward yourself)."""
