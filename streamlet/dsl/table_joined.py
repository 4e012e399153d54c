"""`TableJoined`: the options of a foreign-key table join (Kafka Streams' `TableJoined`).

A foreign-key join routes subscriptions to the right table's partitions and answers back to the left
table's; when either table was written with a custom partitioner, the join must route the same way,
so it takes both partitioners. `name` names the join's processors, store and internal topics
(`<name>-subscription-registration-topic`, ...), instead of generated `KTABLE-FK-JOIN-...` names.
"""

from __future__ import annotations

from streamlet.dsl.options import validate_name
from streamlet.topology import StreamPartitioner


class TableJoined:
    """Options of `KTable.join(other, foreign_key_extractor, joiner, table_joined)`: `partitioner` partitions
    the left table's keys (the responses), `other_partitioner` the right table's (the subscriptions);
    both are called as `partitioner(topic, key, None, num_partitions)`, as Kafka Streams calls them.
    None means the default partitioning. `name` names the join's nodes, store and topics."""

    def __init__(self, partitioner: StreamPartitioner | None = None, other_partitioner: StreamPartitioner | None = None,
                 name: str | None = None) -> None:
        self.partitioner = partitioner
        self.other_partitioner = other_partitioner
        self.name = None if name is None else validate_name(name)

    def with_name(self, name: str) -> TableJoined:
        """A copy named `name` (Java's `TableJoined.as` / `withName`)."""
        return TableJoined(self.partitioner, self.other_partitioner, name)

    def __repr__(self) -> str:
        return (f"TableJoined(partitioner={self.partitioner!r}, other_partitioner={self.other_partitioner!r}, "
                f"name={self.name!r})")
