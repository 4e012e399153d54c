"""KStream-KStream `join` / `left_join` / `outer_join` (Kafka Streams 3.9's KStreamKStreamJoin).

Each side's records go through a windowed node that forwards them and keeps them in the side's window
store (retaining duplicates). Each side's join node looks a record up in the *other* side's store over
`[t - before, t + after]` (the other side over `[t - after, t + before]`) and sends one joined record
per match, timestamped with the later of the two. Records with a null key or value are dropped (in a
left or outer join, a null key with a value is joined with None at once).

A left or outer join does not send "joined with None" for an unmatched record right away (it may still
match): the record waits in the shared outer store, keyed by (timestamp, side, key), and is sent once
its window is closed (stream time past its time + the window + grace), when a later record arrives,
at most once per `emit interval` of wall-clock time (1 s by default; 0 in the test driver, as in Kafka
Streams' driver, so that tests need not move the clock). A match found in the meantime
removes it from the outer store. A record that is already too late to wait is joined with None at once.
Both sides share one stream time (the largest timestamp either has seen), per task.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streamlet.config import OUTER_JOIN_EMIT_INTERVAL_MS
from streamlet.dsl.processors.forwarding import log_skipped
from streamlet.errors import SerializationError, TopologyError
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.serdes import Deserializer, Serde, Serializer
from streamlet.stores.api import StateStoreContext
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.keyvalue.typed import TypedKeyValueStore
from streamlet.stores.window.api import WindowStore

Joiner = Callable[[Any, Any], Any]

_MAX_TIME = (1 << 63) - 1
_new = tuple.__new__  # a Record without the Python-level NamedTuple __new__ frame


def _long(value: int) -> int:
    """Java long arithmetic (wraps around): the tracker's "no record yet" time plus a window overflows."""
    return ((value + (1 << 63)) % (1 << 64)) - (1 << 63)


@dataclass
class _TimeTracker:
    """What both join nodes of one task share (Kafka Streams' TimeTracker)."""

    emit_interval_ms: int = 1000
    stream_time: int = -1
    min_time: int = _MAX_TIME
    next_time_to_emit: int = 0


@dataclass
class TimeTrackers:
    """One tracker per task, handed to both sides' join nodes."""

    by_task: dict[str, _TimeTracker] = field(default_factory=dict)

    def get(self, task_id: str) -> _TimeTracker:
        return self.by_task.setdefault(task_id, _TimeTracker())


class JoinWindowNode(Processor):
    """Forwards each record and keeps it (if it has a key) in the side's window store."""

    _store: WindowStore

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self._store_name)
        if not isinstance(store, WindowStore):
            raise TopologyError(f"state store {self._store_name!r} must be a window store for a join")
        self._store = store
        self._forward = context.forwarder()

    def process(self, record: Record) -> None:
        self._forward(record)
        if record.key is not None:
            self._store.put(record.key, record.value, record.timestamp)


@dataclass(frozen=True)
class StreamJoinSide:
    """One side's join node settings; `left` says which side it is (this = left)."""

    left: bool
    other_store: str
    before_ms: int  # how far back this side looks in the other's store
    after_ms: int
    window_before_ms: int  # the JoinWindows' own before/after (for when unmatched records are due)
    window_after_ms: int
    grace_ms: int
    joiner: Joiner  # the user's joiner(left_value, right_value), on both sides
    outer: bool
    outer_store: str | None
    trackers: TimeTrackers

    def __call__(self) -> Processor:
        return StreamStreamJoin(self)

    def join(self, this_value: Any, other_value: Any) -> Any:
        """The joiner on this side's value and the other side's, whichever side this is."""
        return self.joiner(this_value, other_value) if self.left else self.joiner(other_value, this_value)


class StreamStreamJoin(Processor):
    _other: WindowStore
    _outer: OuterJoinStore | None

    def __init__(self, side: StreamJoinSide) -> None:
        self._side = side

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        side = self._side
        store = context.get_state_store(side.other_store)
        if not isinstance(store, WindowStore):
            raise TopologyError(f"state store {side.other_store!r} must be a window store for a join")
        self._other = store
        self._tracker = side.trackers.get(context.task_id)
        self._outer = None
        if side.outer_store is not None:
            outer = context.get_state_store(side.outer_store)
            if not isinstance(outer, OuterJoinStore):
                raise TopologyError(f"state store {side.outer_store!r} must be a stream-join outer store")
            self._outer = outer
            self._tracker.emit_interval_ms = int(context.app_config.get(OUTER_JOIN_EMIT_INTERVAL_MS, 1000))
        self._forward = context.forwarder_in_record_context()

    def process(self, record: Record) -> None:
        side, tracker = self._side, self._tracker
        timestamp = record.timestamp
        if timestamp > tracker.stream_time:
            tracker.stream_time = timestamp
        key, value = record.key, record.value
        if side.outer and key is None and value is not None:
            self._forward(record.with_value(side.join(value, None)))
            return
        if key is None or value is None:
            log_skipped(self.context, "null key or value")
            return
        outer = self._outer
        if outer is not None and timestamp == tracker.stream_time:
            self._emit_unmatched(record)
        time_from = max(0, timestamp - side.before_ms)
        time_to = max(0, timestamp + side.after_ms)
        found = self._other.fetch_list(key, time_from, time_to)
        if found:
            # `side.join` inlined, the user's joiner called directly: a record of a busy key meets many
            # (issue 27: tens of matches per record at 10,000 records/s), and each call is one frame less.
            forward, joiner, headers, this_left = self._forward, side.joiner, record.headers, side.left
            for match_time, match_value in found:
                if outer is not None:
                    outer.delete_if_present((match_time, not this_left, key))
                joined = joiner(value, match_value) if this_left else joiner(match_value, value)
                forward(_new(Record, (key, joined, timestamp if timestamp >= match_time else match_time, headers)))
        elif side.outer:
            if outer is None or time_to < tracker.stream_time:
                self._forward(record.with_value(side.join(value, None)))
            else:
                tracker.min_time = min(tracker.min_time, timestamp)
                outer.append((timestamp, side.left, key), (side.left, value))

    def _window_open(self, entry_time: int, entry_left: bool) -> bool:
        side, tracker = self._side, self._tracker
        look_back = side.window_after_ms if entry_left else side.window_before_ms
        return tracker.min_time + look_back + side.grace_ms >= tracker.stream_time

    def _emit_unmatched(self, record: Record) -> None:
        side, tracker, outer = self._side, self._tracker, self._outer
        assert outer is not None
        if _long(tracker.min_time + side.after_ms + side.grace_ms) >= tracker.stream_time:
            return  # nothing can be due yet
        now = self.context.current_system_time_ms()
        if now < tracker.next_time_to_emit:
            return  # at most once per emit interval of wall-clock time
        tracker.next_time_to_emit = now + tracker.emit_interval_ms
        tracker.min_time = _MAX_TIME
        left_open = right_open = False
        previous = None
        for (entry_time, entry_left, key), (value_left, entry_value) in outer.entries():
            tracker.min_time = entry_time
            if left_open and right_open:
                break  # nothing further on either side can be due
            if self._window_open(entry_time, entry_left):
                if entry_left:
                    left_open = True
                else:
                    right_open = True
                continue
            this_value = entry_value if value_left == side.left else None
            other_value = entry_value if value_left != side.left else None
            self._forward(Record(key, side.join(this_value, other_value), entry_time, record.headers))
            current = (entry_time, entry_left, key)
            if previous is not None and previous != current:
                outer.delete(previous)
            previous = current
        if previous is not None:
            outer.delete(previous)


# -- the outer store: (timestamp, side, key) -> list of (side, value), Kafka Streams' bytes ----------

_TIME = struct.Struct(">q")
_INT = struct.Struct(">i")


class _KeyAndSideSerializer(Serializer[Any]):
    def __init__(self, inner: Serializer[Any]) -> None:
        super().__init__()
        self.inner = inner

    def serialize(self, topic: str | None, data: Any) -> bytes | None:
        timestamp, left, key = data
        key_bytes = self.inner.serialize(topic, key)
        if key_bytes is None:
            raise SerializationError("a stream-join outer store key serialized to None")
        return _TIME.pack(timestamp) + (b"\x01" if left else b"\x00") + key_bytes


class _KeyAndSideDeserializer(Deserializer[Any]):
    def __init__(self, inner: Deserializer[Any]) -> None:
        super().__init__()
        self.inner = inner

    def deserialize(self, topic: str | None, data: bytes | None) -> Any:
        if data is None:
            return None
        return _TIME.unpack_from(data)[0], data[8] == 1, self.inner.deserialize(topic, data[9:])


class _SideValuesSerializer(Serializer[Any]):
    """A list of (is_left, value): Kafka's ListSerde over byte arrays of `side byte + value bytes`."""

    def __init__(self, left: Serializer[Any], right: Serializer[Any]) -> None:
        super().__init__()
        self.left, self.right = left, right

    def serialize(self, topic: str | None, data: Any) -> bytes | None:
        if data is None:
            return None
        out = bytearray(b"\x01")  # the list serde's variable-size strategy
        out += _INT.pack(len(data))
        for left, value in data:
            raw = (self.left if left else self.right).serialize(topic, value) or b""
            out += _INT.pack(len(raw) + 1)
            out += (b"\x01" if left else b"\x00") + raw
        return bytes(out)


class _SideValuesDeserializer(Deserializer[Any]):
    def __init__(self, left: Deserializer[Any], right: Deserializer[Any]) -> None:
        super().__init__()
        self.left, self.right = left, right

    def deserialize(self, topic: str | None, data: bytes | None) -> Any:
        if data is None:
            return None
        (count,) = _INT.unpack_from(data, 1)
        pos, values = 5, []
        for _ in range(count):
            (n,) = _INT.unpack_from(data, pos)
            item = data[pos + 4:pos + 4 + n]
            pos += 4 + n
            left = item[0] == 1
            values.append((left, (self.left if left else self.right).deserialize(topic, item[1:])))
        return values


class OuterJoinStore(TypedKeyValueStore):
    """The shared store of a left/outer stream-stream join (Kafka Streams' list-value store): `append`
    adds a value to a key's list, iteration yields each value of each key in key byte order
    (timestamp, then side with right first, then key)."""

    def __init__(self, bytes_store: KeyValueBytesStore, key_serde: Serde[Any] | None, value_serde: Serde[Any] | None,
                 other_value_serde: Serde[Any] | None, *, logging_enabled: bool) -> None:
        super().__init__(bytes_store, None, None, logging_enabled=logging_enabled, caching_enabled=False)
        self._serdes = (key_serde, value_serde, other_value_serde)

    def init(self, context: StateStoreContext) -> None:
        config = context.app_config
        key_serde, left_serde, right_serde = self._serdes
        key_serde = key_serde or config.default_key_serde()
        left_serde = left_serde or config.default_value_serde()
        right_serde = right_serde or config.default_value_serde()
        if key_serde is None or left_serde is None or right_serde is None:
            raise TopologyError(f"store {self.name!r} has no serdes and no default serdes are configured")
        self._key_serde = Serde(_KeyAndSideSerializer(key_serde.serializer),
                                _KeyAndSideDeserializer(key_serde.deserializer))
        self._value_serde = Serde(_SideValuesSerializer(left_serde.serializer, right_serde.serializer),
                                  _SideValuesDeserializer(left_serde.deserializer, right_serde.deserializer))
        super().init(context)

    def append(self, key: tuple[int, bool, Any], value: tuple[bool, Any]) -> None:
        values = self.get(key)
        self.put(key, [value] if values is None else [*values, value])

    def delete_if_present(self, key: tuple[int, bool, Any]) -> None:
        if self.get(key) is not None:
            self.put(key, None)

    def entries(self) -> list[tuple[tuple[int, bool, Any], tuple[bool, Any]]]:
        with self.all() as it:
            return [(kv.key, value) for kv in it for value in kv.value]
