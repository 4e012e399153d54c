"""Schema'd serdes in Confluent's wire format, through a schema registry (Confluent's Java class names).

`GenericAvroSerde` (dicts) and `SpecificAvroSerde(record_type)` (a dataclass bound to its Avro schema),
`KafkaProtobufSerde(message_class)` (generated Protobuf classes) and `KafkaJsonSchemaSerde(schema_or_type)`
(JSON validated against a JSON Schema), configured with Confluent's settings (`schema.registry.url`, ...)
by hand with `.configure(config, is_key)` or, when given in `Consumed` / `Produced` / `Materialized` and
not configured by hand, with the application's config when the topology's tasks are built.
`schema.registry.url=mock://SCOPE` is an in-process registry for unit tests (as Java's `MockSchemaRegistry`);
`drop_scope(scope)` empties one.

Needs the `registry` extra (`pip install 'streamlet[registry]'`: confluent-kafka's schema-registry client
with fastavro, protobuf and jsonschema); `import streamlet` alone never imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamlet.schema_registry.avro import GenericAvroSerde, SpecificAvroSerde
from streamlet.schema_registry.client import drop_scope
from streamlet.schema_registry.typed import avro_schema_of

if TYPE_CHECKING:
    from streamlet.schema_registry.json_schema import KafkaJsonSchemaSerde
    from streamlet.schema_registry.protobuf import KafkaProtobufSerde

__all__ = ["GenericAvroSerde", "KafkaJsonSchemaSerde", "KafkaProtobufSerde", "SpecificAvroSerde", "avro_schema_of",
           "drop_scope"]


def __getattr__(name: str) -> Any:
    """The Protobuf and JSON Schema serdes, imported when first asked for: an application with Avro only
    does not import the `protobuf` and `jsonschema` packages."""
    if name == "KafkaProtobufSerde":
        from streamlet.schema_registry.protobuf import KafkaProtobufSerde

        return KafkaProtobufSerde
    if name == "KafkaJsonSchemaSerde":
        from streamlet.schema_registry.json_schema import KafkaJsonSchemaSerde

        return KafkaJsonSchemaSerde
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
