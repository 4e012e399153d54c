"""The schema text streamlet's Avro serdes register: compact JSON, as Java's Avro `Schema.toString()` writes
it. Apicurio Registry ids a schema by its exact text, so a spaced text would get an id other than the one a
Java serializer registered for the same schema, and the two sides' bytes would differ in the id (the move
of tests/interop/test_avro_app_move.py compares them against Kafka Streams with Apicurio's Java serde)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import ClassVar

from streamlet.schema_registry import GenericAvroSerde, SpecificAvroSerde, drop_scope
from streamlet.schema_registry.client import RegistrySettings, registry_client

# What Avro 1.12's Schema.toString() writes for these schemas (compact, keys in its order).
JAVA_TOTALS = ('{"type":"record","name":"Totals","namespace":"io.example","fields":[{"name":"count","type":"long"},'
               '{"name":"note","type":["null","string"],"default":null}]}')
JAVA_DERIVED = ('{"type":"record","name":"Derived","namespace":"tests.schema_registry.test_registered_schema_text",'
                '"fields":[{"name":"count","type":"long"},{"name":"note","type":["null","string"],"default":null}]}')


@dataclass
class Totals:
    avro_schema: ClassVar[str] = """{
        "type": "record", "name": "Totals", "namespace": "io.example",
        "fields": [{"name": "count", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": null}]
    }"""
    count: int
    note: str | None = None


@dataclass
class Derived:
    count: int
    note: str | None = None


def _registered(scope: str, subject: str) -> str:
    client = registry_client(RegistrySettings.from_config({"schema.registry.url": f"mock://{scope}"}))
    return str(client.get_latest_version(subject).schema.schema_str)


def test_a_parsed_schema_is_registered_compact_as_java_writes_it() -> None:
    scope = uuid.uuid4().hex
    try:
        config = {"schema.registry.url": f"mock://{scope}"}
        SpecificAvroSerde(Totals, config=config).serializer.serialize("given", Totals(1))
        SpecificAvroSerde(Derived, config=config).serializer.serialize("derived", Derived(1))
        GenericAvroSerde(json.loads(JAVA_TOTALS), config=config).serializer.serialize("as-dict", {"count": 1})
        assert _registered(scope, "given-value") == JAVA_TOTALS
        assert _registered(scope, "derived-value") == JAVA_DERIVED
        assert _registered(scope, "as-dict-value") == JAVA_TOTALS
    finally:
        drop_scope(scope)


def test_a_schema_given_as_text_to_the_generic_serde_is_registered_as_given() -> None:
    scope = uuid.uuid4().hex
    text = '{"type": "record", "name": "Spaced", "fields": [{"name": "a", "type": "long"}]}'
    try:
        GenericAvroSerde(text, config={"schema.registry.url": f"mock://{scope}"}).serializer.serialize("t", {"a": 1})
        assert _registered(scope, "t-value") == text
    finally:
        drop_scope(scope)
