"""The Processor API's public face: `Processor`, `ProcessorContext`, punctuation.

A processor sees one record at a time through `process`; it reaches its stores and its children
only through the context it is given in `init`. The context is an abstract class here so that the
runtime (`streamlet.actors`) can implement it without the public API importing internals.

Two variants of Kafka Streams' API live here too: the fixed-key processor of `KStream.process_values`
(`FixedKeyProcessor`, `FixedKeyRecord`, `FixedKeyProcessorContext`: the key of what it forwards is its
input's, so no repartitioning follows), and `TopicNameExtractor`, which routes each record of a sink to
a topic chosen per record.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from streamlet.durations import epoch_millis as epoch_millis  # re-exported: the API's own helpers
from streamlet.durations import to_millis as to_millis
from streamlet.record import Headers, Record, RecordMetadata
from streamlet.stores.api import RecordContext

if TYPE_CHECKING:
    from streamlet.config import StreamsConfig
    from streamlet.stores.api import StateStore

_new_tuple = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)


class PunctuationType(enum.Enum):
    """Which clock drives a punctuation: event (stream) time or wall-clock time."""

    STREAM_TIME = "STREAM_TIME"
    WALL_CLOCK_TIME = "WALL_CLOCK_TIME"


Punctuator = Callable[[int], None]
"""A punctuation callback; it receives the punctuation timestamp in ms."""


class Cancellable(ABC):
    """Returned by `ProcessorContext.schedule`; `cancel()` stops further punctuations."""

    @abstractmethod
    def cancel(self) -> None:
        """Stop this punctuation schedule; it fires no more."""




def _raise_on(record: Record, exc: Exception) -> None:
    """A `failed` that leaves the error to the caller (`ProcessorContext.forwarder_and_guard`)."""
    raise exc


class ProcessorContext(ABC):
    """What a processor may do beyond `process`: forward, schedule, reach stores, ask to commit."""

    @abstractmethod
    def forward(self, record: Record, child_name: str | None = None) -> None:
        """Send a record to all children, or to the named child only."""

    def forwarder(self) -> Callable[[Record], None]:
        """A function that does `forward(record)` to all children, to bind once in `init`: a runtime may
        return a faster equivalent (the only child's `process` itself when there is just one)."""
        return self.forward

    def forwarder_and_guard(self) -> tuple[Callable[[Record], None], Callable[[Record, Exception], None]]:
        """`(forward, failed)` for a processor on the hot path that catches its children's errors in its own
        frame, where a `try` costs nothing until something raises: call `forward(record)`, and on an
        `Exception` call `failed(record, exc)`, which handles it at the child that raised (with the
        `processing.exception.handler`, as `forwarder()` does itself) or raises it on. The base pair is `forwarder()`
        and a `failed` that raises."""
        return self.forwarder(), _raise_on

    def forwarder_in_record_context(self) -> Callable[[Record], None]:
        """As `forwarder()`, but while the children process a record whose timestamp or headers differ
        from the current record's, those are the record context's (what stores write to changelogs and
        caches remember), as Kafka Streams' `forward` does. For processors that restamp what they send
        (aggregations, joins, suppression); a runtime without a record context returns `forwarder()`."""
        return self.forwarder()

    @abstractmethod
    def schedule(
        self, interval: timedelta | int, punctuation_type: PunctuationType, callback: Punctuator,
        start_time: datetime | int | None = None,
    ) -> Cancellable:
        """Call `callback(timestamp_ms)` every `interval` of stream time or of wall-clock time.

        Without `start_time` a wall-clock punctuation first fires one interval from now and a stream-time
        one as soon as stream time exists. With it (KIP-1146; a datetime or epoch ms, not before the epoch)
        the punctuations are anchored to it: the first fires at `start_time`, or, when that has passed
        already (on the punctuation's clock), at the first `start_time + k * interval` after now."""

    @abstractmethod
    def get_state_store(self, name: str) -> StateStore:
        """A store connected to this processor (`add_state_store` / `process(..., store_names)`)."""

    @abstractmethod
    def commit(self) -> None:
        """Ask the runtime to commit this task soon (at the next batch boundary)."""

    @property
    @abstractmethod
    def application_id(self) -> str:
        """The application's `application.id`."""

    @property
    @abstractmethod
    def task_id(self) -> str:
        """`<sub-topology>_<partition>`, as Kafka Streams prints a TaskId."""

    @property
    @abstractmethod
    def app_config(self) -> StreamsConfig:
        """The application's configuration (`StreamsConfig`)."""

    @abstractmethod
    def record_metadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the record being processed; None in a punctuation."""

    @abstractmethod
    def current_stream_time_ms(self) -> int:
        """The task's stream time: the highest record timestamp it has processed, or -1 before the first."""

    @abstractmethod
    def current_system_time_ms(self) -> int:
        """The task's wall-clock time in ms (the test driver's mocked clock under `TopologyTestDriver`)."""

    @property
    def key_serde(self) -> Any:
        """The configured `default.key.serde`, or None."""
        return self.app_config.default_key_serde()

    @property
    def value_serde(self) -> Any:
        """The configured `default.value.serde`, or None."""
        return self.app_config.default_value_serde()


class Processor:
    """Base class of a processor: override `process`, and `init`/`close` when needed.

    `init` stores the context in `self.context` by default, so a subclass that overrides `init`
    should call `super().init(context)`.
    """

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        """Called once per task before the first record, with the task's context: keep it, get state stores,
        schedule punctuations here."""
        self.context = context

    def process(self, record: Record) -> None:
        """Handle one record; forward results with `self.context.forward(record)`. Runs in the task's synchronous
        loop: do not block."""
        raise NotImplementedError

    def close(self) -> None:
        """Called when the task closes (shutdown, rebalance); release what `init` acquired. Stores are closed by
        the runtime."""
        pass


class ProcessorSupplier(Protocol):
    """What `Topology.add_processor`, `KStream.process` and the global stores take (Kafka Streams'
    `ProcessorSupplier`): a callable of no arguments returning a NEW `Processor` on each call, as
    each task gets its own processor. A `Processor` subclass is one (`add_processor("p", Dedup,
    "src")`), and so is a function or `functools.partial(Dedup, retention)`; a processor instance is
    refused (one processor shared by the tasks would mix their state). Used in type hints only."""

    def __call__(self) -> Processor:
        """A new processor."""
        ...


class TimestampExtractor(ABC):
    """Chooses a record's timestamp (event time) from the consumed record."""

    @abstractmethod
    def extract(self, topic: str, key: Any, value: Any, record_timestamp: int, partition_time: int) -> int:
        """The event time of `record`, in ms; `partition_time` is the highest timestamp seen so far on its
        partition (-1 before the first). A negative result makes the record be skipped."""


class RecordTimestampExtractor(TimestampExtractor):
    """The default: the timestamp embedded in the Kafka record (`FailOnInvalidTimestamp` in Java)."""

    def extract(self, topic: str, key: Any, value: Any, record_timestamp: int, partition_time: int) -> int:
        """The record's own timestamp (set by its producer or the broker), or -1 when it has none."""
        return record_timestamp


class WallclockTimestampExtractor(TimestampExtractor):
    """Processing-time semantics: the current wall-clock time."""

    def extract(self, topic: str, key: Any, value: Any, record_timestamp: int, partition_time: int) -> int:
        """The current wall-clock time in ms: processing-time semantics, whatever the record says."""
        import time

        return int(time.time() * 1000)


class UsePartitionTimeOnInvalidTimestamp(TimestampExtractor):
    """The record's timestamp, or the partition's stream time when the record's is negative."""

    def extract(self, topic: str, key: Any, value: Any, record_timestamp: int, partition_time: int) -> int:
        """The record's timestamp, or, when it is negative, the partition's time so far (a record before any valid
        one is skipped)."""
        return record_timestamp if record_timestamp >= 0 else max(partition_time, 0)


# -- the fixed-key Processor API (`KStream.process_values`) ---------------------------------------------------------
class FixedKeyRecord(NamedTuple):
    """A record whose key a processor cannot change, as Kafka Streams' `FixedKeyRecord`: there is no
    `with_key`, and a `FixedKeyProcessorContext` forwards only these. A processor gets one per input
    record and forwards copies of it (`with_value`, `with_timestamp`, `with_headers`), so whatever it
    sends stays partitioned as its input was and `process_values` needs no repartitioning."""

    key: Any
    value: Any
    timestamp: int = 0
    headers: Headers = ()

    def with_value(self, value: Any) -> FixedKeyRecord:
        """A copy with another value (records are immutable)."""
        return _new_tuple(FixedKeyRecord, (self[0], value, self[2], self[3]))

    def with_timestamp(self, timestamp: int) -> FixedKeyRecord:
        """A copy with another timestamp (ms, not negative)."""
        if timestamp < 0:
            raise ValueError(f"a record timestamp must not be negative, got {timestamp}")
        return _new_tuple(FixedKeyRecord, (self[0], self[1], timestamp, self[3]))

    def with_headers(self, headers: Headers | list[tuple[str, bytes]] | None) -> FixedKeyRecord:
        """A copy with these headers, `(name, bytes)` pairs, replacing the old ones."""
        return _new_tuple(FixedKeyRecord, (self[0], self[1], self[2], tuple(headers or ())))


class FixedKeyProcessorContext(ProcessorContext):
    """The context of a `FixedKeyProcessor`: as `ProcessorContext`, but `forward` takes a `FixedKeyRecord`
    (Kafka Streams' `FixedKeyProcessorContext`), so the key of what is forwarded is the input's."""

    @abstractmethod
    def forward(self, record: FixedKeyRecord, child_name: str | None = None) -> None:  # type: ignore[override]
        """Send a record to all children, or to the named child only."""

    def forwarder(self) -> Callable[[FixedKeyRecord], None]:  # type: ignore[override]
        """A function that does `forward(record)` to all children, to bind once in `init`."""
        return self.forward


class FixedKeyProcessor:
    """Base class of a processor for `KStream.process_values`: override `process`, and `init`/`close` when
    needed. As `Processor`, except that it receives and forwards `FixedKeyRecord`s; `init` stores the
    context in `self.context` by default."""

    context: FixedKeyProcessorContext

    def init(self, context: FixedKeyProcessorContext) -> None:
        """Called once per task before the first record: keep the context, get stores, schedule punctuations."""
        self.context = context

    def process(self, record: FixedKeyRecord) -> None:
        """Handle one record; forward results with `self.context.forward(record.with_value(...))`."""
        raise NotImplementedError

    def close(self) -> None:
        """Called when the task closes; release what `init` acquired (stores are closed by the runtime)."""
        pass


class FixedKeyProcessorSupplier(Protocol):
    """What `KStream.process_values` takes (Kafka Streams' `FixedKeyProcessorSupplier`): a callable of no
    arguments returning a NEW `FixedKeyProcessor` on each call, one per task. A `FixedKeyProcessor`
    subclass is one, and so is a function or a `functools.partial`; a processor instance is refused.
    Used in type hints only."""

    def __call__(self) -> FixedKeyProcessor:
        """A new fixed-key processor."""
        ...


# -- dynamic routing (`KStream.to(extractor)`, `Topology.add_sink(name, extractor, ...)`) ----------------------------
class TopicNameExtractor(ABC):
    """Chooses the topic of each output record, as Kafka Streams' `TopicNameExtractor`. The topics it names
    must exist (the application does not create them). Any callable `(key, value, record_context) -> str`
    works as well; a class lets `describe()` show a readable name (`str()` of the extractor), as Java
    prints the extractor's `toString()`."""

    @abstractmethod
    def extract(self, key: Any, value: Any, record_context: RecordContext) -> str:
        """The topic for this record; `record_context` has the record's `timestamp` and `headers` and the
        `topic`, `partition` and `offset` of the input record being processed (None/-1 in a punctuation)."""

    def __call__(self, key: Any, value: Any, record_context: RecordContext) -> str:
        return self.extract(key, value, record_context)
