"""`StreamsBuilder`: where a DSL program starts (`stream`, `table`) and ends (`build`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from streamlet.config import StreamsConfig
from streamlet.dsl import naming
from streamlet.dsl.global_ktable import GlobalKTable, global_table
from streamlet.dsl.graph import GraphNode, InternalBuilder
from streamlet.dsl.kstream import KStream
from streamlet.dsl.ktable import KTable, table_source
from streamlet.dsl.options import Consumed, Materialized
from streamlet.dsl.store_suppliers import building
from streamlet.dsl_store_settings import topology_in_memory
from streamlet.errors import TopologyError
from streamlet.processor import ProcessorSupplier
from streamlet.stores.api import StoreBuilder
from streamlet.topology import Topology

log = logging.getLogger(__name__)

def _source_writer(name: str, topics: list[str], consumed: Consumed) -> Callable[[Topology], None]:
    key_serde, value_serde = consumed.key_serde, consumed.value_serde

    def write(topology: Topology) -> None:
        topology.add_source(
            name, *topics,
            key_deserializer=None if key_serde is None else key_serde.deserializer,
            value_deserializer=None if value_serde is None else value_serde.deserializer,
            timestamp_extractor=consumed.timestamp_extractor,
            offset_reset=consumed.offset_reset,
        )

    return write


class StreamsBuilder:
    """Builds a `Topology` with the DSL; one builder per application topology.

    `config` holds the settings Kafka Streams reads while building (its `TopologyConfig`):
    `ensure.explicit.internal.resource.naming` (default False) makes `build()` raise a `TopologyError`
    naming every state store, changelog and repartition topic whose name was generated (KIP-1111);
    without it they are only logged. `dsl.store.suppliers.class` (or the deprecated `default.dsl.store`:
    `rocksDB` / `in_memory`) picks the backend of every DSL store whose operation chose none, over the
    application's `dsl.store.suppliers.class` (`streamlet.dsl.store_suppliers`)."""

    def __init__(self, config: StreamsConfig | Mapping[str, Any] | None = None) -> None:
        self._internal = InternalBuilder()
        settings = StreamsConfig.of(config)
        self._ensure_explicit_names = str(settings.get("ensure.explicit.internal.resource.naming")).lower() == "true"
        self._dsl_in_memory = topology_in_memory(settings)

    def stream(self, topics: str | Iterable[str], consumed: Consumed | None = None) -> KStream:
        """A `KStream` of the records of `topics` (one topic name or several)."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        if not topic_list or not all(isinstance(t, str) and t for t in topic_list):
            raise TopologyError(f"stream() needs one or more topic names, got {topics!r}")
        consumed = consumed or Consumed()
        name = self._internal.names.name_or_generate(consumed.name, naming.SOURCE)
        write_source = _source_writer(name, topic_list, consumed)
        node = self._internal.add(GraphNode(name, lambda topology, _parents: write_source(topology)))
        return KStream(self._internal, name, consumed.key_serde, consumed.value_serde, False, node)

    def table(self, topic: str, consumed: Consumed | None = None, materialized: Materialized | None = None) -> KTable:
        """A `KTable` of `topic` read as a changelog: the latest value per key, None deleting it.

        It keeps a store when `materialized` names one (then it is queryable) or when a downstream
        operation needs it. The topic and the store share serdes: `consumed`'s, else `materialized`'s.
        """
        if not isinstance(topic, str) or not topic:
            raise TopologyError(f"table() needs a topic name, got {topic!r}")
        names = self._internal.names
        consumed = consumed or Consumed()
        materialized = materialized or Materialized()
        materialized = materialized.copy(key_serde=consumed.key_serde or materialized.key_serde,
                                         value_serde=consumed.value_serde or materialized.value_serde)
        store_name = names.materialized_store_name(materialized.name, topic + "-", materialized.logging)
        consumed_for_source = Consumed(materialized.key_serde, materialized.value_serde,
                                       consumed.timestamp_extractor, consumed.offset_reset)
        source_name = names.suffixed_or_generate(consumed.name, naming.TABLE_SOURCE_SUFFIX, naming.SOURCE)
        table_source_name = names.name_or_generate(consumed.name, naming.KTABLE_SOURCE)
        return table_source(
            self._internal, source_name, table_source_name, store_name, materialized,
            _source_writer(source_name, [topic], consumed_for_source),
        )

    def global_table(self, topic: str, consumed: Consumed | None = None,
                     materialized: Materialized | None = None) -> GlobalKTable:
        """A `GlobalKTable` of `topic`: every instance keeps all its partitions in a global store (named by
        `materialized`, else generated), kept current by the global thread; streams join it by any key.
        The topic's serdes are `consumed`'s, else `materialized`'s. A `materialized` must name its store
        (`build()` refuses one without a name, as Kafka Streams 4.x does)."""
        return global_table(self._internal, topic, consumed, materialized)

    def add_global_store(self, store_builder: StoreBuilder, topic: str, consumed: Consumed | None,
                         supplier: ProcessorSupplier) -> StreamsBuilder:
        """A global store kept from `topic` (all partitions) by the processors `supplier` makes: each
        record read goes to `process`, which puts it in the store (forwarding nothing). The store is
        never change-logged (the topic is its changelog); every processor can read it."""
        if not isinstance(store_builder, StoreBuilder):
            raise TypeError(f"add_global_store() takes a store builder, got {store_builder!r}")
        if not callable(supplier):
            raise TypeError(f"supplier must be callable, got {supplier!r}")
        store_builder.with_logging_disabled()  # as Kafka Streams' DSL does for a global store
        names = self._internal.names
        consumed = consumed or Consumed()
        source_name = names.suffixed_or_generate(consumed.name, naming.TABLE_SOURCE_SUFFIX, naming.SOURCE)
        processor_name = names.name_or_generate(consumed.name, naming.KTABLE_SOURCE)
        key_serde, value_serde = consumed.key_serde, consumed.value_serde

        def write(topology: Topology, _parents: list[str]) -> None:
            topology.add_global_store(
                store_builder, source_name, topic, processor_name, supplier,
                key_deserializer=None if key_serde is None else key_serde.deserializer,
                value_deserializer=None if value_serde is None else value_serde.deserializer,
                timestamp_extractor=consumed.timestamp_extractor,
            )

        self._internal.add(GraphNode(processor_name, write))
        return self

    def add_state_store(self, store_builder: StoreBuilder) -> StreamsBuilder:
        """Add a store for `KStream.process(supplier, store_name)` to use."""
        if not isinstance(store_builder, StoreBuilder):
            raise TypeError(f"add_state_store() takes a store builder, got {store_builder!r}")
        if any(s.name == store_builder.name for s in self._internal.state_stores):
            raise TopologyError(f"a state store named {store_builder.name!r} was already added")
        self._internal.state_stores.append(store_builder)
        return self

    def build(self) -> Topology:
        """The `Topology` of everything defined so far (each call writes a fresh one)."""
        unprovided = self._internal.names.unprovided_names()
        if unprovided is not None:
            if self._ensure_explicit_names:
                raise TopologyError("Invalid topology: " + unprovided)
            log.info("internal resources with generated names (set ensure.explicit.internal.resource.naming "
                     "to refuse them; renaming them later needs an application reset):\n%s", unprovided)
        with building(self._dsl_in_memory) as follow_application:
            topology = self._internal.write()
        topology.dsl_default_stores = follow_application
        return topology
