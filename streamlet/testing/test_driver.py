"""`TopologyTestDriver`: runs a topology in memory, one record at a time, with no broker.

It drives the very same `StreamTask` core as the Kafka runtime (one task per sub-topology, every
topic with one partition), so a unit test exercises the real processor graph, stores, caches and
punctuation rules. Like Kafka Streams' driver, each piped record is processed fully — through
repartition topics into downstream sub-topologies — and committed before `pipe_input` returns, and
wall-clock time only moves when the test advances it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import deque
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from streamlet.actors.partition_group import RawRecord
from streamlet.actors.record_collector import ProducedRecord, RecordCollector
from streamlet.actors.stream_task import StreamTask
from streamlet.config import (
    CACHE_ENTRY_OVERHEAD_BYTES,
    OUTER_JOIN_EMIT_INTERVAL_MS,
    WINDOWED_AGGREGATION_EMIT_INTERVAL_MS,
    StreamsConfig,
)
from streamlet.dsl.store_suppliers import apply_application_setting
from streamlet.durations import to_millis
from streamlet.errors import StreamsError
from streamlet.record import Headers, KeyValue, Record
from streamlet.runtime.global_state import GlobalStateUpdater
from streamlet.serdes import Deserializer, Serde, Serializer
from streamlet.stores.api import StateStore
from streamlet.stores.cache import SharedCacheBudget
from streamlet.stores.keyvalue.api import KeyValueStore, TimestampedKeyValueStore
from streamlet.stores.versioned.api import VersionedKeyValueStore
from streamlet.testing.store_facades import KeyValueStoreFacade
from streamlet.topology import Topology

DEFAULT_APP_ID = "dummy-topology-test-driver-app-id"


class NoSuchElementError(StreamsError, LookupError):
    """Reading from an output topic that holds no (more) records."""


_UNSET: Any = object()
"""`pipe_input`'s marker for an argument not given (None is a real key or value)."""


def _to_ms(ts: int | datetime | None) -> int | None:
    if ts is None or isinstance(ts, int):
        return ts
    if isinstance(ts, datetime):
        if ts.tzinfo is None:
            raise ValueError("timestamps must be aware datetimes (with tzinfo) or int milliseconds")
        return int(ts.timestamp() * 1000)
    raise TypeError(f"a timestamp must be int ms or an aware datetime, got {ts!r}")


def _serializer(s: Serde[Any] | Serializer[Any] | None, fallback: Serde[Any] | None) -> Serializer[Any]:
    if isinstance(s, Serde):
        return s.serializer
    if isinstance(s, Serializer):
        return s
    if isinstance(s, type) and issubclass(s, Serde):
        return s().serializer
    if fallback is None:
        raise StreamsError("no serde given and no default serde configured")
    return fallback.serializer


def _deserializer(s: Serde[Any] | Deserializer[Any] | None, fallback: Serde[Any] | None) -> Deserializer[Any]:
    if isinstance(s, Serde):
        return s.deserializer
    if isinstance(s, Deserializer):
        return s
    if isinstance(s, type) and issubclass(s, Serde):
        return s().deserializer
    if fallback is None:
        raise StreamsError("no serde given and no default serde configured")
    return fallback.deserializer


class TestInputTopic:
    """Pipes records into one input topic of the driver."""

    __test__ = False  # not a pytest test class

    def __init__(self, driver: TopologyTestDriver, name: str, key_ser: Serializer[Any],
                 value_ser: Serializer[Any], start_ms: int, advance_ms: int) -> None:
        self._driver = driver
        self.name = name
        self._key_ser = key_ser
        self._value_ser = value_ser
        self._current_ms = start_ms
        self._advance_ms = advance_ms

    def _next_ts(self, timestamp: int | datetime | None) -> int:
        ms = _to_ms(timestamp)
        if ms is None:
            ms = self._current_ms
            self._current_ms += self._advance_ms
        return ms

    def pipe_input(self, key: Any = _UNSET, value: Any = _UNSET, timestamp: int | datetime | None = None,
                   headers: Headers | None = None) -> None:
        """`pipe_input(key, value, timestamp=None)`; with one argument, `pipe_input(value)` pipes that value
        with a None key, as Java's one-argument `pipeInput(value)`. Without a timestamp the topic's
        current time is used and then advanced by its auto-advance."""
        if value is _UNSET:
            key, value = None, (None if key is _UNSET else key)
        elif key is _UNSET:
            key = None
        ts = self._next_ts(timestamp)
        self._driver._pipe(self.name, self._key_ser.serialize(self.name, key),
                           self._value_ser.serialize(self.name, value), ts, tuple(headers or ()))

    def pipe_record(self, record: Record) -> None:
        """Pipe a `Record`; one whose timestamp is None takes the topic's current time (and advances it)."""
        self.pipe_input(record.key, record.value, record.timestamp, record.headers)

    def pipe_value_list(self, values: list[Any]) -> None:
        """Pipe records with these values and no key, each at the topic's next auto-advanced time."""
        for v in values:
            self.pipe_input(None, v)

    def pipe_key_value_list(self, pairs: list[KeyValue] | list[tuple[Any, Any]]) -> None:
        """Pipe `(key, value)` pairs, each at the topic's next auto-advanced time."""
        for k, v in pairs:
            self.pipe_input(k, v)

    def pipe_record_list(self, records: list[Record]) -> None:
        """Pipe these records (`Record` objects) with their own timestamps and headers."""
        for r in records:
            self.pipe_record(r)

    def advance_time(self, advance: timedelta | int) -> None:
        """Move this topic's clock forward for the records piped without a timestamp."""
        self._current_ms += to_millis(advance)


class TestOutputTopic:
    """Reads, in order, what the topology wrote to one topic."""

    __test__ = False

    def __init__(self, driver: TopologyTestDriver, name: str, key_de: Deserializer[Any],
                 value_de: Deserializer[Any]) -> None:
        self._queue = driver._output_queue(name)
        self.name = name
        self._key_de = key_de
        self._value_de = value_de

    def read_record(self) -> Record:
        """The next output record (key, value, timestamp, headers); NoSuchElementError when there is none."""
        if not self._queue:
            raise NoSuchElementError(f"no more records in output topic {self.name!r}")
        r = self._queue.popleft()
        return Record(self._key_de.deserialize(self.name, r.key), self._value_de.deserialize(self.name, r.value),
                      r.timestamp, r.headers)

    def read_key_value(self) -> KeyValue:
        """The next output record as a `KeyValue`."""
        r = self.read_record()
        return KeyValue(r.key, r.value)

    def read_value(self) -> Any:
        """The next output record's value."""
        return self.read_record().value

    def read_records_to_list(self) -> list[Record]:
        """Every output record not read yet, in order."""
        out = []
        while self._queue:
            out.append(self.read_record())
        return out

    def read_key_values_to_list(self) -> list[KeyValue]:
        """Every output record not read yet, as `KeyValue` pairs in order."""
        return [KeyValue(r.key, r.value) for r in self.read_records_to_list()]

    def read_values_to_list(self) -> list[Any]:
        """Every output value not read yet, in order."""
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """Latest value per key, as Java's `readKeyValuesToMap`: a tombstone maps its key to None, and a
        record with a None key is an error (it has no place in a map)."""
        result: dict[Any, Any] = {}
        while self._queue:
            r = self.read_record()
            if r.key is None:
                raise StreamsError(f"output topic {self.name!r}: read_key_values_to_map() does not take records "
                                   f"with a None key")
            result[r.key] = r.value
        return result

    def is_empty(self) -> bool:
        """True when every output record was read."""
        return not self._queue

    def get_queue_size(self) -> int:
        """How many output records are not read yet."""
        return len(self._queue)


class TopologyTestDriver:
    """Runs a `Topology` synchronously in memory (see the module docstring)."""

    __test__ = False

    def __init__(self, topology: Topology, config: StreamsConfig | dict[str, Any] | None = None,
                 initial_wall_clock_time: int | datetime | None = None) -> None:
        topology.validate()
        given = StreamsConfig.of(config)
        base = {key: given[key] for key in given.given_keys}
        if not base.get("application.id"):
            base["application.id"] = DEFAULT_APP_ID
        # As Kafka Streams' driver: no wall-clock throttling of a left/outer stream join's late results.
        base.setdefault(OUTER_JOIN_EMIT_INTERVAL_MS, 0)
        base.setdefault(WINDOWED_AGGREGATION_EMIT_INTERVAL_MS, 0)  # nor of on_window_close final results
        base.setdefault(CACHE_ENTRY_OVERHEAD_BYTES, 0)  # cache entries counted as Kafka Streams' driver counts them
        self._tmp_state: str | None = None
        if not base.get("state.dir"):  # not the shared <tmp>/streamlet: each driver its own directory
            self._tmp_state = tempfile.mkdtemp(prefix="streamlet-driver-")
            base["state.dir"] = self._tmp_state
        self.config = StreamsConfig(base)
        self.topology = topology
        apply_application_setting(topology, self.config)  # dsl.store.suppliers.class
        wall = _to_ms(initial_wall_clock_time)
        self._wall_ms = int(time.time() * 1000) if wall is None else wall
        app_id = self.config.application_id
        self._resolve = lambda t: f"{app_id}-{t}" if t in topology.internal_topics else t
        self._outputs: dict[str, deque[ProducedRecord]] = {}
        self._produced: set[str] = set()
        self._offsets: dict[str, int] = {}
        self._collector = RecordCollector(lambda _topic: 1)
        state_root = Path(self.config["state.dir"]) / app_id
        cache_total = int(self.config["statestore.cache.max.bytes"])
        subs = topology.sub_topologies()
        self._tasks: list[StreamTask] = []
        self._task_by_topic: dict[str, StreamTask] = {}
        # Kafka Streams' driver has one task and one cache for all caching stores: they share the whole
        # budget, and a store whose write takes them all past it evicts from its own cache.
        shared_cache = SharedCacheBudget(cache_total)
        for sub in subs:
            task = StreamTask(topology, sub, 0, self.config, self._collector, state_root,
                              clock=lambda: self._wall_ms, resolve_topic=self._resolve,
                              cache_bytes=cache_total, shared_cache=shared_cache)
            self._tasks.append(task)
            for t in task.sources_by_topic:
                self._task_by_topic[t] = task
        self._global: GlobalStateUpdater | None = None
        if topology.global_stores:
            self._global = GlobalStateUpdater(topology, self.config, state_root, clock=lambda: self._wall_ms,
                                              cache_bytes=cache_total, shared_cache=shared_cache)
        for task in self._tasks:
            task.initialize_stores()
        for task in self._tasks:
            if self._global is not None:
                task.global_stores = self._global.stores
            task.initialize_processors()
        self._closed = False
        self._capture()

    # -- topics -------------------------------------------------------------------------------------
    def create_input_topic(self, name: str, key_serde: Any = None, value_serde: Any = None,
                           start_timestamp: int | datetime | None = None,
                           auto_advance: timedelta | int = 0) -> TestInputTopic:
        if name not in self._task_by_topic and not self._is_global(name):
            raise StreamsError(f"unknown topic {name!r}: no source of the topology reads it "
                               f"(known: {sorted(self._task_by_topic)})")
        start = _to_ms(start_timestamp)
        return TestInputTopic(self, name,
                              _serializer(key_serde, self.config.default_key_serde()),
                              _serializer(value_serde, self.config.default_value_serde()),
                              int(time.time() * 1000) if start is None else start, to_millis(auto_advance))

    def create_output_topic(self, name: str, key_serde: Any = None, value_serde: Any = None) -> TestOutputTopic:
        return TestOutputTopic(self, name,
                               _deserializer(key_serde, self.config.default_key_serde()),
                               _deserializer(value_serde, self.config.default_value_serde()))

    def _output_queue(self, topic: str) -> deque[ProducedRecord]:
        q = self._outputs.get(topic)
        if q is None:
            q = self._outputs[topic] = deque()
        return q

    def produced_topic_names(self) -> set[str]:
        """Every topic the topology wrote to so far (internal ones included), read or not (as Java's)."""
        return set(self._produced)

    # -- stores -------------------------------------------------------------------------------------
    def get_state_store(self, name: str) -> StateStore:
        for task in self._tasks:
            if name in task.stores:
                return task.stores[name]
        if self._global is not None and name in self._global.stores:
            return self._global.stores[name]
        raise StreamsError(f"no state store named {name!r} in the topology")

    def get_key_value_store(self, name: str) -> KeyValueStore[Any, Any]:
        """The key-value store `name`; a timestamped one (the DSL's) seen with plain values, as Kafka
        Streams' driver shows it (`get_timestamped_key_value_store` gives `ValueAndTimestamp`s)."""
        store = self.get_state_store(name)
        if isinstance(store, TimestampedKeyValueStore):
            return KeyValueStoreFacade(store)
        if not isinstance(store, KeyValueStore):
            raise StreamsError(f"state store {name!r} is not a key-value store")
        return store

    def get_timestamped_key_value_store(self, name: str) -> TimestampedKeyValueStore[Any]:
        store = self.get_state_store(name)
        if not isinstance(store, TimestampedKeyValueStore):
            raise StreamsError(f"state store {name!r} is not a timestamped key-value store")
        return store

    def get_versioned_key_value_store(self, name: str) -> VersionedKeyValueStore:
        """The versioned store `name` (Kafka Streams' `getVersionedKeyValueStore`): `get(key, as_of)`,
        `put(key, value, timestamp)`, `delete(key, timestamp)`."""
        store = self.get_state_store(name)
        if not isinstance(store, VersionedKeyValueStore):
            raise StreamsError(f"state store {name!r} is not a versioned key-value store")
        return store

    def get_all_state_stores(self) -> dict[str, StateStore]:
        stores = {n: s for task in self._tasks for n, s in task.stores.items()}
        if self._global is not None:
            stores.update(self._global.stores)
        return stores

    # -- time ---------------------------------------------------------------------------------------
    def advance_wall_clock_time(self, advance: timedelta | int) -> None:
        self._check_open()
        self._wall_ms += to_millis(advance)
        try:
            for task in self._tasks:
                task.maybe_punctuate_wall_clock(self._wall_ms)
        except Exception:
            self._capture()
            raise
        for task in self._tasks:
            task.prepare_commit()
        self._complete_work()

    @property
    def wall_clock_time_ms(self) -> int:
        return self._wall_ms

    # -- processing ---------------------------------------------------------------------------------
    def _is_global(self, topic: str) -> bool:
        return self._global is not None and topic in self._global.topics

    def _pipe(self, topic: str, key: bytes | None, value: bytes | None, ts: int, headers: Headers) -> None:
        self._check_open()
        if self._global is not None and topic in self._global.topics:
            # As Kafka Streams' driver: a global record updates its store at once (and is flushed).
            offset = self._offsets.get(topic, 0)
            self._offsets[topic] = offset + 1
            self._global.update(topic, 0, [RawRecord(topic, 0, offset, ts, key, value, headers)])
            self._global.flush()
            return
        task = self._task_by_topic.get(topic)
        if task is None:
            raise StreamsError(f"unknown topic {topic!r}: no source of the topology reads it")
        self._enqueue(task, topic, key, value, ts, headers)
        self._complete_work()

    def _enqueue(self, task: StreamTask, topic: str, key: bytes | None, value: bytes | None, ts: int,
                 headers: Headers) -> None:
        offset = self._offsets.get(topic, 0)
        self._offsets[topic] = offset + 1
        task.add_records(topic, 0, [RawRecord(topic, 0, offset, ts, key, value, headers)])

    def _complete_work(self) -> None:
        """Process one record at a time until nothing is buffered, committing after each one.

        Kafka Streams' driver runs every sub-topology in one task and commits (flushing caches) after
        every single record, including each record read back from a repartition topic; doing the same
        makes cached aggregations emit exactly what a Java test expects. Across sub-topologies the
        record with the lowest timestamp goes first, as in that single task's partition group.
        """
        self._capture()
        while True:
            best: StreamTask | None = None
            best_ts = 0
            for task in self._tasks:
                ts = task.partition_group.head_timestamp()
                if ts is not None and (best is None or ts < best_ts):
                    best, best_ts = task, ts
            if best is None:
                break
            try:
                best.process(1)
            except Exception:
                self._capture()  # what was sent before the failure (a handler's dead letters) is out, as in Java's
                raise
            for task in self._tasks:
                task.prepare_commit()
            self._capture()

    def _capture(self) -> bool:
        """Move produced records to the output topics; feed internal ones back. True if any was fed."""
        fed = False
        for (topic, _partition), records in self._collector.drain().items():
            q = self._output_queue(topic)
            q.extend(records)
            self._produced.add(topic)
            task = self._task_by_topic.get(topic)
            if task is not None:
                for r in records:
                    self._enqueue(task, topic, r.key, r.value, r.timestamp, r.headers)
                fed = True
        return fed

    def _check_open(self) -> None:
        if self._closed:
            raise StreamsError("the TopologyTestDriver is closed")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for task in self._tasks:
                task.close(clean=True)
            if self._global is not None:
                self._global.close()
            self._capture()
        finally:
            if self._tmp_state is not None:
                shutil.rmtree(self._tmp_state, ignore_errors=True)

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
