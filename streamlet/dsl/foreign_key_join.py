"""`KTable.join(other, foreign_key_extractor, joiner)`: the DSL side of the foreign-key join (KIP-213).

Written as Kafka Streams' `KTableImpl.doJoinOnForeignKey` writes it: the same nodes, created (and
numbered) in the same order, with the same names, store and internal topics —
`<app>-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-n-topic` (partitioned like the right table) and
`<app>-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-n-topic` (partitioned like the left table), or
`<name>-subscription-registration-topic` / `<name>-subscription-response-topic` with
`TableJoined(name=...)`. The processors are in processors/foreign_key_join.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamlet.dsl import naming
from streamlet.dsl.arity import required_positionals
from streamlet.dsl.graph import GraphNode
from streamlet.dsl.materialize import is_versioned, subscription_store_builder, timestamped_store_builder
from streamlet.dsl.options import Materialized
from streamlet.dsl.processors.fk_wire import (
    ResponseWrapperDeserializer,
    ResponseWrapperSerializer,
    SubscriptionResponseWrapper,
    SubscriptionWrapperDeserializer,
    SubscriptionWrapperSerializer,
)
from streamlet.dsl.processors.foreign_key_join import (
    ForeignTableJoinSupplier,
    ResponseJoinSupplier,
    SubscriptionJoinSupplier,
    SubscriptionReceiveSupplier,
    SubscriptionSendSupplier,
)
from streamlet.dsl.processors.table import TableSourceSupplier
from streamlet.dsl.table_joined import TableJoined
from streamlet.errors import TopologyError
from streamlet.topology import InternalTopicSpec, StreamPartitioner, Topology

if TYPE_CHECKING:
    from streamlet.dsl.ktable import KTable

FK_JOIN = "KTABLE-FK-JOIN-"
FK_JOIN_STATE_STORE = FK_JOIN + "SUBSCRIPTION-STATE-STORE-"
SUBSCRIPTION_REGISTRATION = FK_JOIN + "SUBSCRIPTION-REGISTRATION-"
SUBSCRIPTION_RESPONSE = FK_JOIN + "SUBSCRIPTION-RESPONSE-"
SUBSCRIPTION_PROCESSOR = FK_JOIN + "SUBSCRIPTION-PROCESSOR-"
SUBSCRIPTION_RESPONSE_RESOLVER = FK_JOIN + "SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
FK_JOIN_OUTPUT = FK_JOIN + "OUTPUT-"
TOPIC_SUFFIX = "-topic"
KTABLE_SINK = "KTABLE-SINK-"  # the table DSL's own sink and source prefixes (KTableImpl's)


def _response_partition(_topic: str, _key: Any, value: SubscriptionResponseWrapper, _n: int) -> int | None:
    """Kafka Streams' default for the responses: back to the partition the subscription came from."""
    partition = value.primary_partition
    return None if partition is None or partition < 0 else partition


def _keys_only(partitioner: StreamPartitioner) -> StreamPartitioner:
    """A `TableJoined` partitioner sees keys only (Kafka Streams passes a null value)."""
    return lambda topic, key, _value, n: partitioner(topic, key, None, n)


def sees_key(extractor: Callable[..., Any]) -> bool:
    """Whether a foreign-key extractor takes the row's key and value (KIP-1104, Kafka Streams' BiFunction
    overload) rather than the value alone: two required positional parameters say so. A callable whose
    signature cannot be read (a builtin) takes the value, as before KIP-1104."""
    return required_positionals(extractor) == 2


def foreign_key_join(left_table: KTable, other: KTable, extractor: Callable[..., Any],
                     joiner: Callable[[Any, Any], Any], table_joined: TableJoined | None,
                     materialized: Materialized | None, left: bool) -> KTable:
    """The join's graph nodes, in Kafka Streams' order (names are generated as they are created)."""
    from streamlet.dsl.ktable import KTable  # not at the top: ktable imports this module (KTable.join calls it)

    if not isinstance(other, KTable):
        raise TypeError(f"a foreign-key join takes a KTable, got {other!r}")
    if other._builder is not left_table._builder:
        raise TopologyError("cannot join tables from different StreamsBuilders")
    if not callable(extractor):
        raise TypeError(f"foreign_key_extractor must be callable, got {extractor!r}")
    if not callable(joiner):
        raise TypeError(f"joiner must be callable, got {joiner!r}")
    if table_joined is not None and not isinstance(table_joined, TableJoined):
        raise TypeError(f"table_joined must be a TableJoined, got {table_joined!r}")
    if materialized is not None and not isinstance(materialized, Materialized):
        raise TypeError(f"materialized must be a Materialized, got {materialized!r}")
    options = table_joined or TableJoined()
    builder = left_table._builder
    names = builder.names
    given = options.name

    def name(suffix: str, prefix: str) -> str:
        return names.suffixed_or_generate(given, suffix, prefix)

    other._enable_sending_old_values(True)  # a right row that did not change answers nobody
    left_table._enable_sending_old_values(True)  # a changed foreign key must unsubscribe the old one

    subscription_topic = name("-subscription-registration", SUBSCRIPTION_REGISTRATION) + TOPIC_SUFFIX
    fk_serde, pk_serde = other.key_serde, left_table.key_serde
    send_name = name("-subscription-registration-processor", SUBSCRIPTION_REGISTRATION)
    send = SubscriptionSendSupplier(extractor, subscription_topic, fk_serde, left_table.value_serde, left,
                                    sees_key(extractor))
    send.versioned_semantics = left_table._is_versioned()  # out-of-order left updates subscribe nothing

    def write_send(topology: Topology, parents: list[str]) -> None:
        topology.add_processor(send_name, send, *parents)

    send_node = builder.add(GraphNode(send_name, write_send), left_table._node)

    sink_name = name("-subscription-registration-sink", KTABLE_SINK)
    sink_partitioner = None if options.other_partitioner is None else _keys_only(options.other_partitioner)

    def write_sink(topology: Topology, parents: list[str]) -> None:
        topology.add_internal_topic(InternalTopicSpec(subscription_topic, "repartition", copartition=True))
        topology.add_sink(sink_name, subscription_topic, *parents,
                          key_serializer=None if fk_serde is None else fk_serde.serializer,
                          value_serializer=SubscriptionWrapperSerializer(pk_serde), partitioner=sink_partitioner)

    sink_node = builder.add(GraphNode(sink_name, write_sink), send_node)

    source_name = name("-subscription-registration-source", naming.KTABLE_SOURCE)

    def write_source(topology: Topology, _parents: list[str]) -> None:
        topology.add_source(source_name, subscription_topic,
                            key_deserializer=None if fk_serde is None else fk_serde.deserializer,
                            value_deserializer=SubscriptionWrapperDeserializer(pk_serde))

    source_node = builder.add(GraphNode(source_name, write_source), sink_node)

    store_name = name("-subscription-store", FK_JOIN_STATE_STORE)
    receive_name = name("-subscription-receive", SUBSCRIPTION_PROCESSOR)
    receive = SubscriptionReceiveSupplier(store_name, subscription_topic, fk_serde, pk_serde)

    def write_receive(topology: Topology, parents: list[str]) -> None:
        topology.add_processor(receive_name, receive, *parents)
        topology.add_state_store(subscription_store_builder(store_name), receive_name)

    receive_node = builder.add(GraphNode(receive_name, write_receive), source_node)

    foreign_getter = other._value_getter_supplier()
    join_foreign_name = name("-subscription-join-foreign", SUBSCRIPTION_PROCESSOR)
    join_foreign = SubscriptionJoinSupplier(foreign_getter)

    def write_join_foreign(topology: Topology, parents: list[str]) -> None:
        topology.add_processor(join_foreign_name, join_foreign, *parents)
        topology.connect_processor_and_state_stores(join_foreign_name, *foreign_getter.store_names)

    join_foreign_node = builder.add(GraphNode(join_foreign_name, write_join_foreign), receive_node)

    foreign_join_name = name("-foreign-join-subscription", SUBSCRIPTION_PROCESSOR)
    foreign_join = ForeignTableJoinSupplier(store_name, subscription_topic, fk_serde, pk_serde)
    foreign_join.versioned_semantics = other._is_versioned()  # out-of-order right updates answer nothing

    def write_foreign_join(topology: Topology, parents: list[str]) -> None:
        topology.add_processor(foreign_join_name, foreign_join, *parents)
        topology.connect_processor_and_state_stores(foreign_join_name, store_name)

    foreign_join_node = builder.add(GraphNode(foreign_join_name, write_foreign_join), other._node)

    response_topic = name("-subscription-response", SUBSCRIPTION_RESPONSE) + TOPIC_SUFFIX
    response_sink_name = name("-subscription-response-sink", KTABLE_SINK)
    response_partitioner: StreamPartitioner = (_response_partition if options.partitioner is None
                                               else _keys_only(options.partitioner))
    foreign_value_serde = other.value_serde

    def write_response_sink(topology: Topology, parents: list[str]) -> None:
        topology.add_internal_topic(InternalTopicSpec(response_topic, "repartition", copartition=True))
        topology.add_sink(response_sink_name, response_topic, *parents,
                          key_serializer=None if pk_serde is None else pk_serde.serializer,
                          value_serializer=ResponseWrapperSerializer(foreign_value_serde),
                          partitioner=response_partitioner)

    # added after the foreign-table join node, as Kafka Streams re-adds it (its build priority)
    response_sink_node = builder.add(GraphNode(response_sink_name, write_response_sink),
                                     join_foreign_node, foreign_join_node)

    response_source_name = name("-subscription-response-source", naming.KTABLE_SOURCE)

    def write_response_source(topology: Topology, _parents: list[str]) -> None:
        topology.add_source(response_source_name, response_topic,
                            key_deserializer=None if pk_serde is None else pk_serde.deserializer,
                            value_deserializer=ResponseWrapperDeserializer(foreign_value_serde))

    response_source_node = builder.add(GraphNode(response_source_name, write_response_source), response_sink_node)

    primary_getter = left_table._value_getter_supplier()
    resolver_name = name("-subscription-response-resolver", SUBSCRIPTION_RESPONSE_RESOLVER)
    resolver = ResponseJoinSupplier(primary_getter, left_table.value_serde, subscription_topic, joiner, left)

    def write_resolver(topology: Topology, parents: list[str]) -> None:
        topology.add_processor(resolver_name, resolver, *parents)
        topology.connect_processor_and_state_stores(resolver_name, *primary_getter.store_names)

    resolver_node = builder.add(GraphNode(resolver_name, write_resolver), response_source_node)

    result_name = name("-result", FK_JOIN_OUTPUT)
    materialized = materialized or Materialized()
    result_store = names.materialized_store_name(materialized.name, FK_JOIN_OUTPUT, materialized.logging)
    materialized = materialized.copy(key_serde=materialized.key_serde or left_table.key_serde)
    result = TableSourceSupplier(result_store, materialized.name)

    def write_result(topology: Topology, parents: list[str]) -> None:
        topology.add_processor(result_name, result, *parents)
        if result.materialized:
            topology.add_state_store(timestamped_store_builder(materialized, result_store),
                                     result_name)

    result_node = builder.add(GraphNode(result_name, write_result), resolver_node)
    return KTable(builder, result_name, materialized.key_serde, materialized.value_serde, materialized.name,
                  result, result_node, output_versioned=is_versioned(materialized))
