"""Schema'd serdes in Confluent's wire format, through a schema registry (Confluent's Java class names).

`GenericAvroSerde` (dicts) and `SpecificAvroSerde(record_type)` (a dataclass bound to its Avro schema),
configured with Confluent's settings (`schema.registry.url`, ...) by hand with `.configure(config, is_key)`
or, when given in `Consumed` / `Produced` / `Materialized` and not configured by hand, with the application's
config when the topology's tasks are built. `schema.registry.url=mock://SCOPE` is an in-process registry
for unit tests (as Java's `MockSchemaRegistry`); `drop_scope(scope)` empties one.

Needs the `registry` extra (`pip install 'streamlet[registry]'`: confluent-kafka's schema-registry client
with fastavro); `import streamlet` alone never imports this package.
"""

from __future__ import annotations

from streamlet.schema_registry.avro import GenericAvroSerde, SpecificAvroSerde
from streamlet.schema_registry.client import drop_scope
from streamlet.schema_registry.typed import avro_schema_of

__all__ = ["GenericAvroSerde", "SpecificAvroSerde", "avro_schema_of", "drop_scope"]
