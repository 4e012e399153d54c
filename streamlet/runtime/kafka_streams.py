"""`KafkaStreams`: the client an application embeds — lifecycle, state, interactive queries.

It owns one `Supervisor` (a consumer-group member with its task actors) running as a background
asyncio task on the application's event loop. `start()` returns once the member has joined the
group machinery (topics prepared, clients started), so configuration and topic errors surface at
start rather than later in the background. The state machine and its transitions follow Kafka
Streams: CREATED → REBALANCING ⇄ RUNNING → PENDING_SHUTDOWN → NOT_RUNNING, or ERROR.

Every task below the client runs in an anyio task group, so none outlives its owner: the member in
the runner's group, the task actors and their batch pumps in the member's, the global stores' loop
in the global thread's. The runner itself is the one task started without a group. `start()`
returns while the client runs on, and the application may call `close()` from another task (a
signal handler, a web framework's shutdown hook), so no group of the caller can own it without
changing that API: a group entered in `start()` would have to be left by the same task in
`close()`, with every cancel scope opened in between already closed, and a failure would cancel the
caller's task where Kafka Streams moves the client to ERROR. The runner is kept instead, awaited by
`close()` (cancelled once its timeout passed) and by `wait()`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from streamlet.actors.task_actor import TaskStoppedError
from streamlet.config import StreamsConfig
from streamlet.dsl.store_suppliers import apply_application_setting
from streamlet.error_remedies import unreachable_remedy
from streamlet.errors import (
    ApplicationShutdownError,
    StateStoreNotAvailableError,
    StrayCancellationError,
    StreamsError,
    StreamsNotStartedError,
    StreamsStoppedError,
    UnknownStateStoreError,
    error_summary,
)
from streamlet.kafka.error_remedies import noise_traceback
from streamlet.metrics.streams_metrics import StreamsMetrics
from streamlet.queries.iqv2 import PositionBound, StateQueryRequest
from streamlet.queries.key_value_view import ReadOnlyKeyValueView
from streamlet.queries.metadata import HostInfo, KeyQueryMetadata, MetadataView, StreamsMetadata
from streamlet.queries.parameters import QueryableStoreTypes, StoreQueryParameters, native_store_type
from streamlet.queries.provider import StoreProvider, local_copies
from streamlet.queries.query_result import FailureReason, QueryResult, StateQueryResult
from streamlet.queries.session_view import ReadOnlySessionView
from streamlet.queries.store_query import run_query
from streamlet.queries.versioned_view import ReadOnlyVersionedView
from streamlet.queries.window_view import ReadOnlyWindowView
from streamlet.redaction import redact
from streamlet.runtime.close_options import CloseOptions
from streamlet.runtime.instance_id import clean_up, ensure_state_directory, state_root
from streamlet.runtime.supervisor import Supervisor, request_application_shutdown
from streamlet.serdes import Serde, Serializer
from streamlet.stores.position import fold_position
from streamlet.telemetry.metrics_export import OtlpMetrics
from streamlet.telemetry.tracing import flush_spans
from streamlet.topology import Topology

log = logging.getLogger(__name__)


class State(enum.Enum):
    """The life of a `KafkaStreams` client, as in Kafka Streams:

    CREATED → REBALANCING ⇄ RUNNING → PENDING_SHUTDOWN → NOT_RUNNING, or ERROR when it failed.
    REBALANCING covers joining the group and restoring state; stores are queryable in RUNNING (and,
    stale, in REBALANCING). In a streams group (`group.protocol=streams`) the client is RUNNING once the
    broker's first assignment arrived, even one without tasks, as Kafka Streams 4.4 is. A state listener
    hears every change.
    """

    CREATED = "CREATED"
    REBALANCING = "REBALANCING"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    ERROR = "ERROR"

    def is_running_or_rebalancing(self) -> bool:
        """True while the client is a group member: RUNNING or REBALANCING."""
        return self in (State.RUNNING, State.REBALANCING)


_TRANSITIONS: dict[State, set[State]] = {
    State.CREATED: {State.REBALANCING, State.PENDING_SHUTDOWN, State.ERROR},
    State.REBALANCING: {State.RUNNING, State.REBALANCING, State.PENDING_SHUTDOWN, State.ERROR},
    State.RUNNING: {State.REBALANCING, State.PENDING_SHUTDOWN, State.ERROR},
    State.PENDING_SHUTDOWN: {State.NOT_RUNNING, State.ERROR},
    State.NOT_RUNNING: set(),
    State.ERROR: {State.PENDING_SHUTDOWN, State.NOT_RUNNING},
}

StateListener = Callable[[State, State], None]
"""`listener(new_state, old_state)`, as Kafka Streams' `StateListener.onChange`."""


def _unreachable(error: BaseException) -> bool:
    """True when `error`, or an error it was raised from, says the cluster could not be reached (a
    refused connection, a timed-out request): a condition that ends when the brokers are back."""
    from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError

    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, KafkaConnectionError | KafkaTimeoutError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _log_failure(error: BaseException) -> None:
    """The failure in one line that says what happened and what decides it; the traceback with it when
    it points at code to fix, else (a record, the cluster, a topic, a setting) in the debug log only."""
    if noise_traceback(error) or _unreachable(error):
        log.error("streams client failed: %s", error_summary(error))
        log.debug("the traceback of that failure", exc_info=error)
    else:
        log.error("streams client failed: %s", error_summary(error), exc_info=error)


def root_error(exc: BaseException) -> BaseException:
    """The one real error inside nested task-group exception groups (cancellations and the errors of
    requests to tasks that had already failed left out)."""
    while isinstance(exc, BaseExceptionGroup):
        real = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError | TaskStoppedError)
                and not (isinstance(e, BaseExceptionGroup) and e.subgroup(
                    lambda x: not isinstance(x, asyncio.CancelledError | TaskStoppedError | BaseExceptionGroup))
                         is None)]
        if len(real) != 1:
            return exc
        exc = real[0]
    return exc


class StreamThreadExceptionResponse(enum.Enum):
    """What the uncaught-exception handler asks for (Kafka Streams' enum of the same name). In streamlet
    a client has one supervisor (one group member) where Kafka Streams has stream threads: "thread"
    means that member, and `streamlet run --workers N` gives an application N of them."""

    REPLACE_THREAD = "replace_thread"
    SHUTDOWN_CLIENT = "shutdown_client"
    SHUTDOWN_APPLICATION = "shutdown_application"


def _response(value: Any) -> StreamThreadExceptionResponse:
    if value is None:
        return StreamThreadExceptionResponse.SHUTDOWN_CLIENT
    if isinstance(value, StreamThreadExceptionResponse):
        return value
    try:
        return StreamThreadExceptionResponse(str(value).strip().lower())
    except ValueError:
        log.error("unknown uncaught-exception response %r; shutting the client down", value)
        return StreamThreadExceptionResponse.SHUTDOWN_CLIENT


class KafkaStreams:
    """Runs a `Topology` as one instance of the application named by `application.id`.

    Start as many instances (processes, machines) as you like with the same `application.id`: they form
    one consumer group and share the input partitions, one task per partition of each sub-topology,
    with state stores restored from their changelog topics when tasks move.

    In an asyncio application::

        async with KafkaStreams(topology, {"application.id": "wordcount",
                                            "bootstrap.servers": "localhost:9092"}) as streams:
            await streams.wait()           # until close() from elsewhere, or a failure

    or `await streams.start()` ... `await streams.close(timeout=10)`. The constructor checks the
    configuration and the state directory and touches no broker; `start()` returns once the group is
    joined. `state`, `set_state_listener` and `set_uncaught_exception_handler` follow Kafka Streams;
    `store(name)` gives read-only access to local stores; `metrics` counts what the instance did.
    """

    def __init__(self, topology: Topology, config: StreamsConfig | dict[str, Any]) -> None:
        self.topology = topology
        self.config = StreamsConfig.of(config)
        self.config.application_id  # noqa: B018 - fail fast when missing
        apply_application_setting(topology, self.config)  # dsl.store.suppliers.class
        topology.validate()
        self.application_server  # noqa: B018 - a malformed application.server fails here, with its value
        # As Kafka Streams' constructor: a state directory that cannot be created or written is a
        # configuration error, reported now with its path rather than when the first task opens.
        ensure_state_directory(state_root(self.config, self.config.application_id))
        self._state = State.CREATED
        self._listener: StateListener | None = None
        self._exception_handler: Callable[[BaseException], Any] | None = None
        self._supervisor: Supervisor | None = None
        self._runner: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        # Kafka Streams' built-in metrics (thread, task, processor node, consumer lag); see streamlet.metrics.
        self.failed_members = 0
        """Group members that failed since the start (`failed-stream-threads`)."""
        self.streams_metrics = StreamsMetrics(self.config, lambda: self._supervisor, client=self)
        self._otlp_metrics = OtlpMetrics(self.streams_metrics.metrics, str(self.config.application_id)) \
            if self.config["metrics.otlp.enabled"] else None
        """The same metrics over OTLP (`metrics.otlp.enabled`), else None."""

    # -- state ----------------------------------------------------------------------------------------
    @property
    def state(self) -> State:
        """The client's current `State`."""
        return self._state

    def set_state_listener(self, listener: StateListener | None) -> None:
        """Call `listener(new_state, old_state)` on every state change; set it before `start()`."""
        if self._state is not State.CREATED:
            raise StreamsError("a state listener can only be set before start()")
        self._listener = listener

    def set_uncaught_exception_handler(self, handler: Callable[[BaseException], Any] | None) -> None:
        """Decide what a failure of the group member does: `handler(error)` returns a
        `StreamThreadExceptionResponse` (replace the member, shut this client down, or shut the whole
        application down). Without one, the setting `uncaught.exception.handler` decides. Set it before
        `start()`."""
        if self._state is not State.CREATED:
            raise StreamsError("an exception handler can only be set before start()")
        self._exception_handler = handler

    def _set_state(self, new: State) -> None:
        old = self._state
        if new is old and new is not State.REBALANCING:
            return
        if new not in _TRANSITIONS[old]:
            log.debug("ignored state transition %s -> %s", old.name, new.name)
            return
        self._state = new
        if new is old:  # listeners still hear it, as in Kafka Streams; the log says what it means
            log.info("another rebalance began before the last one finished (still REBALANCING)")
        else:
            log.info("state transition from %s to %s", old.name, new.name)
        if self._listener is not None:
            try:
                self._listener(new, old)
            except Exception:
                log.exception("state listener failed")

    @property
    def error(self) -> BaseException | None:
        """What stopped the client, when it is in the ERROR state."""
        return self._error

    # -- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Create topics the application owns, join the group and start processing; returns once the
        group is joined (state REBALANCING, then RUNNING when its tasks are restored). Raises what makes
        start-up impossible: missing source topics, refused credentials or ACLs, a bad configuration."""
        if self._state is not State.CREATED:
            raise StreamsError(f"start() needs the CREATED state, not {self._state.name}")
        log.info("%s", _config_in_force(self.config))
        self._set_state(State.REBALANCING)
        self._supervisor = self._new_supervisor()
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # Not in a task group: see the module docstring. close() awaits it.
        self._runner = asyncio.create_task(self._run(started), name=f"streamlet-{self.config.application_id}")
        await started

    def _new_supervisor(self) -> Supervisor:
        supervisor = Supervisor(self.topology, self.config, on_rebalance=self._on_rebalance)
        supervisor.on_loop = self.streams_metrics.maybe_sample
        if self._otlp_metrics is not None:
            sample, snapshot = self.streams_metrics.maybe_sample, self._otlp_metrics.maybe_snapshot

            def on_loop() -> None:
                sample()
                snapshot()

            supervisor.on_loop = on_loop
        supervisor.on_task_created = self.streams_metrics.instrument
        return supervisor

    def _on_rebalance(self, assigned: bool) -> None:
        if self._state in (State.PENDING_SHUTDOWN, State.NOT_RUNNING, State.ERROR):
            return
        self._set_state(State.RUNNING if assigned else State.REBALANCING)

    async def _run(self, started: asyncio.Future[None]) -> None:
        import anyio

        replacements = 0
        unreachable = 0  # consecutive replacements that could not reach the cluster
        unreachable_since: float | None = None  # when the first of them failed
        while True:
            supervisor = self._supervisor
            assert supervisor is not None
            member_started = False
            try:
                async with anyio.create_task_group() as tg:
                    await tg.start(supervisor.run)
                    member_started = True
                    unreachable, unreachable_since = 0, None
                    if not started.done():
                        started.set_result(None)
                if not supervisor.stop_requested:
                    # The member ended without being asked to: a cancellation from inside it that the
                    # task group took for its own (see below).
                    raise StrayCancellationError("the group member ended without a stop request")
            except BaseException as exc:
                error = root_error(exc)
                stray = isinstance(error, StrayCancellationError)
                if isinstance(error, asyncio.CancelledError):
                    current = asyncio.current_task()
                    if self._state in (State.PENDING_SHUTDOWN, State.NOT_RUNNING) or (
                            current is not None and current.cancelling()):
                        if not started.done():
                            started.set_exception(StreamsError("the client was closed while starting"))
                        raise
                    # Nobody closed the client: a cancellation escaped from inside the group member (a
                    # client library cancelled a future it was awaiting, e.g. while the broker was away).
                    # It used to end the member silently while the state still said RUNNING. It is not
                    # the application's failure: the member is replaced (its state is rebuilt from the
                    # committed offsets and changelogs), loudly, with the traceback in the log.
                    stray = True
                    error = StrayCancellationError("the group member stopped on an unexpected cancellation")
                    error.__cause__ = exc
                if (started.done() and _unreachable(error) and not supervisor.stop_requested
                        and self._state is not State.PENDING_SHUTDOWN):
                    # The cluster is away (an outage is what most often makes a member fail). Kafka
                    # Streams' threads wait for the brokers for up to task.timeout.ms rather than die;
                    # so does this client: the member is replaced, and a replacement that cannot reach
                    # the cluster retries with a capped backoff until it answers, the client is closed,
                    # or task.timeout.ms has passed since the cluster was last reached. Only the first
                    # start() raises at once.
                    now = time.monotonic()
                    unreachable_since = unreachable_since or now
                    if now - unreachable_since < float(self.config["task.timeout.ms"]) / 1000:
                        unreachable += 1
                        delay = 0.0 if member_started else min(0.5 * 2 ** unreachable, 10.0)
                        if member_started:
                            log.warning("the group member lost the cluster (%s); replacing it",
                                        error_summary(error), exc_info=error)
                        else:
                            log.warning("the replacement group member cannot reach the cluster (%s); "
                                        "retrying in %.1f s", error_summary(error), delay)
                        self._supervisor = self._new_supervisor()
                        if self._state is not State.REBALANCING:
                            self._set_state(State.REBALANCING)
                        if await self._supervisor.wait_for_stop(delay):
                            return
                        continue
                if _unreachable(error):
                    error.add_note(unreachable_remedy(self.config["bootstrap.servers"], self.config["task.timeout.ms"],
                                                      started.done()))
                _log_failure(error)
                self.failed_members += 1
                replace = StreamThreadExceptionResponse.REPLACE_THREAD
                response = replace if stray else await self._respond(error, started)
                if response is StreamThreadExceptionResponse.REPLACE_THREAD and replacements < 100:
                    replacements += 1
                    log.warning("replacing the failed group member (replacement #%d)", replacements)
                    self._supervisor = self._new_supervisor()
                    self._set_state(State.REBALANCING)
                    continue
                if response is StreamThreadExceptionResponse.SHUTDOWN_APPLICATION:
                    try:
                        if not await request_application_shutdown(self.topology, self.config):
                            log.error("the group did not acknowledge the application shutdown request")
                    except Exception:
                        log.exception("could not request the application shutdown")
                self._error = error
                self._set_state(State.ERROR)
                if not started.done():
                    started.set_exception(error)
                return
            if not started.done():
                started.set_result(None)
            return

    async def _respond(self, error: BaseException, started: asyncio.Future[None]) -> StreamThreadExceptionResponse:
        """Ask the uncaught-exception handler (or `uncaught.exception.handler`) what to do. Errors at
        start-up, and a shutdown another instance requested, always shut the client down."""
        if not started.done() or isinstance(error, ApplicationShutdownError) or self._state is State.PENDING_SHUTDOWN:
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT
        if self._exception_handler is None:
            return _response(self.config.get("uncaught.exception.handler"))
        try:
            result = self._exception_handler(error)
            if asyncio.iscoroutine(result):
                result = await result
        except Exception:
            log.exception("uncaught exception handler failed; shutting the client down")
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT
        return _response(result)

    async def close(self, timeout: float | CloseOptions | None = None) -> bool:
        """Stop processing, commit and close every task; True if it finished within the timeout.

        `timeout` is seconds, or `CloseOptions` (a timeout, and whether the instance leaves its consumer
        group: by default it does, so the others take its tasks over at once)."""
        options = timeout if isinstance(timeout, CloseOptions) else CloseOptions(timeout_s=timeout)
        timeout = options.timeout_s
        if self._state in (State.NOT_RUNNING,):
            return True
        if self._state is not State.ERROR:
            self._set_state(State.PENDING_SHUTDOWN)
        if self._supervisor is not None:
            self._supervisor.stop(leave_group=options.leaves_group)
        finished = True
        if self._runner is not None:
            done, _ = await asyncio.wait({self._runner}, timeout=timeout)
            if not done:
                finished = False
                self._runner.cancel()
                try:
                    await self._runner
                except (asyncio.CancelledError, Exception):
                    pass
        if self.config["tracing.enabled"]:
            await asyncio.to_thread(flush_spans)  # the spans of the last commits, before the process may exit
        if self._otlp_metrics is not None:
            await asyncio.to_thread(self._otlp_metrics.close)
        if self._state is not State.ERROR:  # a failed client stays in ERROR, as in Kafka Streams
            self._set_state(State.NOT_RUNNING)
        return finished

    def clean_up(self) -> None:
        """Wipe this instance's local state directory (`<state.dir>/<application.id>`), as Kafka Streams'
        `cleanUp()`: the next start restores every store from its changelog. Only before `start()` or
        after `close()`; `streamlet reset` calls it for the application reset."""
        if self._state not in (State.CREATED, State.NOT_RUNNING, State.ERROR):
            raise StreamsError(f"clean_up() needs a client that is not running, not {self._state.name}")
        clean_up(self.config)
        ensure_state_directory(state_root(self.config, self.config.application_id))  # ready for start()

    async def wait(self) -> None:
        """Wait until the client stops (closed, or failed)."""
        if self._runner is not None:
            await asyncio.shield(self._runner)

    async def __aenter__(self) -> KafkaStreams:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # -- interactive queries --------------------------------------------------------------------------
    def store(self, parameters: StoreQueryParameters | str
              ) -> ReadOnlyKeyValueView | ReadOnlyWindowView | ReadOnlySessionView | ReadOnlyVersionedView:
        """A read-only view of this instance's copies of a store (Kafka Streams' `store()`).

        Pass `StoreQueryParameters.from_name_and_type(name, QueryableStoreTypes.key_value_store())` (or
        another type; `.enable_stale_stores()`, `.with_partition(p)`). A bare store name gives the view
        of the store's own type with values as stored (`ValueAndTimestamp` for timestamped stores), as
        earlier versions did. The view looks its copies up at every call, so it outlives rebalances;
        a call raises `StateStoreMigratedError` while the store is moving (retry, or ask for stale stores)."""
        if isinstance(parameters, str):
            builder = self.topology.store_builders.get(parameters)
            own = native_store_type(builder) if builder is not None else QueryableStoreTypes.key_value_store()
            parameters = StoreQueryParameters.from_name_and_type(parameters, own)
        name = parameters.store_name
        if name not in self.topology.store_builders:
            raise UnknownStateStoreError(
                f"cannot get state store {name!r} because no such store is registered in the topology")
        if self._state is State.CREATED:
            raise StreamsNotStartedError(f"store {name!r} cannot be queried before start() (state CREATED)")
        if not self._state.is_running_or_rebalancing():
            raise StateStoreNotAvailableError(f"store {name!r} is not available: the client is {self._state.name}")
        kind = parameters.queryable_store_type.kind
        provider = StoreProvider(parameters, lambda: self._state.name,
                                 lambda: local_copies(self._supervisor, name))
        if kind == "session":
            return ReadOnlySessionView(provider)
        if kind == "versioned":
            return ReadOnlyVersionedView(provider)
        return ReadOnlyWindowView(provider) if kind == "window" else ReadOnlyKeyValueView(provider)

    def query(self, request: StateQueryRequest) -> StateQueryResult:
        """Answer an IQv2 query from this instance's copies of a store (Kafka Streams' `query()`).

        Every local copy of a partition the request asks for answers with its own `QueryResult`: active
        copies, and (unless `require_active()`) copies still restoring and standbys, an active copy
        preferred where both exist. A partition asked for that this instance lacks answers
        `NOT_PRESENT`. A global store answers `global_result` with `UNKNOWN_QUERY_TYPE`, as Kafka
        Streams' does (query it with `store()`). Raises `UnknownStateStoreError` for a store the
        topology lacks, `StreamsNotStartedError` before `start()`, `StreamsStoppedError` once closing."""
        name = request.store_name
        if name not in self.topology.store_builders:
            raise UnknownStateStoreError(
                f"Cannot get state store {name} because no such store is registered in the topology.")
        if self._state is State.CREATED:
            raise StreamsNotStartedError(f"KafkaStreams has not been started, you can retry after calling start(); "
                                         f"state is {self._state.name}")
        if not self._state.is_running_or_rebalancing():
            raise StreamsStoppedError(f"KafkaStreams has been stopped ({self._state.name}). This instance can no "
                                      "longer serve queries.")
        result = StateQueryResult()
        running = self._state is State.RUNNING
        for copy in local_copies(self._supervisor, name):
            if copy.partition < 0:
                result.set_global_result(QueryResult.for_failure(
                    FailureReason.UNKNOWN_QUERY_TYPE,
                    "Global stores do not yet support the KafkaStreams#query API. Use KafkaStreams#store instead."))
                return result
            if (request.partitions is not None and copy.partition not in request.partitions) \
                    or copy.partition in result.partition_results:
                continue
            active = copy.role == "active"
            if request.active_only and not (active and running):
                result.add_result(copy.partition, QueryResult.for_failure(
                    FailureReason.NOT_ACTIVE,
                    f"Query requires a running active task, but partition was in state "
                    f"{'RUNNING' if running else self._state.name} and was {'active' if active else 'not active'}."))
                continue
            fold_position(copy.store)
            # As Kafka Streams: an active copy of a running client is as current as any, so its bound is moot.
            bound = PositionBound.unbounded() if request.active_only else request.position_bound
            result.add_result(copy.partition, run_query(copy.store, request.query, bound, copy.partition))
        for partition in sorted(request.partitions or ()):
            if partition not in result.partition_results:
                result.add_result(partition, QueryResult.for_failure(
                    FailureReason.NOT_PRESENT, "The requested partition was not present at the time of the query."))
        return result

    def _metadata(self) -> MetadataView:
        """The last assignment's host map over this topology; empty before the first assignment."""
        if self._state is State.CREATED:
            raise StreamsNotStartedError("streams metadata is known only after start()")
        sup = self._supervisor
        hosts = sup.view.hosts if sup is not None else None
        if sup is None or hosts is None:
            return MetadataView(self.topology, (), str, {})
        return MetadataView(self.topology, hosts, sup.resolve_topic, sup.view.partition_counts)

    def metadata_for_all_streams_clients(self) -> list[StreamsMetadata]:
        """Every instance of the application that set `application.server`: its endpoint, and the
        stores and partitions it hosts actively and as standbys (from the last assignment)."""
        return self._metadata().all_clients()

    def streams_metadata_for_store(self, store_name: str) -> list[StreamsMetadata]:
        """The instances hosting `store_name`, actively or as a standby."""
        return self._metadata().for_store(store_name)

    def query_metadata_for_key(self, store_name: str, key: Any,
                               serializer: Serializer[Any] | Serde[Any]) -> KeyQueryMetadata:
        """Which instance holds `key` of `store_name` (active host, standby hosts, partition), with the
        key serialized by `serializer` (or a Serde's serializer) as the store's input is partitioned.
        `KeyQueryMetadata.not_available()` while no assignment with endpoints is known."""
        return self._metadata().for_key(store_name, key, serializer)

    @property
    def application_server(self) -> HostInfo | None:
        """This instance's `application.server`, or None when unset."""
        endpoint = str(self.config.get("application.server") or "")
        return HostInfo.parse(endpoint) if endpoint else None

    @property
    def metrics(self) -> dict[str, Any]:
        """Totals of this instance since `start()`: its tasks, records processed, skipped,
        dead-lettered, sent and restored, commits, dirty recoveries, lost memberships and standby
        work (empty before `start()`)."""
        sup = self._supervisor
        if sup is None or sup.tasks is None:
            return {}
        actors = sup.tasks.actors.values()
        return {
            "tasks": sorted(a.task_id for a in actors),
            "records-processed": sum(a.task.processed for a in actors),
            # Not processed and not dead-lettered: negative timestamps and records a handler skipped.
            "records-skipped": sum(a.task.partition_group.skipped - a.task.errors.counts.deserialization_dead_lettered
                                   + a.task.errors.counts.processing_skipped for a in actors),
            "records-dead-lettered": sum(a.task.errors.counts.dead_lettered for a in actors),
            "records-sent": sup.commit_protocol.records_sent if sup.commit_protocol else 0,
            "records-dropped-by-production-handler": (sup.commit_protocol.records_dropped if sup.commit_protocol else 0)
            + sum(a.task.errors.counts.production_dropped for a in actors),
            "records-restored": sup.tasks.reader.total_restored,
            "commits": sup.view.commits,
            "dirty-recoveries": sup.view.dirty_recoveries,
            "lost-memberships": sup.view.lost_memberships,
            # Times a partition was paused because its task held buffered.records.per.partition records.
            "partitions-paused-for-full-queue": sup.view.full_queue_pauses,
            "standby-tasks": sorted(str(t) for t in sup.standbys.tasks) if sup.standbys else [],
            "standby-records-applied": sup.standbys.applied if sup.standbys else 0,
        }


def _config_in_force(config: StreamsConfig) -> str:
    """Every setting with the value in force (defaults resolved, secrets hidden), one per line, as
    Kafka Streams logs its `StreamsConfig values:` at start-up: what the app really runs with."""
    values = redact(config)
    return "StreamsConfig values:" + "".join(f"\n\t{key} = {values[key]}" for key in sorted(values))
