"""The Kafka Streams DSL for streamlet: `StreamsBuilder`, `KStream`, `KTable`, `KGroupedStream`, windows and options."""

from streamlet.dsl.branched import Branched, BranchedKStream
from streamlet.dsl.builder import StreamsBuilder
from streamlet.dsl.change import Change
from streamlet.dsl.cogrouped_stream import CogroupedKStream, WindowedCogroupedKStream
from streamlet.dsl.emit_strategy import EmitStrategy
from streamlet.dsl.global_ktable import GlobalKTable
from streamlet.dsl.grouped_stream import KGroupedStream
from streamlet.dsl.grouped_table import KGroupedTable
from streamlet.dsl.join_windows import JoinWindows
from streamlet.dsl.kstream import KStream
from streamlet.dsl.ktable import KTable
from streamlet.dsl.options import (
    Consumed,
    Grouped,
    Joined,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    StreamJoined,
)
from streamlet.dsl.printed import Printed
from streamlet.dsl.session_windowed_stream import SessionWindowedKStream
from streamlet.dsl.session_windows import SessionWindows
from streamlet.dsl.sliding_windowed_stream import SlidingWindowedKStream
from streamlet.dsl.sliding_windows import SlidingWindows
from streamlet.dsl.suppressed import BufferConfig, Suppressed
from streamlet.dsl.table_joined import TableJoined
from streamlet.dsl.time_windows import TimeWindows
from streamlet.dsl.windowed_stream import TimeWindowedKStream

__all__ = [
    "Branched",
    "BranchedKStream",
    "BufferConfig",
    "Change",
    "CogroupedKStream",
    "Consumed",
    "EmitStrategy",
    "GlobalKTable",
    "Grouped",
    "JoinWindows",
    "Joined",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "Materialized",
    "Named",
    "Printed",
    "Produced",
    "Repartitioned",
    "SessionWindowedKStream",
    "SessionWindows",
    "SlidingWindowedKStream",
    "SlidingWindows",
    "StreamJoined",
    "StreamsBuilder",
    "Suppressed",
    "TableJoined",
    "TimeWindowedKStream",
    "TimeWindows",
    "WindowedCogroupedKStream",
]
