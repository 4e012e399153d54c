"""Runtime processor nodes: one per topology node per task, wired to their children.

Every node exposes `process(record)`; a parent's forward is a direct call on its children, so a
record goes from source to sink in one synchronous call chain with no queue in between.

An error is handled at the processor node that raised it, as Kafka Streams 4.x does (KIP-1033): every
place that hands a child a record catches what escapes the child and calls the child's `failed`, which
asks the processing exception handler with the node's name. When the handler resumes, only that node's
processing of the record is dropped: what the record already produced stands, and later children of the
same parent still get it. Sources and sinks have no handler of their own: what escapes a sink (its
record could not be serialized and the production handler failed) is the error of the processor that
forwarded to it, and what escapes a source's only child fails the task. A failure the handler did not
resume is marked (`mark_failed`), so that the nodes above it let it through to the task. The catching
sits in the caller's frame where it can (a loop over children, the task's loop), where Python's
`try` costs nothing until something raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from streamlet.actors.record_collector import ProducedRecord
from streamlet.errors import RetriableError, SerializationError, SinkSerializationError
from streamlet.partitioner import default_partition
from streamlet.processor import Processor, TimestampExtractor
from streamlet.record import Record
from streamlet.serdes import Deserializer, Serializer, fast_serializer
from streamlet.topology import StreamPartitioner

if TYPE_CHECKING:
    from streamlet.actors.processor_context import NodeContext
    from streamlet.actors.record_collector import RecordCollector
    from streamlet.actors.stream_task import StreamTask

_new: Final = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)
_ProducedRecord: Final = ProducedRecord  # Final: a C static when compiled, not a dict look-up per use

_FAILED_AT = "streamlet_failed_node"
"""The attribute naming the node where the handler failed on an exception (Kafka Streams'
`FailedProcessingException`): nodes above it let it through."""


def failed_node(exc: BaseException) -> str | None:
    """The processor node at which the processing handler failed on `exc`, None when no handler did."""
    node = getattr(exc, _FAILED_AT, None)
    return node if isinstance(node, str) else None


def mark_failed(exc: BaseException, node: str) -> None:
    """Mark `exc` as failed at `node`: the nodes it passes on its way to the task do not handle it again."""
    setattr(exc, _FAILED_AT, node)


def entry_point(node: Node) -> Callable[[Record], None]:
    """What a parent calls to hand `node` a record: a processor node's processor's own `process` (one call
    per hop instead of two), any other node's `process`. `ProcessorNode.process` is a real method, not
    an attribute bound to the processor's, so that mypyc can compile the class (`streamlet/_compiled.py`)."""
    return node.processor.process if isinstance(node, ProcessorNode) else node.process


def guarded_entry(node: Node) -> Callable[[Record], None]:
    """`entry_point(node)`, with what escapes a processor node handled at that node (`Node.failed`): for a
    caller that has no frame of its own to catch in. A sink's or source's entry is returned as it is."""
    entry = entry_point(node)
    if not isinstance(node, ProcessorNode):
        return entry
    failed = node.failed

    def guarded(record: Record) -> None:
        try:
            entry(record)
        except Exception as exc:
            failed(record, exc)

    return guarded


class Node:
    """A node of a task's processor graph."""

    name: str
    children: list[Node]

    def process(self, record: Record) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def failed(self, record: Record, exc: Exception) -> None:
        """`exc` escaped this node while it processed `record`. A source or sink has no handler of its own
        (as in Kafka Streams): the error is its caller's, so it goes on up."""
        raise exc

    def init(self) -> None:
        pass

    def close(self) -> None:
        pass


class SourceNode(Node):
    """Turns consumed bytes into a `Record` (deserialize + extract the timestamp) and fans it out."""

    def __init__(
        self,
        name: str,
        topics: list[str],
        key_deserializer: Deserializer[Any],
        value_deserializer: Deserializer[Any],
        timestamp_extractor: TimestampExtractor | None,
    ) -> None:
        self.name = name
        self.topics = topics
        self.children = []
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.timestamp_extractor = timestamp_extractor
        self.deliver: Callable[[Record], None] = self.process
        """What the task calls per record: `process`, or the only child's `process` itself."""
        self.direct_child: Node | None = None
        """The only child, when `deliver` is its entry: the task catches what escapes it, for it."""
        self._pairs: list[tuple[Node, Callable[[Record], None]]] = []
        self.task: StreamTask | None = None

    def init(self) -> None:
        self._pairs = [(c, entry_point(c)) for c in self.children]
        if len(self.children) == 1:
            self.direct_child = self.children[0]
            self.deliver = entry_point(self.children[0])

    def process(self, record: Record) -> None:
        task = self.task
        if task is None:
            for child, entry in self._pairs:
                try:
                    entry(record)
                except Exception as exc:
                    child.failed(record, exc)
            return
        raw = start = task.current_raw
        for child, entry in self._pairs:
            try:
                entry(record)
            except Exception as exc:
                child.failed(record, exc)
            raw = raw_after(task, child, raw)
        task.current_raw = start


def raw_after(task: StreamTask, child: Node, raw: Any) -> Any:
    """After `child` got a record in a forward to several children: a sink that sent it let the consumed
    record's bytes go (`StreamTask.current_raw`) for the later children too, which share the forward's
    record context in Kafka Streams; a processor's own forwards had record contexts of their own, so what
    its sinks let go comes back. Returns the bytes the next child starts with. (The forward restores its
    own bytes when it is done; a sink that is its parent's only child lets nothing go: see `SinkNode`.)"""
    if isinstance(child, SinkNode):
        return task.current_raw
    task.current_raw = raw
    return raw


class ProcessorNode(Node):
    """Wraps a user's (or the DSL's) `Processor` with its own context."""

    def __init__(self, name: str, processor: Processor, store_names: list[str]) -> None:
        self.name = name
        self.processor = processor
        self.store_names = store_names
        self.children = []
        self.children_by_name: dict[str, Node] = {}
        self.child_entries: list[tuple[Node, Callable[[Record], None]]] = []
        """Each child with its `entry_point`, for a forward to all children (set in `init`)."""
        self.context: NodeContext | None = None
        self.on_error: Callable[[ProcessorNode, Record | None, Exception], None] | None = None
        """The task's handling of this node's errors (set by the task): returns when the processing
        handler resumed, raises otherwise. None: no handler, every error goes on up."""

    def process(self, record: Record) -> None:
        """Parents on the hot path call `entry_point(node)` instead, which skips this frame."""
        self.processor.process(record)

    def init(self) -> None:
        assert self.context is not None
        self.children_by_name = {c.name: c for c in self.children}
        self.child_entries = [(c, entry_point(c)) for c in self.children]
        self.processor.init(self.context)

    def failed(self, record: Record, exc: Exception) -> None:
        """`exc` escaped this processor while it processed `record`: the processing handler decides, with
        this node's name (Kafka Streams' `ProcessorNode.process`). Returns when it resumed."""
        on_error = self.on_error
        if on_error is None:
            raise exc
        on_error(self, record, exc)

    def close(self) -> None:
        self.processor.close()


class SinkNode(Node):
    """Serializes, partitions and hands a record to the task's `RecordCollector`."""

    def __init__(
        self,
        name: str,
        topic: str,
        key_serializer: Serializer[Any],
        value_serializer: Serializer[Any],
        partitioner: StreamPartitioner | None,
        collector: RecordCollector,
    ) -> None:
        self.name = name
        self.topic = topic
        self.children = []
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self.partitioner = partitioner
        self.collector = collector
        self._serialize_key = key_serializer.serialize
        self._serialize_value = value_serializer.serialize
        self._key_type, self._encode_key = fast_serializer(key_serializer)
        self._value_type, self._encode_value = fast_serializer(value_serializer)
        self._partitions = 0  # the topic's partition count, asked once (it is fixed while the task runs)
        self.task: StreamTask | None = None
        """The task, whose consumed record's bytes this sink lets go once it serialized a record, for the
        later children of a parent with several (set by the task; None for the only child of its parents:
        a forward's record context ends with the forward, so its freeing would change nothing there)."""
        self.on_serialization_error: Callable[[SinkSerializationError], bool] | None = None
        """The task's production handler for a record this sink cannot serialize (set by the task): True
        when it resumed (the record is dropped), False when it failed. None: every such error fails."""
        self.on_unavailable: Callable[[SinkNode, str, Record, bytes | None, bool, RetriableError], None] | None = None
        """Where a record goes that this sink cannot serialize because the schema registry cannot be reached
        (a `RetriableError`, no record's fault): the task holds it, with its key's bytes when only the value
        failed, and serializes it again later (`streamlet.actors.held_output`). None: such an error fails."""

    def process(self, record: Record) -> None:
        topic = self.topic
        k, v = record[0], record[1]
        try:  # `_serialize` inlined, with the serdes' fast paths (see `serdes.FastPath`)
            key = self._encode_key(k) if type(k) is self._key_type else self._serialize_key(topic, k)
            value = self._encode_value(v) if type(v) is self._value_type else self._serialize_value(topic, v)
        except Exception:
            serialized = self._serialize(topic, record)  # the serdes' own calls: their result or error
            if serialized is None:
                return  # the production handler dropped the record
            key, value = serialized
        task = self.task
        if task is not None:  # as Kafka Streams' record collector frees the raw record from the record context
            task.current_raw = None
        partitions = self._partitions or self._partition_count()
        partition: int | None = None
        if self.partitioner is not None:
            partition = self.partitioner(topic, k, v, partitions)
        if partition is None:
            partition = self.collector.next_round_robin(topic) if key is None else default_partition(key, partitions)
        timestamp = record[2]
        if timestamp < 0:
            raise SerializationError(f"sink {self.name!r}: negative timestamp {timestamp}")
        self.collector.send(topic, key, value, timestamp, record[3], partition)

    def _serialize(self, topic: str, record: Record) -> tuple[bytes | None, bytes | None] | None:
        """The record's key and value bytes, or None when they cannot be made and the production handler
        resumed (as Kafka Streams' record collector asks it, in the sink): the record is dropped."""
        key: bytes | None = None
        key_done = False
        try:
            key = self._serialize_key(topic, record.key)
            key_done = True
            return key, self._serialize_value(topic, record.value)
        except Exception as exc:
            if self.on_unavailable is not None and isinstance(exc, RetriableError):
                self.on_unavailable(self, topic, record, key, key_done, exc)
                return None  # held: the task serializes it again later and puts it where it belongs
            error = self.serialization_error(topic, record, exc)
        if self.handled(error):
            return None
        raise error

    def handled(self, error: SinkSerializationError) -> bool:
        """The production handler's answer for a record this sink cannot serialize: True when it resumed."""
        handler = self.on_serialization_error
        return handler is not None and handler(error)

    def serialization_error(self, topic: str, record: Record, exc: Exception) -> SinkSerializationError:
        """A `SinkSerializationError` (a serde's own `SerializationError` keeps its message). When the
        production handler fails on it, it is the processing error of the processor that forwarded here."""
        message = str(exc) if isinstance(exc, SerializationError) else (
            f"sink {self.name!r} could not serialize a record for topic {topic!r}: "
            f"{type(exc).__name__}: {exc} (check the serdes given to to()/add_sink or the defaults)")
        error = SinkSerializationError(message, self.name, topic, record[0], record[1], record[2], record[3], exc)
        error.__cause__ = exc
        return error

    def _partition_count(self) -> int:
        self._partitions = self.collector.partition_count(self.topic)
        return self._partitions


class DynamicSinkNode(SinkNode):
    """A sink that sends each record to the topic its `TopicNameExtractor` names (Kafka Streams' `to(extractor)`).

    The extractor sees the record's key and value and a record context with the record's timestamp and
    headers and the input record's topic, partition and offset. A topic the runtime has not seen before
    has no known partition count: the record is deferred and partitioned at the batch boundary, once
    the runtime has looked the topic up (see `RecordCollector.defer`)."""

    def __init__(
        self,
        name: str,
        extractor: Callable[[Any, Any, Any], str],
        key_serializer: Serializer[Any],
        value_serializer: Serializer[Any],
        partitioner: StreamPartitioner | None,
        collector: RecordCollector,
        record_context: Callable[[], Any],
    ) -> None:
        super().__init__(name, "", key_serializer, value_serializer, partitioner, collector)
        self.extractor: Callable[[Any, Any, Any], object] = extractor
        """Returns `object`, not `str`: compiled, a wrong return would fail on mypyc's check, not on ours."""
        self._record_context = record_context
        self._counts: dict[str, int] = {}

    def process(self, record: Record) -> None:
        context = self._record_context()._replace(timestamp=record.timestamp, headers=record.headers)
        topic = self.extractor(record.key, record.value, context)
        if not isinstance(topic, str) or not topic:
            raise SerializationError(f"sink {self.name!r}: the topic name extractor returned {topic!r}, not a topic")
        serialized = self._serialize(topic, record)
        if serialized is None:
            return  # the production handler dropped the record
        key, value = serialized
        task = self.task
        if task is not None:
            task.current_raw = None
        if record.timestamp < 0:
            raise SerializationError(f"sink {self.name!r}: negative timestamp {record.timestamp}")
        collector = self.collector
        partitions = self._counts.get(topic)
        if partitions is None:
            partitions = collector.known_partition_count(topic)
            if partitions is None:
                collector.defer(topic, _new(_ProducedRecord, (key, value, record.timestamp, record.headers)),
                                record.key, record.value, self.partitioner)
                return
            self._counts[topic] = partitions
        partition: int | None = None
        if self.partitioner is not None:
            partition = self.partitioner(topic, record.key, record.value, partitions)
        if partition is None:
            partition = collector.next_round_robin(topic) if key is None else default_partition(key, partitions)
        collector.send(topic, key, value, record.timestamp, record.headers, partition)
