"""Exceptions that streamlet raises, named as a Kafka Streams user would look for them."""

from __future__ import annotations

from streamlet.error_remedies import DESERIALIZATION_REMEDY


class StreamsError(Exception):
    """Base class of every streamlet error."""


class TopologyError(StreamsError):
    """The topology is malformed: unknown parent, duplicate name, store not connected, ..."""


class ConfigError(StreamsError):
    """A configuration value is missing or invalid."""


class SerializationError(StreamsError):
    """A serde could not turn bytes into an object or back."""


class SinkSerializationError(SerializationError):
    """A sink could not serialize its record: the production exception handler decides (Kafka Streams'
    `handleSerializationError`). `topic`, `key`, `value`, `timestamp` and `headers` are the record's, and
    `node` the sink's name; `cause` the serde's own error (kept here too: `__cause__` is not set when the
    compiled hot path raises it)."""

    def __init__(self, message: str, node: str, topic: str, key: object, value: object, timestamp: int,
                 headers: tuple[tuple[str, bytes], ...], cause: Exception | None = None) -> None:
        super().__init__(message)
        self.node, self.topic, self.key, self.value = node, topic, key, value
        self.timestamp, self.headers, self.cause = timestamp, headers, cause


class RetriableError(StreamsError):
    """A failure that may pass by itself: a service a record needs (the schema registry) cannot be reached
    for now. It is never bad input, so no exception handler sees it: a task that meets one while it reads
    its input holds the records from that one on, waits (`schema.registry.retry.backoff.ms`, doubling up to
    `schema.registry.retry.backoff.max.ms`) and tries again, for up to `task.timeout.ms`, then fails."""


class SchemaRegistryUnavailableError(RetriableError):
    """The schema registry cannot be reached (refused connection, timeout, HTTP 5xx or 429): retried, never
    handed to an exception handler (see `RetriableError`)."""


class SchemaRegistryAuthError(ConfigError):
    """The schema registry refused the credentials (HTTP 401 or 403): a configuration to fix
    (`basic.auth.user.info`, or the user:password in `schema.registry.url`), never bad input, so no
    exception handler sees it; the task fails. The password is never in its message."""


def never_handled(exc: BaseException) -> bool:
    """True for failures that are no record's fault (`RetriableError`, `SchemaRegistryAuthError`), also when
    wrapped (a sink's `SinkSerializationError`): the exception handlers never see them."""
    seen: BaseException | None = exc
    for _depth in range(4):
        if seen is None:
            return False
        if isinstance(seen, RetriableError | SchemaRegistryAuthError):
            return True
        seen = getattr(seen, "cause", None) or seen.__cause__
    return False


class DeserializationError(StreamsError):
    """A consumed record could not be deserialized (and `deserialization.exception.handler` is
    log_and_fail); names where it came from and, as Kafka Streams' message does, the setting to change."""

    def __init__(self, topic: str, partition: int, offset: int, cause: BaseException) -> None:
        super().__init__(
            f"failed to deserialize the record at topic {topic!r} partition {partition} offset {offset}: "
            f"{type(cause).__name__}: {cause}; {DESERIALIZATION_REMEDY}"
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.cause = cause


class InvalidStateStoreError(StreamsError):
    """A store was used before init, after close, or from a processor it is not connected to."""


class UnknownStateStoreError(InvalidStateStoreError):
    """Kafka Streams' UnknownStateStoreException: the topology has no store of that name."""


class StreamsNotStartedError(InvalidStateStoreError):
    """Kafka Streams' StreamsNotStartedException: stores are queried before `start()`."""


class StateStoreNotAvailableError(InvalidStateStoreError):
    """Kafka Streams' StateStoreNotAvailableException: the client is shutting down or stopped, so its
    stores are gone for good (asking again will not help; ask another instance)."""


class StateStoreMigratedError(InvalidStateStoreError):
    """Kafka Streams' StateStoreMigratedException: a rebalance is moving the store, or its local copy
    closed under the query. Transient: re-discover the owner (`query_metadata_for_key`) and retry,
    or query with `enable_stale_stores()` to read a standby or restoring copy meanwhile."""


class StreamsStoppedError(InvalidStateStoreError):
    """Kafka Streams' StreamsStoppedException: an IQv2 query (`KafkaStreams.query`) to a client that is
    shutting down, stopped or failed."""


class InvalidStateStorePartitionError(InvalidStateStoreError):
    """Kafka Streams' InvalidStateStorePartitionException: `with_partition(p)` names a partition this
    instance holds no copy of."""


class BrokerUnavailableError(StreamsError):
    """The local development broker cannot be provisioned or started."""


class ApplicationShutdownError(StreamsError):
    """Another instance's uncaught-exception handler asked the whole application to shut down."""


class GroupHeldByOtherProtocolError(StreamsError):
    """The application's consumer group kept members of another protocol (most often a Kafka Streams
    application's, which stay in the group after it closes until their session times out) for longer
    than `task.timeout.ms`, so this instance could never join it. Stop those members, or raise
    `task.timeout.ms` to wait longer."""


class StateDirectoryError(StreamsError):
    """The state directory cannot be created or written (Kafka Streams' `ProcessorStateException` at
    construction): a configuration or permission problem to fix before the instance can run."""


class StateStoreCorruptedError(StreamsError):
    """A persistent store's files cannot be trusted (LevelDB reports corruption, a table is truncated or
    missing, a directory the checkpoint vouches for is gone). The task's local state is wiped and
    rebuilt from the changelog, as Kafka Streams does on a `TaskCorruptedException`."""

    def __init__(self, store_name: str, path: object, reason: str) -> None:
        super().__init__(f"state store {store_name!r} at {path} is corrupted: {reason}")
        self.store_name = store_name
        self.path = path
        self.reason = reason


def error_summary(error: BaseException, with_type: bool = True) -> str:
    """One line for a failure: its type, its message, and the notes added on the way up (which task,
    which record: topic, partition, offset; which setting decides what such a failure does), so that a
    summary says where and what to change as well as what."""
    notes = [str(note) for note in getattr(error, "__notes__", ()) or ()]
    head = f"{type(error).__name__}: {error}" if with_type else str(error)
    return head + (f" ({'; '.join(notes)})" if notes else "")


class StrayCancellationError(StreamsError):
    """A cancellation nobody asked for reached the group member: a client library cancelled a future
    the member was awaiting (seen while the broker was away). Left as a bare cancellation it would
    pass for a requested stop and end processing silently; as this error the member is replaced,
    loudly. Its `__cause__` holds the cancellation with the traceback of where it surfaced."""

    @classmethod
    def check(cls, exc: BaseException, where: str) -> None:
        """Raise this error from `exc` when `exc` is a cancellation the current task was not asked for
        (`Task.cancelling()` is 0: no cancel scope or caller cancelled it); return otherwise."""
        stray = cls.of(exc, where)
        if stray is not None:
            raise stray

    @classmethod
    def of(cls, exc: BaseException, where: str) -> StrayCancellationError | None:
        """This error, raised from `exc`, when `check` would raise it; else None (for a background
        task that reports its failures to its owner instead of raising them)."""
        import asyncio

        if not isinstance(exc, asyncio.CancelledError):
            return None
        try:
            task = asyncio.current_task()
        except RuntimeError:  # not in an event loop
            return None
        if task is None or task.cancelling() != 0:
            return None
        stray = cls(f"an unexpected cancellation surfaced in {where}")
        stray.__cause__ = exc
        return stray
