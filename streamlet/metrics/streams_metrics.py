"""`StreamsMetrics`: Kafka Streams' built-in metrics, by its names, groups and tags.

Groups and names as Kafka Streams reports them (so dashboards written for it work once the names are
in Prometheus form, see `prometheus`):

* `stream-thread-metrics` {thread-id}: process-rate/total, process-latency-avg/max, poll-rate/total,
  poll-latency-avg/max, poll-records-avg/max, poll-ratio, process-ratio, commit-rate/total,
  commit-latency-avg/max, commit-ratio, punctuate-rate/total, punctuate-latency-avg/max,
  punctuate-ratio, task-created-rate/total, task-closed-rate/total, thread-start-time,
  process-records-avg/max (records processed per poll-loop round), blocked-time-ns-total (time awaiting
  Kafka: polls and commits), state (text) and thread-state {process-id, thread-id} (KIP-1091: the
  member's state as Kafka Streams' StreamThread.State names it, and its ordinal; see `thread_state`). A
  "thread" is one group member: the client itself, or worker i of `streamlet run --workers N` (thread id
  `<client>-StreamThread-<i+1>`).
* `stream-metrics` {client-id} (the client): version, commit-id, application-id, topology-description,
  state (text), client-state, recording-level, alive-stream-threads, failed-stream-threads (Kafka Streams
  4.x's client level; see `_client_metrics`).
* `stream-task-metrics` {thread-id, task-id}: dropped-records-rate/total, active-process-ratio (the task's
  share of the member's processing time) (info); process-rate/total, process-latency-avg/max,
  punctuate-rate/total, punctuate-latency-avg/max, restore-rate/total (debug; Kafka Streams 4.x counts
  restoration per task), active-buffer-count, record-lateness-avg/max (stream time minus the timestamp
  of a record behind it), cache-size-bytes-total (the bytes in the task's key-value record caches),
  enforced-processing-rate/total (records processed without waiting any longer for an empty input partition,
  `max.task.idle.ms`; see `PartitionGroup.count_enforced`) (debug); restore-remaining-records-total (KIP-869:
  changelog records still to restore, also while the task restores) (info).
* `stream-topic-metrics` {thread-id, task-id, processor-node-id, topic} (info, KIP-846):
  records-consumed-total and bytes-consumed-total per source node and input topic,
  records-produced-total and bytes-produced-total per sink node and output topic (changelogs excluded),
  sizes reckoned as Kafka Streams does (see `topic_counters`).
* `stream-processor-node-metrics` {thread-id, task-id, processor-node-id}: record-e2e-latency-avg/min/max
  of each task's source node (info), the wall-clock time at processing minus the record timestamp.
* `stream-state-metrics` {thread-id, task-id, <type>-state-id} (debug): put-rate, put-latency-avg/max,
  get-rate, get-latency-avg, restore-rate of each key-value store (persistent stores are tagged
  `rocksdb-state-id`, the tag Kafka Streams gives the persistent store they stand in for), and
  restore-total, which Kafka Streams 4.x no longer has per store (it counts per task, above): kept under
  its old name because dashboards built on streamlet read it;
* `stream-record-cache-metrics` {thread-id, task-id, record-cache-id} (debug): hit-ratio-avg/min/max;
* `consumer-fetch-manager-metrics` {client-id, topic, partition}: records-lag of every assigned
  partition (the partition's high watermark minus the next offset handed to its task).

Latencies are in milliseconds. Per-record latencies are measured per batch (a batch's processing time
divided by its records, its first and last record's timestamps for end-to-end latency), so the
processing path pays a few additions per batch, never per record. `metrics.recording.level`
(INFO, DEBUG) chooses which are reported, as in Kafka Streams.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from streamlet.metrics.counters import ThreadCounters
from streamlet.metrics.sampler import Sampler, Snapshot
from streamlet.metrics.store_timing import StoreCounters, instrument_task, task_cache_bytes

_LEVELS = {"INFO": 0, "DEBUG": 1, "TRACE": 2}


@dataclass(frozen=True)
class MetricName:
    """Kafka's MetricName: name, group, and tags (sorted (key, value) pairs)."""

    name: str
    group: str
    tags: tuple[tuple[str, str], ...] = ()
    description: str = ""

    def tag(self, key: str) -> str | None:
        """One tag's value, or None."""
        return dict(self.tags).get(key)


@dataclass(frozen=True)
class HistoryPoint:
    """One second of the recent past: throughput, end-to-end latency, total lag."""

    at_ms: int
    process_rate: float
    e2e_latency_avg_ms: float
    lag: int


@dataclass(frozen=True)
class Metric:
    """One reading: its name, value, and whether it only grows (a Prometheus counter) or not. A gauge whose
    value is text in Kafka Streams (the client's `state`, `version`, `topology-description`, ...) has it in
    `text` (and `value` 0): Prometheus has no text samples, so `prometheus.render` leaves those out, as the
    JMX exporter leaves out Kafka Streams' string attributes."""

    name: MetricName
    value: float
    counter: bool = False
    text: str | None = None


def recording_level(config: Any) -> int:
    """`metrics.recording.level` as a rank (INFO < DEBUG < TRACE); unknown values are INFO."""
    return _LEVELS.get(str(config.get("metrics.recording.level") or "INFO").upper(), 0)


def thread_id(config: Any) -> str:
    """Kafka Streams' thread id: `<client id>-StreamThread-<n>`; n is the worker index + 1."""
    client = str(config.get("client.id") or "") or config.application_id
    worker = int(os.environ.get("STREAMLET_WORKER_INDEX", "0") or 0)
    return f"{client}-StreamThread-{worker + 1}"


class StreamsMetrics:
    """Reads the counters of one client's group member (see the module docstring).

    `supervisor` returns the current `Supervisor` (None before start); the sampler is fed from the
    poll loop (`maybe_sample`) and at every read."""

    def __init__(self, config: Any, supervisor: Callable[[], Any], client: Any = None) -> None:
        self.config = config
        self._client = client
        """The `KafkaStreams` client (its `state`, `failed_members`, `topology`) for `stream-metrics`."""
        self.level = recording_level(config)
        self.thread_id = thread_id(config)
        self._supervisor = supervisor
        self.sampler = Sampler(self._collect)
        # DEBUG level: per task id, its key-value stores' counters (see store_timing).
        self._stores: dict[str, dict[str, tuple[str, StoreCounters]]] = {}
        # The last 15 minutes, one point a second: what the live page charts.
        self.history: deque[HistoryPoint] = deque(maxlen=900)

    def _collect(self) -> tuple[Snapshot, Snapshot, Snapshot]:
        totals: Snapshot = {}
        maxima: Snapshot = {}
        minima: Snapshot = {}
        sup = self._supervisor()
        thread: ThreadCounters | None = getattr(sup, "counters", None)
        if thread is None:
            return totals, maxima, minima
        totals.update({"polls": thread.polls, "poll_ns": thread.poll_ns, "polled": thread.polled_records,
                       "commits": thread.commits, "commit_ns": thread.commit_ns, "iterations": thread.iterations})
        maxima.update({"poll_ns": thread.poll_max_ns, "commit_ns": thread.commit_max_ns,
                       "poll_records": thread.poll_records_max, "iteration_records": thread.iteration_records_max})
        thread.reset_extremes()
        if sup.tasks is not None:
            totals.update({"tasks_created": sup.tasks.tasks_created, "tasks_closed": sup.tasks.tasks_closed})
        processed = process_ns = punctuations = punctuate_ns = 0
        record_max = punctuate_max = 0.0
        tasks = sup.tasks
        for actor in (tasks.actors.values() if tasks is not None else ()):
            task, counters = actor.task, actor.counters
            key = task.task_id
            counts = task.errors.counts  # every record a handler let go, dead-lettered or not (Kafka Streams')
            dropped = (task.partition_group.skipped + counts.processing_skipped + counts.processing_dead_lettered
                       + counts.production_dropped)
            totals.update({(key, "processed"): task.processed, (key, "process_ns"): counters.process_ns,
                           (key, "dropped"): dropped, (key, "e2e_sum"): counters.e2e_sum_ms,
                           (key, "e2e_count"): counters.e2e_count})
            maxima.update({(key, "record_ns"): counters.max_record_latency_ns, (key, "e2e"): counters.e2e_max_ms})
            if counters.e2e_count and counters.e2e_min_ms != float("inf"):
                minima[(key, "e2e")] = counters.e2e_min_ms
            totals.update({(key, "punctuations"): task.punctuations, (key, "punctuate_ns"): task.punctuate_ns})
            totals[(key, "lateness")] = task.lateness_sum
            totals[(key, "enforced")] = task.partition_group.enforced
            maxima[(key, "lateness")] = task.lateness_max
            if task.lateness_max:
                task.lateness_max = 0
            maxima[(key, "punctuate_ns")] = task.punctuate_max_ns
            task.punctuate_max_ns = 0
            punctuations += task.punctuations
            punctuate_ns += task.punctuate_ns
            punctuate_max = max(punctuate_max, maxima[(key, "punctuate_ns")])
            processed += task.processed
            process_ns += counters.process_ns
            record_max = max(record_max, counters.max_record_latency_ns)
            counters.reset_extremes()
        live = {actor.task.task_id for actor in (tasks.actors.values() if tasks is not None else ())}
        for task_id in [t for t in self._stores if t not in live and tasks is not None
                        and not any(r[0].task_id == t for r in tasks.restoring.values())]:
            del self._stores[task_id]  # the task closed
        for task_id, stores in self._stores.items():
            for store, (_kind, c) in stores.items():
                key = (task_id, store)
                totals.update({(*key, "puts"): c.puts, (*key, "put_ns"): c.put_ns, (*key, "gets"): c.gets,
                               (*key, "get_ns"): c.get_ns, (*key, "hits"): c.cache_hits,
                               (*key, "lookups"): c.cache_hits + c.cache_misses})
                maxima[(*key, "put_ns")] = c.put_max_ns
                c.reset_extremes()
        if tasks is not None and self.level >= _LEVELS["DEBUG"]:
            restored: dict[Hashable, float] = {}
            for progress in tasks.reader.history:
                rkey = (progress.task_id, progress.store, "restored")
                restored[rkey] = restored.get(rkey, 0.0) + progress.restored
            totals.update(restored)
        totals.update({"processed": processed, "process_ns": process_ns,
                       "e2e_sum": sum(v for k, v in totals.items() if isinstance(k, tuple) and k[1] == "e2e_sum"),
                       "e2e_count": sum(v for k, v in totals.items() if isinstance(k, tuple) and k[1] == "e2e_count")})
        maxima["record_ns"] = record_max
        totals.update({"punctuations": punctuations, "punctuate_ns": punctuate_ns})
        maxima["punctuate_ns"] = punctuate_max
        return totals, maxima, minima

    def instrument(self, task: Any) -> None:
        """A new active task: at DEBUG level, time its stores and measure its records' lateness
        (Supervisor.on_task_created)."""
        if self.level >= _LEVELS["DEBUG"]:
            self._stores[task.task_id] = instrument_task(task)
            task.record_lateness = True
            # Only a task that may wait for one of several input partitions can go on without it: with -1 Kafka
            # Streams never idles, so it never records enforced processing either (`waits_for_fetches`).
            if task.partition_group.waits_for_fetches:
                task.partition_group.count_enforced = True

    def maybe_sample(self) -> None:
        """Called from the poll loop: a snapshot at most once a second, and a point of `history`."""
        if self.sampler.maybe_sample():
            s = self.sampler
            sup = self._supervisor()
            lag = sum(partition_lags(sup).values()) if sup else 0
            self.history.append(HistoryPoint(int(time.time() * 1000), s.rate("processed"),
                                             s.ratio("e2e_sum", "e2e_count"), lag))

    def metrics(self) -> list[Metric]:
        """Every metric the recording level allows, read now."""
        self.sampler.sample()
        sup = self._supervisor()
        found: list[Metric] = self._client_metrics()
        if getattr(sup, "counters", None) is None:
            return found
        s = self.sampler
        thread_tags = (("thread-id", self.thread_id),)

        def add(name: str, group: str, tags: tuple[tuple[str, str], ...], value: float, counter: bool = False,
                description: str = "") -> None:
            found.append(Metric(MetricName(name, group, tags, description), float(value), counter))

        t = "stream-thread-metrics"
        ms = 1e-6  # ns -> ms
        span_ns = s.seconds() * 1e9
        add("process-rate", t, thread_tags, s.rate("processed"), description="records processed per second")
        add("process-total", t, thread_tags, s.total("processed"), True, "records processed")
        add("process-latency-avg", t, thread_tags, s.ratio("process_ns", "processed", ms),
            description="average processing time of a record (ms)")
        add("process-latency-max", t, thread_tags, s.maximum("record_ns") * ms,
            description="longest average per-record time of one batch (ms)")
        add("poll-rate", t, thread_tags, s.rate("polls"), description="consumer polls per second")
        add("poll-total", t, thread_tags, s.total("polls"), True, "consumer polls")
        add("poll-latency-avg", t, thread_tags, s.ratio("poll_ns", "polls", ms), description="poll time (ms)")
        add("poll-latency-max", t, thread_tags, s.maximum("poll_ns") * ms, description="longest poll (ms)")
        add("poll-records-avg", t, thread_tags, s.ratio("polled", "polls"), description="records per poll")
        add("poll-records-max", t, thread_tags, s.maximum("poll_records"), description="most records one poll returned")
        add("poll-ratio", t, thread_tags, s.delta("poll_ns") / span_ns if span_ns else 0.0,
            description="fraction of time spent polling")
        add("process-ratio", t, thread_tags, s.delta("process_ns") / span_ns if span_ns else 0.0,
            description="fraction of time spent processing")
        add("commit-rate", t, thread_tags, s.rate("commits"), description="commits per second")
        add("commit-total", t, thread_tags, s.total("commits"), True, "commits")
        add("commit-latency-avg", t, thread_tags, s.ratio("commit_ns", "commits", ms), description="commit time (ms)")
        add("commit-latency-max", t, thread_tags, s.maximum("commit_ns") * ms, description="longest commit (ms)")
        add("commit-ratio", t, thread_tags, s.delta("commit_ns") / span_ns if span_ns else 0.0,
            description="fraction of time spent committing")
        add("thread-start-time", t, thread_tags, sup.counters.started_ms, description="start time (epoch ms)")
        add("process-records-avg", t, thread_tags, s.ratio("processed", "iterations"),
            description="records processed per poll-loop round")
        add("process-records-max", t, thread_tags, s.maximum("iteration_records"),
            description="most records processed in one poll-loop round")
        add("blocked-time-ns-total", t, thread_tags, sup.counters.blocked_ns, True,
            "time spent awaiting Kafka (polls and commits), in nanoseconds")
        found.extend(self._thread_state_metrics(sup))
        _punctuate_metrics(add, t, thread_tags, s, lambda what: what)
        add("punctuate-ratio", t, thread_tags, s.delta("punctuate_ns") / span_ns if span_ns else 0.0,
            description="fraction of time spent punctuating")
        add("task-created-total", t, thread_tags, s.total("tasks_created"), True, "active tasks created")
        add("task-created-rate", t, thread_tags, s.rate("tasks_created"), description="active tasks created per second")
        add("task-closed-total", t, thread_tags, s.total("tasks_closed"), True, "active tasks closed")
        add("task-closed-rate", t, thread_tags, s.rate("tasks_closed"), description="active tasks closed per second")
        tasks = sup.tasks
        found.extend(self._restore_remaining(tasks))
        for actor in sorted(tasks.actors.values() if tasks is not None else (), key=lambda a: a.task.task_id):
            task_id = actor.task.task_id
            tags = (("task-id", task_id), ("thread-id", self.thread_id))

            def key(what: str, task_id: str = task_id) -> Hashable:
                return (task_id, what)

            add("dropped-records-total", "stream-task-metrics", tags, s.total(key("dropped")), True,
                "records dropped: skipped by a handler, dead-lettered, or with an invalid timestamp")
            add("dropped-records-rate", "stream-task-metrics", tags, s.rate(key("dropped")),
                description="records dropped per second")
            all_tasks_ns = s.delta("process_ns")
            add("active-process-ratio", "stream-task-metrics", tags,
                s.delta(key("process_ns")) / all_tasks_ns if all_tasks_ns else 0.0,
                description="the task's share of the time the member spent processing its active tasks")
            if self.level >= _LEVELS["DEBUG"]:
                _punctuate_metrics(add, "stream-task-metrics", tags, s, key)
            if self.level >= _LEVELS["DEBUG"]:
                g = "stream-task-metrics"
                restored = [s.total((task_id, store, "restored")) for store in self._stores.get(task_id, {})]
                add("restore-total", g, tags, sum(restored), True, "records restored into the task's stores")
                add("active-buffer-count", g, tags, actor.task.buffered,
                    description="records polled for the task and not processed yet")
                add("restore-rate", g, tags, sum(s.rate((task_id, store, "restored"))
                                                 for store in self._stores.get(task_id, {})),
                    description="records restored per second")
                add("process-rate", g, tags, s.rate(key("processed")), description="records processed per second")
                add("process-total", g, tags, s.total(key("processed")), True, "records processed")
                add("process-latency-avg", g, tags, s.ratio(key("process_ns"), key("processed"), ms),
                    description="average processing time of a record (ms)")
                add("process-latency-max", g, tags, s.maximum(key("record_ns")) * ms,
                    description="longest average per-record time of one batch (ms)")
                add("cache-size-bytes-total", g, tags, task_cache_bytes(actor.task),
                    description="bytes held by the task's record caches")
                add("record-lateness-avg", g, tags, s.ratio(key("lateness"), key("processed")),
                    description="average lateness of the records (stream time minus record timestamp, ms)")
                add("record-lateness-max", g, tags, s.maximum(key("lateness")),
                    description="largest lateness of a record (stream time minus record timestamp, ms)")
                add("enforced-processing-total", g, tags, s.total(key("enforced")), True,
                    "records processed while an input partition had no data because max.task.idle.ms ran out")
                add("enforced-processing-rate", g, tags, s.rate(key("enforced")),
                    description="records processed per second while an input partition had no data")
            found.extend(self._topic_metrics(actor))
            source = next(iter(actor.task.sources_by_topic.values()), None)
            if source is not None:
                node_tags = (("processor-node-id", source.name), ("task-id", task_id), ("thread-id", self.thread_id))
                g = "stream-processor-node-metrics"
                add("record-e2e-latency-avg", g, node_tags, s.ratio(key("e2e_sum"), key("e2e_count")),
                    description="record timestamp to processing, average (ms)")
                add("record-e2e-latency-min", g, node_tags, s.minimum(key("e2e")), description="minimum (ms)")
                add("record-e2e-latency-max", g, node_tags, s.maximum(key("e2e")), description="maximum (ms)")
        for task_id, stores in sorted(self._stores.items()):
            for store, (kind, _counters) in sorted(stores.items()):
                state_tags = ((f"{kind}-state-id", store), ("task-id", task_id), ("thread-id", self.thread_id))
                g = "stream-state-metrics"
                base = (task_id, store)
                add("put-rate", g, state_tags, s.rate((*base, "puts")), description="puts (and deletes) per second")
                add("put-latency-avg", g, state_tags, s.ratio((*base, "put_ns"), (*base, "puts"), ms),
                    description="average put time (ms)")
                add("put-latency-max", g, state_tags, s.maximum((*base, "put_ns")) * ms, description="longest put (ms)")
                add("get-rate", g, state_tags, s.rate((*base, "gets")), description="gets per second")
                add("get-latency-avg", g, state_tags, s.ratio((*base, "get_ns"), (*base, "gets"), ms),
                    description="average get time (ms)")
                add("restore-total", g, state_tags, s.total((*base, "restored")), True, "records restored")
                add("restore-rate", g, state_tags, s.rate((*base, "restored")), description="restored per second")
                ratios = s.interval_ratios((*base, "hits"), (*base, "lookups"))
                if s.total((*base, "lookups")):
                    cache_tags = (("record-cache-id", store), ("task-id", task_id), ("thread-id", self.thread_id))
                    c = "stream-record-cache-metrics"
                    add("hit-ratio-avg", c, cache_tags, s.ratio((*base, "hits"), (*base, "lookups")),
                        description="share of gets the cache answered")
                    add("hit-ratio-min", c, cache_tags, min(ratios, default=0.0), description="lowest per second")
                    add("hit-ratio-max", c, cache_tags, max(ratios, default=0.0), description="highest per second")
        client_id = str(self.config.get("client.id") or "") or f"{self.config.application_id}-streamlet"
        for (topic, partition), lag in sorted(partition_lags(sup).items()):
            add("records-lag", "consumer-fetch-manager-metrics",
                (("client-id", client_id), ("partition", str(partition)), ("topic", topic)), lag,
                description="records in the partition not yet handed to its task")
        return found


    def _restore_remaining(self, tasks: Any) -> list[Metric]:
        """`restore-remaining-records-total` (INFO, KIP-869) of every active task, restoring or running: the
        changelog offsets still to restore into its stores, from where each changelog's restoration began up to
        its end offset then (0 before its end is known and once restored). Kafka Streams 4.4 counts down in
        offsets too (KAFKA-20711), so transaction markers and compacted gaps leave nothing behind."""
        if tasks is None:
            return []
        left = {task_id: remaining or 0 for task_id, (_restored, remaining) in tasks.reader.progress().items()}
        task_ids = sorted({task.task_id for task, _sender, _tps in tasks.restoring.values()}
                          | {actor.task.task_id for actor in tasks.actors.values()})
        return [Metric(MetricName("restore-remaining-records-total", "stream-task-metrics",
                                  (("task-id", task_id), ("thread-id", self.thread_id)),
                                  "changelog records still to restore into the task's stores"),
                       float(left.get(task_id, 0)))
                for task_id in task_ids]

    def _topic_metrics(self, actor: Any) -> list[Metric]:
        """`stream-topic-metrics` (KIP-846) of one task: records and bytes consumed per source node and topic,
        produced per sink node and topic (see `topic_counters`). Output whose sink is not known (dead letters)
        is not reported."""
        task, counters = actor.task, actor.topics
        found: list[Metric] = []
        g = "stream-topic-metrics"

        def add(node: str, topic: str, what: str, counts: list[int]) -> None:
            tags = (("processor-node-id", node), ("task-id", task.task_id), ("thread-id", self.thread_id),
                    ("topic", topic))
            found.append(Metric(MetricName(f"records-{what}-total", g, tags, f"records {what} (topic {topic})"),
                                float(counts[0]), True))
            found.append(Metric(MetricName(f"bytes-{what}-total", g, tags, f"bytes {what} (topic {topic})"),
                                float(counts[1]), True))

        for topic, counts in sorted(counters.consumed.items()):
            source = task.sources_by_topic.get(topic)
            if source is not None:
                add(source.name, topic, "consumed", counts)
        if counters.produced:
            sinks = actor.sink_names()
            for topic, counts in sorted(counters.produced.items()):
                node = sinks.get(topic, sinks.get(None))
                if node is not None:
                    add(node, topic, "produced", counts)
        return found

    def _thread_state_metrics(self, sup: Any) -> list[Metric]:
        """KIP-1091's thread state, as Kafka Streams 4.x reports it: `thread-state` (the ordinal of its
        StreamThread.State, tagged with the process id too) and `state` (the state's name, a text gauge)."""
        tracker = getattr(sup, "thread_state", None)
        if tracker is None:
            return []
        process_id = str(getattr(self._client, "process_id", "") or "")
        g = "stream-thread-metrics"
        return [
            Metric(MetricName("thread-state", g, (("process-id", process_id), ("thread-id", self.thread_id)),
                              "The current state of the thread (Kafka Streams' StreamThread.State ordinal)"),
                   float(tracker.state.value)),
            Metric(MetricName("state", g, (("thread-id", self.thread_id),), "The current state of the thread"),
                   0.0, text=tracker.state.name),
        ]

    def _client_metrics(self) -> list[Metric]:
        """`stream-metrics`, the client level, as Kafka Streams 4.x reports it (KIP-1091 added `client-state`,
        `recording-level` and, at the thread level, `thread-state`): text gauges for `version`, `commit-id`,
        `application-id`, `topology-description` and `state`; `client-state` (the state's ordinal in Kafka
        Streams' `KafkaStreams.State`), `recording-level` (INFO 0, DEBUG 1, TRACE 2), `alive-stream-threads`
        (1 while the group member runs: streamlet runs one per client) and `failed-stream-threads` (members
        that failed since the start)."""
        client = self._client
        if client is None:
            return []
        from importlib import metadata

        try:
            version = metadata.version("streamlet")
        except metadata.PackageNotFoundError:
            version = "unknown"
        client_id = str(self.config.get("client.id") or "") or f"{self.config.application_id}-streamlet"
        process_id = str(getattr(client, "process_id", "") or "")
        tags = (("client-id", client_id),)
        g = "stream-metrics"
        state = client.state.name
        found = [Metric(MetricName(name, g, tags, description), 0.0, text=text) for name, text, description in (
            ("version", version, "The version of the streamlet client"),
            ("commit-id", "unknown", "The version control commit id of the client"),
            ("application-id", self.config.application_id, "The application id of the client"),
            ("topology-description", str(client.topology.describe()), "The topology the client runs"),
            ("state", state, "The state of the client"),
        )]
        found += [
            Metric(MetricName("client-state", g, (("application-id", self.config.application_id),
                                                  ("client-id", client_id), ("process-id", process_id)),
                              "The state of the client (Kafka Streams' State ordinal)"),
                   float(_CLIENT_STATES.index(state)) if state in _CLIENT_STATES else -1.0),
            Metric(MetricName("recording-level", g, (("client-id", client_id), ("process-id", process_id)),
                              "The metrics recording level (INFO 0, DEBUG 1, TRACE 2)"), float(self.level)),
            Metric(MetricName("alive-stream-threads", g, tags, "Group members running or rebalancing"),
                   1.0 if state in ("RUNNING", "REBALANCING") else 0.0),
            Metric(MetricName("failed-stream-threads", g, tags, "Group members that failed since the start"),
                   float(getattr(client, "failed_members", 0))),  # a gauge: Prometheus wants counters named *_total
        ]
        return found


def _punctuate_metrics(add: Callable[..., None], group: str, tags: tuple[tuple[str, str], ...], s: Sampler,
                       key: Callable[[str], Hashable]) -> None:
    """punctuate-total/rate/latency-avg/max of a thread or task (Kafka Streams' names), from the
    punctuation counts and times `key` names in the samples."""
    add("punctuate-total", group, tags, s.total(key("punctuations")), True, "punctuations run")
    add("punctuate-rate", group, tags, s.rate(key("punctuations")), description="punctuations per second")
    add("punctuate-latency-avg", group, tags, s.ratio(key("punctuate_ns"), key("punctuations"), 1e-6),
        description="average punctuation time (ms)")
    add("punctuate-latency-max", group, tags, s.maximum(key("punctuate_ns")) * 1e-6,
        description="longest punctuation (ms)")


_CLIENT_STATES = ("CREATED", "REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR", "ERROR")
"""Kafka Streams' `KafkaStreams.State`, in its order: `client-state` reports the ordinal."""


def partition_lags(sup: Any) -> dict[tuple[str, int], int]:
    """Per assigned partition: high watermark minus the next offset its task is handed."""
    from aiokafka import TopicPartition

    consumer = sup.consumer
    lags: dict[tuple[str, int], int] = {}
    if consumer is None:
        return lags
    next_offsets = sup.view.next_offsets
    for key in sorted(sup.view.assigned):
        end = consumer.highwater(TopicPartition(*key))
        handed = next_offsets.get(key)
        if end is not None and handed is not None:
            lags[key] = max(0, end - handed)
    return lags
