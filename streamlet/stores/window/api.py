"""The window store contract: bytes stores keyed by (key, window start, seqnum), and the typed facade.

A window store keeps one value per key and window start (several when it retains duplicates, told
apart by a sequence number). It is what windowed aggregations keep their running results in. The
layers mirror the key-value stores' (see `streamlet.stores.api`): a bytes store (LevelDB or memory),
optionally change-logged, optionally cached (see caching.py), under a typed facade that applies the
serdes.

Retention: a window store keeps windows whose start is later than the latest window start it has
seen minus the retention period; older ones are dropped on write and hidden from reads, as Kafka
Streams' window stores do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from streamlet.record import KeyValue
from streamlet.stores.api import FlushListener, KeyValueIterator, StateStore, StateStoreContext

WindowEntry = tuple[bytes, int, int, bytes]
"""(key bytes, window start, seqnum, value bytes): one stored window, as a bytes store yields it."""

WindowWrite = tuple[bytes, int, int, bytes | None]
"""(key bytes, window start, seqnum, value bytes or None to delete): one write of a batch."""


class WindowBytesStore(ABC):
    """The innermost window layer: values by (key bytes, window start, seqnum), with retention."""

    name: str
    retention_ms: int

    @abstractmethod
    def open(self, context: StateStoreContext) -> None: ...

    @abstractmethod
    def put(self, key: bytes, window_start: int, seqnum: int, value: bytes | None) -> None:
        """Store (None: delete) one window's value; a window already expired is dropped."""

    def put_all(self, writes: list[WindowWrite]) -> None:
        """Several writes at once (restoration); backends may make this one atomic write."""
        for key, start, seqnum, value in writes:
            self.put(key, start, seqnum, value)

    @abstractmethod
    def get(self, key: bytes, window_start: int, seqnum: int) -> bytes | None:
        """One window's value; None when absent or expired."""

    @abstractmethod
    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        """The key's windows with `time_from <= start <= time_to`, by start then seqnum."""

    @abstractmethod
    def fetch_all(self, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        """Every key's windows with `time_from <= start <= time_to`, by start, then key, then seqnum."""

    @property
    @abstractmethod
    def observed_stream_time(self) -> int:
        """The latest window start written (-1 before any write): the clock retention runs on."""

    @abstractmethod
    def flush(self) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    @property
    @abstractmethod
    def persistent(self) -> bool: ...

    @property
    @abstractmethod
    def is_open(self) -> bool: ...


class WindowBytesStoreSupplier(ABC):
    """What `Stores.persistent_window_store(...)` & co. return: a new window bytes store per `get()`."""

    name: str
    retention_ms: int
    window_size_ms: int
    retain_duplicates: bool

    @abstractmethod
    def get(self) -> WindowBytesStore: ...

    @property
    @abstractmethod
    def persistent(self) -> bool: ...

    @property
    @abstractmethod
    def metrics_scope(self) -> str: ...


class WindowStore(StateStore):
    """The typed window store of the API: `put(key, value, window_start)` and the `fetch` family.

    Iterators yield `KeyValue(window_start, value)` from `fetch(key, time_from, time_to)` and
    `KeyValue(Windowed(key, window), value)` from `fetch_all` / `all`; they are context managers.
    """

    window_size_ms: int
    retention_ms: int

    @abstractmethod
    def put(self, key: Any, value: Any, window_start: int) -> None:
        """`value` None deletes the window (ignored when the store retains duplicates, as in Java)."""

    @abstractmethod
    def fetch(self, key: Any, time_from: Any, time_to: Any = None) -> Any:
        """`fetch(key, window_start)`: that window's value or None; `fetch(key, time_from, time_to)`:
        a `KeyValueIterator` of `KeyValue(window_start, value)` for starts in the inclusive range."""

    def fetch_list(self, key: Any, time_from: int, time_to: int) -> list[KeyValue]:
        """What `fetch(key, time_from, time_to)` iterates, as a list. For a caller that takes every entry
        at once (the stream-stream join, once per record): a store may build the list without an
        iterator step per entry."""
        with self.fetch(key, time_from, time_to) as entries:
            return list(entries)

    @abstractmethod
    def fetch_all(self, time_from: Any, time_to: Any) -> KeyValueIterator[Any, Any]:
        """Every key's windows that start in `[time_from, time_to]`, as `(Windowed(key, window), value)` pairs."""

    @abstractmethod
    def all(self) -> KeyValueIterator[Any, Any]:
        """Every window of every key still retained."""

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Install the listener for windows a cache flushes, as `listener(Windowed(key, window), new, old,
        timestamp, headers)`; True iff this store caches (else the processor forwards every update)."""
        return False


class TimestampedWindowStore(WindowStore):
    """A window store whose values are `ValueAndTimestamp`; what windowed aggregations use."""
