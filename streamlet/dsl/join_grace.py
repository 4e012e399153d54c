"""The grace period of a stream-table join (KIP-923): its buffer's name, serdes and store.

Kept apart from the join processor because the checks here run when the topology is written: the
joined table's stores must be versioned stores whose history retention is at least the grace period
(Kafka Streams' `StreamTableJoinNode` checks the same, with the same messages), and the buffer is
built on the backend of those stores, LevelDB unless the table lives in memory. Kafka Streams always
keeps the buffer in RocksDB; a table kept in memory here gets an in-memory buffer, restored from its
changelog on every start like the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streamlet.errors import TopologyError
from streamlet.serdes import Serde
from streamlet.stores.factory import Stores
from streamlet.stores.timeordered.buffer import TimeOrderedKeyValueBufferBuilder
from streamlet.stores.versioned.builders import VersionedKeyValueStoreBuilder

if TYPE_CHECKING:
    from streamlet.topology import Topology

BUFFER_SUFFIX = "-Buffer"
GRACE_NEEDS_VERSIONED = "KTable must be versioned to use a grace period in a stream table join."
RETENTION_BELOW_GRACE = "History retention must be at least grace period."


@dataclass(frozen=True, slots=True)
class JoinBufferSpec:
    """What a grace-period join's processor needs of its buffer: the store's name, the grace period, the
    stream side's serdes (None: the configured defaults) and the topic name the serdes are called with
    (the join processor's name, as Kafka Streams passes it)."""

    store_name: str
    grace_ms: int
    key_serde: Serde[Any] | None
    value_serde: Serde[Any] | None
    serde_topic: str


def join_buffer_builder(topology: Topology, spec: JoinBufferSpec,
                        table_stores: tuple[str, ...]) -> TimeOrderedKeyValueBufferBuilder:
    """Check the joined table's stores (versioned, history retention >= grace) and build the buffer's builder."""
    persistent = False
    for store in table_stores:
        builder = topology.store_builders.get(store)
        if not isinstance(builder, VersionedKeyValueStoreBuilder):
            raise TopologyError(GRACE_NEEDS_VERSIONED)
        if spec.grace_ms > builder.history_retention_ms:
            raise TopologyError(RETENTION_BELOW_GRACE)
        persistent = persistent or builder.persistent
    supplier = (Stores.persistent_key_value_store(spec.store_name) if persistent
                else Stores.in_memory_key_value_store(spec.store_name))
    return TimeOrderedKeyValueBufferBuilder(supplier, spec.grace_ms)
