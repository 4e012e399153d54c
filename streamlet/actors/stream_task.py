"""`StreamTask`: one sub-topology instantiated for one partition — the synchronous core of a task.

Everything here is plain synchronous Python: adding a consumed batch, processing buffered records,
punctuating, flushing for a commit. The async `TaskActor` (and the test driver) drive it; no method
here awaits, so the hot loop never yields per record and the same core serves every engine.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Any, Final

from streamlet.actors.error_handlers import RecordErrorHandler
from streamlet.actors.held_output import HeldOutput, HeldWrite
from streamlet.actors.node_graph import build_nodes
from streamlet.actors.partition_group import ConsumedRecord, PartitionGroup, with_origin
from streamlet.actors.processor_node import Node, ProcessorNode, SinkNode, SourceNode, failed_node, mark_failed
from streamlet.actors.punctuation_queue import PunctuationQueue, PunctuationSchedule, first_punctuation
from streamlet.actors.record_collector import RecordCollector
from streamlet.actors.state_manager import ProcessorStateManager
from streamlet.actors.task_progress import CarriesProgress, CommitTimes, TaskProgress
from streamlet.config import RETRY_BACKOFF, RETRY_BACKOFF_MAX, StreamsConfig
from streamlet.error_remedies import PROCESSING_REMEDY
from streamlet.errors import RetriableError, SinkSerializationError, StateStoreCorruptedError, StreamsError
from streamlet.processor import Cancellable, PunctuationType
from streamlet.record import Record
from streamlet.stores.api import RecordContext, StateStore, StoreBuilder
from streamlet.stores.cache import SharedCacheBudget
from streamlet.stores.position import fold_position
from streamlet.telemetry.tracing import TaskTracing, tracer_for
from streamlet.topology import SubTopology, Topology

_new: Final = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)
_RecordContext: Final = RecordContext  # Final: a C static when compiled, not a dict look-up per use
_record_ctx_of = attrgetter("record_ctx")

log = logging.getLogger(__name__)

NO_PUNCTUATION = sys.maxsize
EMPTY_CONTEXT = RecordContext(-1, (), None, -1, -1)


def task_id_str(subtopology: int, partition: int) -> str:
    return f"{subtopology}_{partition}"


def caching_stores(topology: Topology, store_names: Iterable[str]) -> list[str]:
    """The stores among `store_names` built with a record cache: they share the task's cache budget."""
    builders = topology.store_builders
    return [name for name in store_names if getattr(builders.get(name), "caching_enabled", False)]


def _build_store(builder: StoreBuilder) -> StateStore:
    return builder.build()


class StreamTask:
    record_lateness = False
    """Whether to measure Kafka Streams' record lateness (its metrics record it at DEBUG level only): the stream
    time minus the timestamp of each record taken at or behind it, summed in `lateness_sum` (an in-order
    record's lateness is 0, so the average is the sum over `processed`), the largest since the metrics last
    read it in `lateness_max`. Measured per run, in a pass over the run's timestamps before it is processed,
    so the per-record loop pays nothing for it. Class-level defaults, which a task sets on itself only at DEBUG
    level: as instance attributes set in `__init__` the three cost WordCount's pure-Python hot path 0.4% more
    instructions per line (benchmarks.hot_path under callgrind), though the loop never touched them."""
    lateness_sum = 0
    lateness_max = 0
    held_output: HeldOutput | None = None
    """Records a sink could not serialize while the schema registry could not be reached, waiting for their
    retry (`streamlet.actors.held_output`); the task takes no record meanwhile. None almost always: a
    class-level default, as `tracing`."""
    tracing: TaskTracing | None = None
    """The task's spans (`tracing.enabled`): set on a task only when enabled, so that an untraced task's loop
    checks it once per run of records and never per record."""

    def __init__(
        self,
        topology: Topology,
        subtopology: SubTopology,
        partition: int,
        config: StreamsConfig,
        collector: RecordCollector,
        state_root: Path,
        clock: Callable[[], int],
        resolve_topic: Callable[[str], str],
        cache_bytes: int,
        open_store: Callable[[StoreBuilder], StateStore] | None = None,
        task_id: str | None = None,
        shared_cache: SharedCacheBudget | None = None,
    ) -> None:
        self.topology = topology
        self.subtopology = subtopology
        self.partition = partition
        self.task_id = task_id or task_id_str(subtopology.id, partition)  # "global" for the global stores
        self.config = config
        self.application_id = config.application_id
        self.collector = collector
        self.clock = clock
        self._open_store = open_store or _build_store
        """Turns a store builder into the task's store: the builder's own backend, or an engine's."""
        self.commit_requested = False
        self.record_ctx: RecordContext = EMPTY_CONTEXT
        self.current_raw: Any = None
        """The consumed record being processed, whose bytes go to the error handlers' context. As in Kafka
        Streams 4.4, a sink lets it go once it serialized a record (`RecordCollectorImpl` frees the raw record
        from the record context): errors after that, under the same record context, have no bytes; a
        forward under a new record context (another timestamp or headers) gets them back when it returns."""
        self._raw_from: tuple[str | None, int] = (None, -1)
        """The topic and partition of `current_raw`."""
        self.consumed_offsets: dict[tuple[str, int], int] = {}
        self.processed = 0
        self.punctuations = 0
        """Punctuations run (Kafka Streams' punctuate-total); `punctuate_ns` their time, `punctuate_max_ns` the
        longest since the metrics last read it."""
        self.punctuate_ns = 0
        self.punctuate_max_ns = 0
        self._stream_queue = PunctuationQueue()
        self._wall_queue = PunctuationQueue()
        self._next_stream_punct = NO_PUNCTUATION
        self._next_stream_punct_held = NO_PUNCTUATION  # `_next_stream_punct` while output is held
        self.processor_metadata: dict[str, int] = {}
        """Kafka Streams' task-wide `ProcessorMetadata`: kept by processors (an `on_window_close`
        aggregation's last emit, under its store's name), committed with the offsets (see `CommitTimes`)."""

        # The caching stores share the task's cache: an equal part each, or all of a budget shared with
        # other tasks' stores (`shared_cache`, the driver's one cache, as Kafka Streams' driver has).
        n_stores = 1 if shared_cache is not None else max(1, len(caching_stores(topology, subtopology.stores)))
        self.state = ProcessorStateManager(
            self.application_id, self.task_id, partition, config, state_root / self.task_id, collector,
            record_context=partial(_record_ctx_of, self),  # no Python frame: stores ask per write
            set_record_context=partial(setattr, self, "record_ctx"),  # no Python frame: a cache flush sets it
            cache_budget=lambda _name: cache_bytes // n_stores,
            shared_cache=shared_cache,
        )
        self.state.on_uncommitted_full = partial(setattr, self, "commit_requested", True)
        self.nodes: dict[str, Node] = {}
        self.sources_by_topic: dict[str, SourceNode] = {}
        build_nodes(self, resolve_topic)
        self.stores: dict[str, StateStore] = {}
        self.global_stores: Mapping[str, StateStore] = {}
        """The instance's global stores (the runtime sets them before `initialize_processors`)."""
        self.errors = RecordErrorHandler(config, self.task_id, collector,
                                         is_global=subtopology.id < 0)  # the global task's group
        self.partition_group = PartitionGroup(self.sources_by_topic, self.errors.on_deserialization_error)
        self.partition_group.retry_backoff_ms = int(config.get(RETRY_BACKOFF, 100))
        self.partition_group.retry_backoff_max_ms = int(config.get(RETRY_BACKOFF_MAX, 1000))
        self.partition_group.retry_timeout_ms = int(config.get("task.timeout.ms", 300000))
        tracer = tracer_for(config)
        if tracer is not None:
            self.tracing = TaskTracing(tracer, self.task_id, self.application_id,
                                       float(config["tracing.root.sample.ratio"]))

    # -- lifecycle ----------------------------------------------------------------------------------
    def initialize_stores(self) -> None:
        """Build and open this task's stores; they register with the state manager for restoration.

        A store whose files cannot be trusted does not stop the task: as Kafka Streams does on a
        `TaskCorruptedException`, the task's whole local state and its checkpoint are wiped, and the
        stores open empty; without a checkpoint the changelog reader then restores them from the
        start of their changelogs. One checkpoint covers every store of the task, which is why the
        whole task directory goes, not just the damaged store."""
        try:
            self._open_stores()
        except StateStoreCorruptedError as exc:
            log.warning("task %s: %s; wiping the task's local state in %s and its checkpoint, and rebuilding "
                        "its stores from their changelogs", self.task_id, exc, self.state.task_dir)
            self.state.forget_stores()
            self.stores.clear()
            self.state.wipe_local_state()
            self._open_stores()

    def _open_stores(self) -> None:
        vouched = self.state.read_checkpoint()
        for store_name in self.subtopology.stores:
            store_dir = self.state.task_dir / store_name
            existed = store_dir.exists()
            store = self._open_store(self.topology.store_builders[store_name])
            store.init(self.state)
            self.stores[store_name] = store
            changelog = self.state.changelog_partitions().get(store_name)
            if changelog is None or not store.persistent or existed:
                continue
            offset = vouched.get(f"{changelog[0]}:{changelog[1]}")
            if offset is not None:
                # Opening created an empty store where the checkpoint vouches for content: restoring
                # from the checkpointed offset would lose everything before it.
                raise StateStoreCorruptedError(
                    store_name, store_dir,
                    f"its directory is missing but the checkpoint says it holds its changelog up to offset {offset}")

    def initialize_processors(self) -> None:
        """Call `init` on every processor, sinks first, as Kafka Streams inits children before parents."""
        for name in reversed(self.subtopology.nodes):
            self.nodes[name].init()

    def close(self, clean: bool, keep_stores_open: bool = False) -> None:
        """Close processors and stores; a clean close flushes first, a dirty one drops pending output.
        `keep_stores_open`: the stores are closed by the caller (`state.close()`) once the close's
        commit is done, which under exactly-once is what writes their staged writes."""
        try:
            if clean:
                self.state.flush()
                self.state.sync()  # the checkpoint written after the close's commit vouches for these
            for node in self.nodes.values():
                try:
                    node.close()
                except Exception:
                    if clean:
                        raise
                    log.exception("task %s: error closing node %s during a dirty close", self.task_id, node.name)
        finally:
            if not keep_stores_open:
                self.state.close()
            self.partition_group.clear()

    # -- input --------------------------------------------------------------------------------------
    def add_records(self, topic: str, partition: int, records: Iterable[ConsumedRecord]) -> int:
        return self.partition_group.add_records(topic, partition, records)

    @property
    def buffered(self) -> int:
        return self.partition_group.buffered

    @property
    def stream_time(self) -> int:
        return self.partition_group.stream_time

    # -- processing ---------------------------------------------------------------------------------
    def process(self, max_records: int = sys.maxsize) -> int:
        """Process up to `max_records` buffered records, punctuating on stream time as it advances.

        Records come in runs from one partition (see `PartitionGroup.next_run`); each run goes through
        one tight loop. Partition and stream time advance per record, before the record is processed,
        so processors and stream-time punctuations see exactly what per-record merging would show."""
        pg = self.partition_group
        offsets = self.consumed_offsets
        lateness = self.record_lateness
        tracing = self.tracing
        n = 0
        while n < max_records and not self._holds_output():
            taken = pg.next_run(max_records - n)
            if taken is None:
                break
            queue, run = taken
            topic, partition = queue.topic, queue.partition
            source = queue.source
            process = source.deliver
            if tracing is not None:
                process = tracing.delivery(self, topic, partition, process)
            self._raw_from = (topic, partition)
            done = 0
            if lateness:
                self._measure_lateness(run, pg.stream_time)
            try:
                for record, offset, raw in run:
                    ts = record.timestamp
                    if ts > queue.partition_time:
                        queue.partition_time = ts
                    if ts > pg.stream_time:
                        pg.stream_time = ts
                    self.record_ctx = _new(_RecordContext, (ts, record.headers, topic, partition, offset))
                    self.current_raw = raw
                    try:
                        process(record)
                    except Exception as exc:
                        self._escaped(exc, source, record, offset)
                    n += 1
                    done += 1
                    if pg.stream_time >= self._next_stream_punct:  # also when output is held (`_hold_write`)
                        if not self._holds_output():
                            self.maybe_punctuate_stream_time()
                        if self._holds_output():
                            pg.give_back(queue, run[done:])
                            break
            finally:
                if done:
                    offsets[(topic, partition)] = run[done - 1][1] + 1
                self.fold_positions()
        self.processed += n
        return n

    # -- output held while the schema registry cannot be reached (`streamlet.actors.held_output`) --------
    def _holds_output(self) -> bool:
        """Whether output is held. A call, not `self.held_output is None` in `process`: mypy would narrow the
        attribute to None there, and mypyc's compiled code then refuses the held output a sink sets meanwhile."""
        return self.held_output is not None

    def _hold_write(self, sink: SinkNode, topic: str, record: Record, key: bytes | None, key_done: bool,
                    error: RetriableError) -> None:
        """`sink` could not serialize `record` for `topic` for want of the schema registry: hold it where it
        stands in the output, and stop taking records after the one being processed."""
        if self.held_output is None:
            # (No local narrowed to None and then assigned: mypyc's compiled code refuses that assignment.)
            pg = self.partition_group
            self.held_output = HeldOutput(error, pg.now_ms(), pg.retry_backoff_ms, pg.retry_backoff_max_ms,
                                          pg.retry_timeout_ms)
            self._next_stream_punct_held = self._next_stream_punct
            self._next_stream_punct = -1  # the per-record check in `process` stops after this record
            ctx = self.record_ctx
            log.warning("task %s: waiting to write to topic %r (the record at %s-%s offset %s): %s; no record is "
                        "skipped or handed to the production exception handler, retrying for up to "
                        "task.timeout.ms (%d ms)", self.task_id, topic, ctx.topic, ctx.partition, ctx.offset, error,
                        pg.retry_timeout_ms)
        held = self.held_output
        assert held is not None
        collector = self.collector
        held.writes.append(HeldWrite(sink, topic, record, self.record_ctx, key, key_done, collector.buffer_marks(),
                                     collector.deferred_count()))

    def hold_unavailable_writes(self) -> None:
        """Have the sinks hold a record they cannot serialize for want of the schema registry instead of
        failing (an owner that calls `release_held_output` before it takes the output: the `TaskActor`)."""
        for node in self.nodes.values():
            if isinstance(node, SinkNode):
                node.on_unavailable = self._hold_write

    def release_held_output(self) -> bool:
        """Serialize the held records again and put them in their places in the output; True when done (the
        task takes records again), False when the registry still cannot be reached (`held_output.retry_at`
        says when to try next). Raises the error once it has lasted `task.timeout.ms`, or a record's own
        serialization error that the production handler failed on."""
        held = self.held_output
        if held is None:
            return True
        saved = self.record_ctx
        try:
            held.serialize(self._judge_held)
        except RetriableError as exc:
            held.failed_again(exc, self.partition_group.now_ms())
            return False
        finally:
            self.record_ctx = saved
        held.place(self.collector)
        self.held_output = None
        self._next_stream_punct = self._next_stream_punct_held
        log.info("task %s: writing again after %d ms: %s is over", self.task_id,
                 self.partition_group.now_ms() - held.since, type(held.error).__name__)
        if self.partition_group.stream_time >= self._next_stream_punct:
            self.maybe_punctuate_stream_time()  # the one due at the record the task stopped after
        return True

    def _judge_held(self, write: HeldWrite, exc: Exception) -> bool:
        """A held record's serializer reached the registry and failed for the record's own reason: the
        production handler decides, in the record's context, as the sink would have asked it."""
        self.record_ctx = write.context
        error = write.sink.serialization_error(write.topic, write.record, exc)
        if write.sink.handled(error):
            return True
        raise error

    def _measure_lateness(self, run: list[Any], stream_time: int) -> None:
        """Record lateness of the records of `run`, about to be taken from stream time `stream_time` on."""
        total = most = 0
        for record, _offset, _raw in run:
            ts = record.timestamp
            if ts > stream_time:
                stream_time = ts
            elif ts < stream_time:
                late = stream_time - ts
                total += late
                if late > most:
                    most = late
        self.lateness_sum += total
        if most > self.lateness_max:
            self.lateness_max = most

    # -- punctuation --------------------------------------------------------------------------------
    def schedule(self, node: ProcessorNode, interval: int, kind: PunctuationType, callback: Any,
                 start: int | None = None) -> Cancellable:
        """A punctuation of `node`; `start` (epoch ms) anchors it (KIP-1146): first due at `start`, or at the
        first `start + k * interval` after now when `start` has passed on the punctuation's clock."""
        if start is not None and start < 0:
            raise ValueError(f"a punctuation cannot start before the epoch, got {start}")
        if kind is PunctuationType.STREAM_TIME:
            first = 0 if start is None else first_punctuation(start, interval, self.partition_group.stream_time)
            sched = self._stream_queue.schedule(node, interval, callback, first)
            self._next_stream_punct = min(self._next_stream_punct, first)
            return sched
        if kind is PunctuationType.WALL_CLOCK_TIME:
            now = self.clock()
            first = now + interval if start is None else first_punctuation(start, interval, now)
            return self._wall_queue.schedule(node, interval, callback, first)
        raise ValueError(f"unknown punctuation type {kind!r}")

    def fold_positions(self) -> None:
        """Fold each store's last write into its `position` (see `streamlet.stores.position`): at the end
        of a run of one partition's records, around punctuations, after a flush and before a query."""
        for store in self.stores.values():
            fold_position(store)

    def _punctuate(self, sched: PunctuationSchedule, now: int) -> None:
        self.fold_positions()
        saved = self.record_ctx
        self.record_ctx = RecordContext(now, (), None, -1, -1)
        started = time.perf_counter_ns()
        try:
            if self.tracing is None:
                sched.callback(now)
            else:
                self.tracing.punctuate(self, sched.node.name, now, sched.callback)
        except Exception as exc:
            # What escapes the punctuator itself is its node's error (Kafka Streams' `StreamTask.punctuate`);
            # its children's errors were handled at them, on the way.
            try:
                self._on_node_error(sched.node, None, exc)
            except Exception as failure:
                failure.add_note(f"in a punctuation of processor {sched.node.name!r} in task {self.task_id} at {now}")
                raise
        finally:
            self.record_ctx = saved
            self.fold_positions()  # a punctuator's writes have no input offset: they count for nothing
            elapsed = time.perf_counter_ns() - started
            self.punctuations += 1
            self.punctuate_ns += elapsed
            if elapsed > self.punctuate_max_ns:
                self.punctuate_max_ns = elapsed

    def _escaped(self, exc: Exception, source: SourceNode, record: Record, offset: int) -> None:
        """`exc` escaped the source node while it delivered `record`. When the source calls its only child
        directly, the error is that child's (`Node.failed`: returns when the handler resumed); otherwise it
        comes from a sink under the source or a handler that failed, and fails the task."""
        try:
            child = source.direct_child
            if child is None or failed_node(exc) is not None:
                raise exc
            child.failed(record, exc)
        except Exception as failure:
            if not isinstance(failure, StreamsError):
                ctx = self.record_ctx
                failure.add_note(f"while task {self.task_id} processed the record at topic {ctx.topic} "
                                 f"partition {ctx.partition} offset {offset}")
                failure.add_note(PROCESSING_REMEDY)
            raise

    def _on_node_error(self, node: ProcessorNode, record: Record | None, exc: Exception) -> None:
        """`exc` escaped `node` while it processed `record` (None: in a punctuation): returns when the
        processing handler resumed; raises `exc` marked as failed at `node` otherwise (Kafka Streams'
        `FailedProcessingException`). A sink's serialization error the production handler failed on is
        this node's processing error (Kafka Streams raises it as a `StreamsException`); streamlet's other
        errors are not the application's and always fail, as do errors a handler already failed on."""
        if failed_node(exc) is not None:
            raise exc
        if isinstance(exc, StreamsError) and not isinstance(exc, SinkSerializationError):
            raise exc
        ctx = self.record_ctx
        if record is not None:  # the failing node's record: its time and headers (Kafka Streams' forward sets them)
            ctx = ctx._replace(timestamp=record.timestamp, headers=record.headers)
        raw = self._raw_at(ctx)
        try:
            handled = self.errors.on_processing_error(ctx, raw, record, node.name, exc)
        except Exception as failure:  # the handler itself raised
            mark_failed(failure, node.name)
            raise
        if handled:
            return
        mark_failed(exc, node.name)
        raise exc

    def _on_serialization_error(self, exc: SinkSerializationError) -> bool:
        """A sink cannot serialize its record: the production handler decides (True: dropped, go on)."""
        ctx = self.record_ctx
        return self.errors.on_production_error(ctx, self._raw_at(ctx), exc)

    def _raw_at(self, ctx: RecordContext) -> ConsumedRecord | None:
        """The consumed record `ctx` is about, when it is the one being processed (not, say, a cached
        entry's that a flush forwards): its bytes are what a dead-letter record carries."""
        raw = self.current_raw
        if raw is None or ctx.topic is None or raw.offset != ctx.offset or self._raw_from != (ctx.topic, ctx.partition):
            return None
        return with_origin(raw, ctx.topic, ctx.partition)

    def maybe_punctuate_stream_time(self) -> bool:
        st = self.partition_group.stream_time
        if st == -1:
            return False
        fired = self._stream_queue.may_punctuate(st, self._punctuate)
        due = self._stream_queue.next_due()
        self._next_stream_punct = NO_PUNCTUATION if due is None else due
        return fired

    def maybe_punctuate_wall_clock(self, now: int | None = None) -> bool:
        return self._wall_queue.may_punctuate(self.clock() if now is None else now, self._punctuate)

    def next_wall_clock_due(self) -> int | None:
        return self._wall_queue.next_due()

    # -- progress outside the stores ---------------------------------------------------------------------
    def progress(self) -> TaskProgress:
        """What a task knows besides its stores: stream and partition times, when each punctuation is
        next due, the null-key round robin. An engine that builds the task afresh for every batch (the
        Spark engine) keeps this with the task's state and hands it to `resume` next time."""
        pg = self.partition_group
        return TaskProgress(
            stream_time=pg.stream_time,
            partition_times={f"{t}:{p}": q.partition_time for (t, p), q in pg.queues().items()},
            stream_punctuations=self._stream_queue.next_times(),
            wall_punctuations=self._wall_queue.next_times(),
            round_robin=self.collector.round_robin_positions(),
            processors={name: node.processor.carried_progress() for name, node in self.nodes.items()
                        if isinstance(node, ProcessorNode) and isinstance(node.processor, CarriesProgress)},
            processor_metadata=dict(self.processor_metadata),
        )

    def resume(self, progress: TaskProgress) -> None:
        """Continue from `progress` (call after `initialize_processors`, whose `schedule` calls it matches
        in order; schedules made later, outside `init`, are not carried over)."""
        pg = self.partition_group
        pg.stream_time = progress.stream_time
        for tp, partition_time in progress.partition_times.items():
            topic, _, partition = tp.rpartition(":")
            pg.queue_for(topic, int(partition)).partition_time = partition_time
        self._stream_queue.restore_next_times(progress.stream_punctuations)
        self._wall_queue.restore_next_times(progress.wall_punctuations)
        due = self._stream_queue.next_due()
        self._next_stream_punct = NO_PUNCTUATION if due is None else due
        self.collector.restore_round_robin(progress.round_robin)
        self._set_processor_metadata(progress.processor_metadata)
        for name, carried in progress.processors.items():
            node = self.nodes.get(name)
            if isinstance(node, ProcessorNode) and isinstance(node.processor, CarriesProgress):
                node.processor.resume_progress(carried)

    def commit_times(self) -> CommitTimes:
        """What is committed with the offsets besides them: partition times and processor metadata."""
        return CommitTimes({tp: q.partition_time for tp, q in self.partition_group.queues().items()},
                           dict(self.processor_metadata))

    def restore_times(self, committed: CommitTimes) -> None:
        """Continue from what was committed (Kafka Streams' `initializeTaskTimeAndProcessorMetadata`): each
        partition's time, stream time the largest of them, and the processor metadata. Processors keep
        times of their own (a windowed aggregation's observed stream time), which start again, as there."""
        pg = self.partition_group
        for (topic, partition), partition_time in committed.partition_times.items():
            if partition_time == -1:
                continue
            pg.queue_for(topic, partition).partition_time = partition_time
            if partition_time > pg.stream_time:
                pg.stream_time = partition_time
        self._set_processor_metadata(committed.processor_metadata)

    def _set_processor_metadata(self, entries: Mapping[str, int]) -> None:
        """Replace the processor metadata in place: processors hold the map from their `init` on."""
        self.processor_metadata.clear()
        self.processor_metadata.update(entries)

    # -- committing ---------------------------------------------------------------------------------
    def prepare_commit(self) -> dict[tuple[str, int], int]:
        """Flush the stores (caches forward and log their dirty entries); return offsets to commit."""
        self.current_raw = None  # a cache flush forwards with its entries' contexts, which keep no bytes
        self.state.flush()
        self.fold_positions()  # a cache flush writes with its entries' record contexts
        self.state.seal()  # exactly-once: the stores' writes so far belong to the transaction committed now
        self.commit_requested = False
        return dict(self.consumed_offsets)

    def post_commit(self, changelog_offsets: dict[tuple[str, int], int], enforce: bool = False,
                    generation: int | None = None) -> None:
        """After a successful commit: record how far the changelogs hold this task's state, when
        `enforce`d (a clean close) or once they moved far enough (`maybe_checkpoint`). Under exactly-once
        the stores first write the staged writes of the transactions up to `generation` (None: all) with
        their changelog offsets, and only a clean close writes the checkpoint file."""
        moved = {f"{topic}:{partition}": off for topic, partition in self.state.changelog_partitions().values()
                 if (off := changelog_offsets.get((topic, partition))) is not None}
        if self.config.exactly_once:
            self.state.commit_transactions(None if enforce else generation, moved)
            if not enforce:
                return
        self.state.maybe_checkpoint(moved, enforce)
