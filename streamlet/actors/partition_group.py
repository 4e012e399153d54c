"""`PartitionGroup`: a task's input partitions, each a FIFO `RecordQueue`, merged by timestamp.

Records are deserialized and stamped (timestamp extractor) as they are added, in one tight loop
per consumed batch. `next_record` picks the partition whose head has the lowest timestamp, as Kafka
Streams does, so that a task reading several partitions processes them in event-time order as far
as the buffered data allows. Stream time is the highest timestamp processed so far; it never moves
backwards.

A task with several input partitions (a join reads a stream and a table) must not run ahead while one
of them is empty only because its records have not been fetched yet: an event would be joined before
the table row that precedes it. The runtime therefore marks such partitions as awaited (`expect`) until
it knows that the fetch position has reached the end of the partition (`set_caught_up`); while an
awaited partition's queue is empty the task idles. This is Kafka Streams' rule with its default
`max.task.idle.ms` = 0: wait for data the broker has, never for data that does not exist yet. The test
driver never marks a partition, since everything it pipes is buffered at once.

With `max.task.idle.ms` > 0 (`idle_for`, set by the Kafka runtime), a partition that is empty although
its fetch reached the end holds the task back too, up to that many ms of wall-clock time from when it was
first found so (`PartitionGroup.readyToProcess` in Kafka Streams): the time an upstream task (a repartition
topic's writer) gets to commit what goes before. Past the deadline the task goes on without it until the
partition has records again, which drops its clock. The task's owner wakes it at `idle_deadline()`.

The task takes records in runs (`next_run`): all records of one partition that may go before the head
of every other partition, which for the usual task with one input partition is the whole buffer. The
task then works through a run in one tight loop, without a merge decision per record.

With `max.task.idle.ms` = -1 (`IDLE_DISABLED`) the task never waits: it processes whatever is buffered, in
timestamp order as far as that goes, also while another input partition's records are still on the broker,
as Kafka Streams' `readyToProcess` answers at once when idling is disabled. Nothing is awaited then (`expect`
and `set_caught_up` mark nothing), and the runtime does not track such a task's fetch positions
(`waits_for_fetches`).

A run taken while another input partition has no buffered data, because its idle clock ran out (at once
with `max.task.idle.ms` = 0), is Kafka Streams' "enforced processing": its metric counts the records so
processed (`enforced`, see `count_enforced`).

A record whose deserializer raises a `RetriableError` (the schema registry cannot be reached to fetch its
writer's schema) is not bad input: no handler sees it. The partition's records from that one on are held,
undeserialized and unprocessed (so their offsets are not committed), the whole task waits, and the owner
calls `retry_held()` at `held_deadline()`: the wait starts at `schema.registry.retry.backoff.ms` and doubles
up to `schema.registry.retry.backoff.max.ms`; records fetched meanwhile queue behind the held ones. When the
failure has lasted `task.timeout.ms`, the error fails the task.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from streamlet.actors.processor_node import SourceNode
from streamlet.errors import DeserializationError, RetriableError, StreamsError, never_handled
from streamlet.processor import RecordTimestampExtractor
from streamlet.record import Headers, Record
from streamlet.serdes import fast_deserializer

_new: Final = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)
_Record: Final = Record  # Final: a C static when compiled, not a dict look-up per use

log = logging.getLogger(__name__)

UNKNOWN = -1
NO_BOUND = sys.maxsize
IDLE_DISABLED = -1
"""`max.task.idle.ms` that turns idling off: a task never waits for an input partition (module docstring)."""


class ConsumedRecord(Protocol):
    """The shape of a consumed record (aiokafka's `ConsumerRecord` has it; so do the driver's).

    The main consumer hands aiokafka's decoded records over as they are (see
    `streamlet.kafka.restore_records`): they lack `topic` and `partition`, which a task knows from the
    batch; `with_origin` adds them for the error handlers, the only readers of those two fields."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    @property
    def headers(self) -> Sequence[tuple[str, bytes]]: ...


@dataclass(slots=True)
class RawRecord:
    """A consumed record that did not come from aiokafka (the test driver's, the Spark engine's rows)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = field(default=())


def with_origin(raw: Any, topic: str, partition: int) -> ConsumedRecord:
    """`raw` as a `ConsumedRecord` with its topic and partition (a decoded record has neither)."""
    if hasattr(raw, "topic"):
        return raw
    return RawRecord(topic, partition, raw.offset, raw.timestamp, raw.key, raw.value, tuple(raw.headers or ()))


Buffered = tuple[Record, int, ConsumedRecord]
"""A queued record: deserialized and stamped, its offset, and the bytes as consumed (what a
dead-letter topic receives). A plain tuple: one is built per consumed record."""


class RecordQueue:
    """One input partition's buffered records and its partition time."""

    __slots__ = ("partition", "partition_time", "queue", "source", "topic")

    def __init__(self, topic: str, partition: int, source: SourceNode) -> None:
        self.topic = topic
        self.partition = partition
        self.source = source
        self.queue: deque[Buffered] = deque()
        self.partition_time = UNKNOWN


SkipHandler = Callable[[ConsumedRecord, BaseException], bool]
"""Decides about an undeserializable record: True = skip it and go on, False = fail the task."""


class PartitionGroup:
    """A task's input partitions and the order their records are processed in (see the module docstring)."""

    count_enforced = False
    """Whether to count enforced processing in `enforced` (set by the metrics at DEBUG level, for a task with
    several input partitions when `max.task.idle.ms` is not -1, as Kafka Streams records it): the records of
    every run taken while an input partition had no buffered data. Kafka Streams checks before each record,
    streamlet once per run; no record arrives during a run, so the counts agree. A task that does not count
    pays one attribute check per run, never one per record. Class-level defaults, as
    `StreamTask.record_lateness`."""
    enforced = 0

    def __init__(self, sources_by_topic: dict[str, SourceNode], on_deserialization_error: SkipHandler) -> None:
        self._sources = sources_by_topic
        self._queues: dict[tuple[str, int], RecordQueue] = {}
        self._on_error = on_deserialization_error
        self.stream_time = UNKNOWN
        self.buffered = 0
        self.skipped = 0
        self._awaited: set[tuple[str, int]] = set()  # partitions that may have unfetched records
        self._idle = False  # an awaited partition's queue is empty: wait for it (see the module docstring)
        self._idle_ms = 0  # max.task.idle.ms beyond "wait for data the broker has" (see `idle_for`)
        self._clock: Callable[[], int] = lambda: 0
        self._inputs: set[tuple[str, int]] = set()  # every input partition known (expected or queued)
        self._deadlines: dict[tuple[str, int], int] = {}  # empty, caught-up partition -> when to stop waiting
        self._never_idle = False  # max.task.idle.ms = -1: nothing is ever awaited
        self._held: dict[tuple[str, int], list[ConsumedRecord]] = {}  # not deserialized yet (module docstring)
        self._held_error: RetriableError | None = None
        self._held_since = 0  # wall-clock ms of the first failure of this outage
        self._retry_at = 0
        self._attempts = 0
        self.retry_backoff_ms = 100
        self.retry_backoff_max_ms = 1000
        self.retry_timeout_ms = 300000
        """The held records' retries: first wait, longest wait, and how long before the error fails the
        task (`schema.registry.retry.backoff.ms`, `.max.ms`, `task.timeout.ms`; set by the task)."""
        self.now_ms: Callable[[], int] = _now_ms
        """The wall clock the retries are timed by (ms; a test sets its own: a compiled module's calls to its
        own functions cannot be patched)."""

    def idle_for(self, max_idle_ms: int, clock: Callable[[], int]) -> None:
        """Wait up to `max_idle_ms` (wall-clock, from `clock`) for an empty partition whose fetch reached
        its end before going on without it (`max.task.idle.ms`; see the module docstring). `IDLE_DISABLED`
        (-1) never waits, not even for records the broker has; any other negative value is 0."""
        self._never_idle = max_idle_ms == IDLE_DISABLED
        self._idle_ms = max(0, max_idle_ms)
        self._clock = clock
        if self._never_idle:
            self._awaited.clear()
            self._deadlines.clear()
            self._idle = False

    @property
    def waits_for_fetches(self) -> bool:
        """Whether the task may wait for an input partition's unfetched records: it reads several partitions
        and idling is not disabled. Only then does the runtime tell it where their fetches stand."""
        return len(self._sources) > 1 and not self._never_idle

    def expect(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Mark partitions whose fetch position is not yet known to be at their end."""
        partitions = list(partitions)
        self._inputs.update(partitions)
        if self._never_idle:
            return
        self._awaited.update(partitions)
        self._update_idle()

    def set_caught_up(self, topic: str, partition: int, caught_up: bool) -> None:
        self._inputs.add((topic, partition))
        if self._never_idle:
            return
        if caught_up:
            self._awaited.discard((topic, partition))
        else:
            self._awaited.add((topic, partition))
        self._update_idle()

    def _update_idle(self) -> None:
        self._idle = any(not self.buffered_in(t, p) for t, p in self._awaited)

    def queues(self) -> dict[tuple[str, int], RecordQueue]:
        """Every input partition seen so far, in the order first seen (which breaks timestamp ties)."""
        return self._queues

    def queue_for(self, topic: str, partition: int) -> RecordQueue:
        q = self._queues.get((topic, partition))
        if q is None:
            source = self._sources.get(topic)
            if source is None:
                raise StreamsError(f"no source node reads topic {topic!r}")
            q = self._queues[(topic, partition)] = RecordQueue(topic, partition, source)
            self._inputs.add((topic, partition))
        return q

    def add_records(self, topic: str, partition: int, records: Iterable[ConsumedRecord]) -> int:
        """Deserialize and stamp a batch of one partition; returns how many were queued."""
        if self._held and (topic, partition) in self._held:  # behind records waiting for a retry
            self._held[(topic, partition)].extend(records)
            return 0
        q = self.queue_for(topic, partition)
        source = q.source
        kd = source.key_deserializer.deserialize
        vd = source.value_deserializer.deserialize
        key_type, decode_key = fast_deserializer(source.key_deserializer)  # see `serdes.FastPath`
        value_type, decode_value = fast_deserializer(source.value_deserializer)
        extractor = source.timestamp_extractor
        if type(extractor) is RecordTimestampExtractor:
            extractor = None  # it returns the record's own timestamp: taken inline, without its call
        append = q.queue.append
        added = 0
        for index, raw in enumerate(records):
            try:
                k, v = raw.key, raw.value
                try:
                    key: Any = decode_key(k) if type(k) is key_type else kd(topic, k)
                    value: Any = decode_value(v) if type(v) is value_type else vd(topic, v)
                except Exception:
                    key, value = kd(topic, k), vd(topic, v)  # the deserializers' own calls: result or error
                if extractor is None:
                    ts = raw.timestamp
                else:
                    ts = extractor.extract(topic, key, value, raw.timestamp, q.partition_time)
            except Exception as exc:
                if isinstance(exc, RetriableError):
                    rest = records[index:] if isinstance(records, Sequence) else [raw, *records]
                    self._hold(topic, partition, rest, exc)
                    break
                if never_handled(exc):  # no record's fault (the registry refused the credentials)
                    exc.add_note(f"reading topic {topic!r} partition {partition} offset {raw.offset}")
                    raise
                raw = with_origin(raw, topic, partition)
                if self._on_error(raw, exc):
                    self.skipped += 1
                    continue
                raise DeserializationError(raw.topic, raw.partition, raw.offset, exc) from exc
            if ts < 0:
                log.warning("skipping record with negative timestamp %d at %s-%d offset %d",
                            ts, topic, partition, raw.offset)
                self.skipped += 1
                continue
            headers: Headers = tuple(raw.headers) if raw.headers else ()
            append((_new(_Record, (key, value, ts, headers)), raw.offset, raw))
            added += 1
        self.buffered += added
        if self._idle and added:
            self._update_idle()
        return added

    def _hold(self, topic: str, partition: int, records: Iterable[ConsumedRecord], exc: RetriableError) -> None:
        now = self.now_ms()
        if self._held_error is None:
            self._held_since, self._attempts = now, 0
            log.warning("waiting to read %s-%d from offset %s: %s; no record is skipped, retrying for up to "
                        "task.timeout.ms (%d ms)", topic, partition, _first_offset(records), exc,
                        self.retry_timeout_ms)
        self._held_error = exc
        if now - self._held_since >= self.retry_timeout_ms:
            exc.add_note(f"it lasted longer than task.timeout.ms ({self.retry_timeout_ms} ms): raise it to wait "
                         "longer")
            raise exc
        self._held[(topic, partition)] = list(records)
        self._retry_at = now + min(self.retry_backoff_max_ms, self.retry_backoff_ms << min(self._attempts, 30))
        self._attempts += 1

    def held_deadline(self) -> int | None:
        """When to call `retry_held` (wall-clock ms), or None when no record is held."""
        return self._retry_at if self._held else None

    def retry_held(self) -> None:
        """Deserialize the held records again once their wait is over (module docstring)."""
        if not self._held or self.now_ms() < self._retry_at:
            return
        held, self._held = self._held, {}
        for (topic, partition), records in held.items():
            self.add_records(topic, partition, records)
        if not self._held and self._held_error is not None:
            log.info("reading again after %d ms: %s is over", self.now_ms() - self._held_since,
                     type(self._held_error).__name__)
            self._held_error = None

    def next_run(self, limit: int) -> tuple[RecordQueue, list[Buffered]] | None:
        """Take the next run of records: from the partition whose head has the lowest timestamp (the
        first such partition on a tie), every record up to `limit` that per-record merging would also
        have taken next, i.e. until another partition's head comes first. None when idle or empty.
        The caller advances partition and stream time per record as it processes them."""
        if (not self._ready()) if self._idle_ms else self._idle:
            return None
        if self._held:  # the task waits for the held records' retry (in order)
            return None
        best: RecordQueue | None = None
        best_ts = 0
        for q in self._queues.values():
            if q.queue:
                ts = q.queue[0][0].timestamp
                if best is None or ts < best_ts:
                    best, best_ts = q, ts
        if best is None:
            return None
        enforcing = self.count_enforced and self._some_input_empty()
        # Another partition's head goes first once our timestamp passes it (or equals it, for a
        # partition ahead of ours in order): the bound is exclusive before `best`, inclusive after it.
        before = after = NO_BOUND
        seen_best = False
        for q in self._queues.values():
            if q is best:
                seen_best = True
            elif q.queue:
                ts = q.queue[0][0].timestamp
                if seen_best:
                    after = min(after, ts)
                else:
                    before = min(before, ts)
        queue = best.queue
        if before == after == NO_BOUND and len(queue) <= limit:
            run = list(queue)
            queue.clear()
        else:
            run = [queue.popleft()]
            popleft = queue.popleft
            while queue and len(run) < limit:
                ts = queue[0][0].timestamp
                if ts >= before or ts > after:
                    break
                run.append(popleft())
        self.buffered -= len(run)
        if enforcing:
            self.enforced += len(run)
        if not queue and self._awaited and (best.topic, best.partition) in self._awaited:
            self._idle = True
        return best, run

    def give_back(self, queue: RecordQueue, rest: list[Buffered]) -> None:
        """Records of a run taken by `next_run` and not processed (the task stopped while a write waits for
        the schema registry): back to the front of their queue, in order."""
        if rest:
            queue.queue.extendleft(reversed(rest))
            self.buffered += len(rest)
            if self._idle:
                self._update_idle()

    def _some_input_empty(self) -> bool:
        """Whether an input partition has no buffered data, once the task may take a run: every such partition
        then is one the task stopped waiting for (its fetch reached its end and its idle clock ran out)."""
        queues = self._queues
        for tp in self._inputs:
            q = queues.get(tp)
            if q is None or not q.queue:
                return True
        return False

    def _ready(self) -> bool:
        """With `max.task.idle.ms` > 0, Kafka Streams' `readyToProcess`: partition by partition, one with records
        drops its idle clock; an empty one not known to be fetched to its end holds the task (and drops its
        clock); an empty one fetched to its end starts its clock if it has none and holds the task until it
        runs out. The first partition that holds the task ends the look, so the next one's clock starts only
        once this one's ran out, as there."""
        now: int | None = None
        deadlines = self._deadlines
        for tp in self._inputs:
            q = self._queues.get(tp)
            if q is not None and q.queue:
                deadlines.pop(tp, None)
                continue
            if tp in self._awaited:
                deadlines.pop(tp, None)
                return False
            if now is None:
                now = self._clock()
            if now < deadlines.setdefault(tp, now + self._idle_ms):
                return False
        return True

    def idle_deadline(self) -> int | None:
        """When the task must look again although no record arrives (wall-clock ms): the earliest idle clock
        still running, or None. Kafka Streams looks at every turn of its loop; a task woken at each deadline
        sees the same clocks start and run out."""
        if not self._idle_ms or not self._deadlines:
            return None
        now = self._clock()
        pending = [d for d in self._deadlines.values() if d > now]
        return min(pending) if pending else None

    def head_timestamp(self) -> int | None:
        """The timestamp the next run would start with, or None when nothing is buffered."""
        heads = [q.queue[0][0].timestamp for q in self._queues.values() if q.queue]
        return min(heads) if heads else None

    def buffered_in(self, topic: str, partition: int) -> int:
        q = self._queues.get((topic, partition))
        held = self._held.get((topic, partition), ()) if self._held else ()
        return (len(q.queue) if q else 0) + len(held)

    def clear(self) -> None:
        for q in self._queues.values():
            q.queue.clear()
        self.buffered = 0
        self._held.clear()
        self._held_error = None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _first_offset(records: Iterable[ConsumedRecord]) -> object:
    for record in records:
        return record.offset
    return "?"
