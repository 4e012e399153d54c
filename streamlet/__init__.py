"""streamlet: Kafka Streams for Python.

The public API (see API.md) is importable from here: the DSL (`StreamsBuilder`, `KStream`, ...), the
Processor API (`Topology`, `Processor`, `ProcessorContext`, `Record`), serdes, config, state stores and
the `KafkaStreams` runtime. Everything under `streamlet.actors`, `streamlet.runtime` and the stores'
implementation modules is internal and may change without notice. Testing helpers live in
`streamlet.testing`.
"""

from streamlet.config import StreamsConfig
from streamlet.dsl import (
    Branched,
    BranchedKStream,
    BufferConfig,
    Consumed,
    Grouped,
    Joined,
    JoinWindows,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    SessionWindowedKStream,
    SessionWindows,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TimeWindowedKStream,
    TimeWindows,
)
from streamlet.errors import (
    ApplicationShutdownError,
    ConfigError,
    DeserializationError,
    InvalidStateStoreError,
    SerializationError,
    StreamsError,
    TopologyError,
)
from streamlet.processor import (
    Cancellable,
    Processor,
    ProcessorContext,
    PunctuationType,
    RecordTimestampExtractor,
    TimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)
from streamlet.record import KeyValue, Record, RecordMetadata
from streamlet.runtime.kafka_streams import KafkaStreams, State, StreamThreadExceptionResponse
from streamlet.serdes import Deserializer, Serde, Serdes, Serializer
from streamlet.stores import (
    KeyValueBytesStoreSupplier,
    KeyValueIterator,
    KeyValueStore,
    StateStore,
    StoreBuilder,
    Stores,
    TimestampedKeyValueStore,
    TimestampedWindowStore,
    ValueAndTimestamp,
    WindowStore,
)
from streamlet.topology import Topology
from streamlet.topology_description import TopologyDescription
from streamlet.windowed import SessionWindow, TimeWindow, Window, Windowed
from streamlet.windowed_serdes import WindowedSerdes

__all__ = [
    "ApplicationShutdownError",
    "Branched",
    "BranchedKStream",
    "BufferConfig",
    "Cancellable",
    "ConfigError",
    "Consumed",
    "DeserializationError",
    "Deserializer",
    "Grouped",
    "InvalidStateStoreError",
    "JoinWindows",
    "Joined",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "KafkaStreams",
    "KeyValue",
    "KeyValueBytesStoreSupplier",
    "KeyValueIterator",
    "KeyValueStore",
    "Materialized",
    "Named",
    "Processor",
    "ProcessorContext",
    "Produced",
    "PunctuationType",
    "Record",
    "RecordMetadata",
    "RecordTimestampExtractor",
    "Repartitioned",
    "Serde",
    "Serdes",
    "SerializationError",
    "Serializer",
    "SessionWindow",
    "SessionWindowedKStream",
    "SessionWindows",
    "State",
    "StateStore",
    "StoreBuilder",
    "Stores",
    "StreamJoined",
    "StreamThreadExceptionResponse",
    "StreamsBuilder",
    "StreamsConfig",
    "StreamsError",
    "Suppressed",
    "TimeWindow",
    "TimeWindowedKStream",
    "TimeWindows",
    "TimestampExtractor",
    "TimestampedKeyValueStore",
    "TimestampedWindowStore",
    "Topology",
    "TopologyDescription",
    "TopologyError",
    "UsePartitionTimeOnInvalidTimestamp",
    "ValueAndTimestamp",
    "WallclockTimestampExtractor",
    "Window",
    "WindowStore",
    "Windowed",
    "WindowedSerdes",
]
