"""streamlet: Kafka Streams for Python.

The public API is importable from here: the DSL (`StreamsBuilder`, `KStream`, ...), the Processor API
(`Topology`, `Processor`, `ProcessorContext`, `Record`), serdes, config, state stores and the
`KafkaStreams` client; `help()` on each tells what it does, and the documentation (docs/, `make docs`)
has a getting-started guide, the concepts mapped from Kafka Streams, and operations. Everything under
`streamlet.actors`, `streamlet.runtime` and the stores' implementation modules is internal and may
change without notice. Testing helpers live in `streamlet.testing`.
"""

# First: decides between the compiled hot path and pure Python before any hot module loads (_compiled.py).
from streamlet import _compiled  # noqa: F401

# isort: split
from streamlet.config import StreamsConfig
from streamlet.dsl import (
    Branched,
    BranchedKStream,
    BufferConfig,
    CogroupedKStream,
    Consumed,
    EmitStrategy,
    GlobalKTable,
    Grouped,
    Joined,
    JoinWindows,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    Materialized,
    Named,
    Printed,
    Produced,
    Repartitioned,
    SessionWindowedKStream,
    SessionWindows,
    SlidingWindowedKStream,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TableJoined,
    TimeWindowedKStream,
    TimeWindows,
)
from streamlet.errors import (
    ApplicationShutdownError,
    ConfigError,
    DeserializationError,
    InvalidStateStoreError,
    InvalidStateStorePartitionError,
    SerializationError,
    StateStoreMigratedError,
    StateStoreNotAvailableError,
    StreamsError,
    StreamsNotStartedError,
    TopologyError,
    UnknownStateStoreError,
)
from streamlet.offset_reset import AutoOffsetReset, NoOffsetResetPolicyError
from streamlet.processor import (
    Cancellable,
    FixedKeyProcessor,
    FixedKeyProcessorContext,
    FixedKeyRecord,
    Processor,
    ProcessorContext,
    PunctuationType,
    RecordTimestampExtractor,
    TimestampExtractor,
    TopicNameExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)
from streamlet.queries import QueryableStoreTypes, StoreQueryParameters
from streamlet.queries.metadata import HostInfo, KeyQueryMetadata, StreamsMetadata
from streamlet.record import KeyValue, Record, RecordMetadata
from streamlet.runtime.close_options import CloseOptions, GroupMembershipOperation
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
from streamlet.stores.api import RecordContext
from streamlet.topology import Topology
from streamlet.topology_description import TopologyDescription
from streamlet.windowed import SessionWindow, TimeWindow, Window, Windowed
from streamlet.windowed_serdes import WindowedSerdes

__all__ = [
    "ApplicationShutdownError",
    "AutoOffsetReset",
    "Branched",
    "BranchedKStream",
    "BufferConfig",
    "Cancellable",
    "CloseOptions",
    "CogroupedKStream",
    "ConfigError",
    "Consumed",
    "DeserializationError",
    "Deserializer",
    "EmitStrategy",
    "FixedKeyProcessor",
    "FixedKeyProcessorContext",
    "FixedKeyRecord",
    "GlobalKTable",
    "GroupMembershipOperation",
    "Grouped",
    "HostInfo",
    "InvalidStateStoreError",
    "InvalidStateStorePartitionError",
    "JoinWindows",
    "Joined",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "KafkaStreams",
    "KeyQueryMetadata",
    "KeyValue",
    "KeyValueBytesStoreSupplier",
    "KeyValueIterator",
    "KeyValueStore",
    "Materialized",
    "Named",
    "NoOffsetResetPolicyError",
    "Printed",
    "Processor",
    "ProcessorContext",
    "Produced",
    "PunctuationType",
    "QueryableStoreTypes",
    "Record",
    "RecordContext",
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
    "SlidingWindowedKStream",
    "SlidingWindows",
    "State",
    "StateStore",
    "StateStoreMigratedError",
    "StateStoreNotAvailableError",
    "StoreBuilder",
    "StoreQueryParameters",
    "Stores",
    "StreamJoined",
    "StreamThreadExceptionResponse",
    "StreamsBuilder",
    "StreamsConfig",
    "StreamsError",
    "StreamsMetadata",
    "StreamsNotStartedError",
    "Suppressed",
    "TableJoined",
    "TimeWindow",
    "TimeWindowedKStream",
    "TimeWindows",
    "TimestampExtractor",
    "TimestampedKeyValueStore",
    "TimestampedWindowStore",
    "TopicNameExtractor",
    "Topology",
    "TopologyDescription",
    "TopologyError",
    "UnknownStateStoreError",
    "UsePartitionTimeOnInvalidTimestamp",
    "ValueAndTimestamp",
    "WallclockTimestampExtractor",
    "Window",
    "WindowStore",
    "Windowed",
    "WindowedSerdes",
]
