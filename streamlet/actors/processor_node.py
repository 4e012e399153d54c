"""Runtime processor nodes: one per topology node per task, wired to their children.

Every node exposes `process(record)`; a parent's forward is a direct call on its children, so a
record goes from source to sink in one synchronous call chain with no queue in between.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from streamlet.actors.record_collector import ProducedRecord
from streamlet.errors import SerializationError, SinkSerializationError
from streamlet.partitioner import _positive_hash_memo as _partition_hashes
from streamlet.partitioner import default_partition
from streamlet.processor import Processor, TimestampExtractor
from streamlet.record import Record
from streamlet.serdes import Deserializer, Serializer, fast_serializer
from streamlet.topology import StreamPartitioner

if TYPE_CHECKING:
    from streamlet.actors.processor_context import NodeContext
    from streamlet.actors.record_collector import RecordCollector

_new = tuple.__new__  # a NamedTuple built without its Python-level __new__ frame (hot path)


def entry_point(node: Node) -> Callable[[Record], None]:
    """What a parent calls to hand `node` a record: a processor node's processor's own `process` (one call
    per hop instead of two), any other node's `process`. `ProcessorNode.process` is a real method, not
    an attribute bound to the processor's, so that mypyc can compile the class (`streamlet/_compiled.py`)."""
    return node.processor.process if isinstance(node, ProcessorNode) else node.process


class Node:
    """A node of a task's processor graph."""

    name: str
    children: list[Node]

    def process(self, record: Record) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

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

    def init(self) -> None:
        if len(self.children) == 1:
            self.deliver = entry_point(self.children[0])

    def process(self, record: Record) -> None:
        for child in self.children:
            entry_point(child)(record)


class ProcessorNode(Node):
    """Wraps a user's (or the DSL's) `Processor` with its own context."""

    def __init__(self, name: str, processor: Processor, store_names: list[str]) -> None:
        self.name = name
        self.processor = processor
        self.store_names = store_names
        self.children = []
        self.children_by_name: dict[str, Node] = {}
        self.child_entries: list[Callable[[Record], None]] = []
        """Each child's `entry_point`, for a forward to all children (set in `init`)."""
        self.context: NodeContext | None = None

    def process(self, record: Record) -> None:
        """Parents on the hot path call `entry_point(node)` instead, which skips this frame."""
        self.processor.process(record)

    def init(self) -> None:
        assert self.context is not None
        self.children_by_name = {c.name: c for c in self.children}
        self.child_entries = [entry_point(c) for c in self.children]
        self.processor.init(self.context)

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

    def process(self, record: Record) -> None:
        topic = self.topic
        k, v = record[0], record[1]
        try:  # `_serialize` inlined, with the serdes' fast paths (see `serdes.FastPath`)
            key = self._encode_key(k) if type(k) is self._key_type else self._serialize_key(topic, k)
            value = self._encode_value(v) if type(v) is self._value_type else self._serialize_value(topic, v)
        except Exception:
            key, value = self._serialize(topic, record)  # the serdes' own calls: their result or error
        partitions = self._partitions or self._partition_count()
        partition: int | None = None
        if self.partitioner is not None:
            partition = self.partitioner(topic, k, v, partitions)
        if partition is None:
            if key is None:
                partition = self.collector.next_round_robin(topic)
            else:
                h = _partition_hashes.get(key)  # default_partition's memo, read without its call
                partition = default_partition(key, partitions) if h is None else h % partitions
        timestamp = record[2]
        if timestamp < 0:
            raise SerializationError(f"sink {self.name!r}: negative timestamp {timestamp}")
        self.collector.send(topic, key, value, timestamp, record[3], partition)

    def _serialize(self, topic: str, record: Record) -> tuple[bytes | None, bytes | None]:
        try:
            return self._serialize_key(topic, record.key), self._serialize_value(topic, record.value)
        except Exception as exc:
            self._serialization_failed(topic, record, exc)

    def _serialization_failed(self, topic: str, record: Record, exc: Exception) -> NoReturn:
        """Raise `SinkSerializationError` (a serde's own `SerializationError` keeps its message), which the
        task hands to the production exception handler."""
        message = str(exc) if isinstance(exc, SerializationError) else (
            f"sink {self.name!r} could not serialize a record for topic {topic!r}: "
            f"{type(exc).__name__}: {exc} (check the serdes given to to()/add_sink or the defaults)")
        raise SinkSerializationError(message, self.name, topic, record[0], record[1], record[2], record[3],
                                     exc) from exc

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
        key, value = self._serialize(topic, record)
        if record.timestamp < 0:
            raise SerializationError(f"sink {self.name!r}: negative timestamp {record.timestamp}")
        collector = self.collector
        partitions = self._counts.get(topic)
        if partitions is None:
            partitions = collector.known_partition_count(topic)
            if partitions is None:
                collector.defer(topic, _new(ProducedRecord, (key, value, record.timestamp, record.headers)),
                                record.key, record.value, self.partitioner)
                return
            self._counts[topic] = partitions
        partition: int | None = None
        if self.partitioner is not None:
            partition = self.partitioner(topic, record.key, record.value, partitions)
        if partition is None:
            partition = collector.next_round_robin(topic) if key is None else default_partition(key, partitions)
        collector.send(topic, key, value, record.timestamp, record.headers, partition)
