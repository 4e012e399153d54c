"""The Avro serdes' per-record work done directly with fastavro, confluent-kafka's serializers kept for the rest.

confluent-kafka's `AvroSerializer` and `AvroDeserializer` do much per record that a plain schema needs none
of: the subject worked out, the data-contract rules looked for, the reader schema expanded, context objects
made. Here the first record of each topic (and, reading, of each schema id in it) goes through
confluent-kafka's serde unchanged: it registers or looks the schema up, fetches the writer's schema by id,
and raises what it raises. After that first success the same records are written and read directly:

- writing: magic byte 0, the 4-byte id confluent-kafka wrote that first record with, then fastavro's
  `schemaless_writer` output of the value against the same parsed schema;
- reading: the writer's schema by the record's id, as the registry client cached it on that first record,
  parsed once, and fastavro's `schemaless_reader` resolving it against the reader's schema (the serde's
  own, else the writer's) — the call confluent-kafka makes, with the same arguments.

Bytes, values and errors are the same as confluent-kafka's: a value that does not fit, or a body that does
not match its schema, fails in the same fastavro call with the same exception.

The direct path is on (`direct_settings`) unless `use.latest.version` is set (the subject's latest schema,
asked for per record, is written with or read into, and may carry rules) or the subject name strategy is not
one of the three built-in ones. It is off for a schema that is `bytes` (confluent-kafka writes and reads
those raw, without Avro's length prefix), and for a writer's schema with references, with rules (a data
contract), or not of type AVRO: those records go through confluent-kafka every time.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

from confluent_kafka.schema_registry import (
    Schema,
    SchemaRegistryClient,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from confluent_kafka.schema_registry.common.avro import _schema_loads, parse_schema_with_repo
from confluent_kafka.schema_registry.common.serde import clear_original_key, set_original_key
from confluent_kafka.serialization import SerializationContext
from fastavro import schemaless_reader, schemaless_writer

from streamlet.schema_registry.client import RegistrySettings, SubjectNameStrategy
from streamlet.schema_registry.framing import ConfluentDeserializer, ConfluentSerializer

_BUILT_IN_STRATEGIES = (topic_subject_name_strategy, record_subject_name_strategy, topic_record_subject_name_strategy)


def direct_settings(settings: RegistrySettings, is_key: bool) -> bool:
    """Whether the direct path may be used with these settings (see the module)."""
    strategy = settings.key_strategy if is_key else settings.value_strategy
    return not settings.use_latest_version and any(strategy is s for s in _BUILT_IN_STRATEGIES)


def parse(schema: Schema) -> Any:
    """An Avro schema without references, parsed for fastavro as confluent-kafka's Avro serdes parse it."""
    prepared = _schema_loads(schema.schema_str or "")
    return parse_schema_with_repo(prepared.schema_str or "", named_schemas={})


def _is_bytes(parsed: Any) -> bool:
    """A `bytes` schema: confluent-kafka writes and reads its values raw, not as Avro."""
    return parsed == "bytes" or (isinstance(parsed, dict) and parsed.get("type") == "bytes")


def _plain(schema: Schema) -> bool:
    """An Avro schema with no references and no rules: confluent-kafka does no more with it than parse it."""
    rules = schema.rule_set
    return (schema.schema_type in (None, "AVRO") and not schema.references
            and (rules is None or not (rules.domain_rules or rules.encoding_rules or rules.migration_rules)))


class DirectAvroSerializer:
    """confluent-kafka's `AvroSerializer` (`slow`) for a topic's first record, then the same bytes directly.

    `slow` writes with `schema` (JSON text, not `bytes`) and is configured with the settings `direct_settings`
    allows. As confluent-kafka's does, it writes every topic it knows with the id of the schema that
    serializer last registered or looked up.
    """

    def __init__(self, slow: ConfluentSerializer, schema: str, is_key: bool) -> None:
        self._slow = slow
        self._parsed = parse(_schema_loads(schema))
        self._is_key = is_key
        self._known: set[str] = set()  # topics whose first record confluent-kafka wrote
        self._prefix = b""  # magic byte and id of confluent-kafka's last write

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes | None:
        if ctx.topic not in self._known:
            return self._first(value, ctx)
        if self._is_key:  # as confluent-kafka keeps it, for a value's rules (a dead letter queue's record)
            set_original_key(value)
        else:
            clear_original_key()
        out = BytesIO()
        out.write(self._prefix)
        schemaless_writer(out, self._parsed, value)
        return out.getvalue()

    def _first(self, value: Any, ctx: SerializationContext) -> bytes | None:
        data = self._slow(value, ctx)
        if data is not None:
            self._prefix = data[:5]
            self._known.add(ctx.topic)
        return data


_Entry = tuple[Any, Any] | None
"""A writer schema's parsed form and the reader's (None: the writer's), or None: confluent-kafka reads."""


class DirectAvroDeserializer:
    """confluent-kafka's `AvroDeserializer` (`slow`) for the first record of each schema id in a topic,
    then the same values directly.

    `slow` reads into `reader` (JSON text; None: the writer's schema) and is configured with the settings
    `direct_settings` allows, `strategy` being its subject name strategy.
    """

    def __init__(self, slow: ConfluentDeserializer, client: SchemaRegistryClient, reader: str | None,
                 strategy: SubjectNameStrategy, is_key: bool) -> None:
        self._slow = slow
        self._client = client
        self._reader = parse(_schema_loads(reader)) if reader is not None else None
        self._strategy = strategy
        self._is_key = is_key
        self._tables: dict[str, dict[bytes, _Entry]] = {}  # topic -> schema id (4 bytes) -> entry

    def __call__(self, data: bytes, ctx: SerializationContext) -> Any:
        table = self._tables.get(ctx.topic)
        entry = table.get(data[1:5]) if table is not None else None
        if entry is None or len(data) <= 5:  # confluent-kafka refuses a body of no bytes, and says so
            return self._first(data, ctx, table)
        if self._is_key:  # as confluent-kafka keeps it
            set_original_key(data)
        else:
            clear_original_key()
        body = BytesIO(data)
        body.seek(5)
        return schemaless_reader(body, entry[0], entry[1], False)

    def _first(self, data: bytes, ctx: SerializationContext, table: dict[bytes, _Entry] | None) -> Any:
        value = self._slow(data, ctx)
        if table is None:
            table = self._tables.setdefault(ctx.topic, {})
        if data[1:5] not in table:
            try:
                table[data[1:5]] = self._entry(data, ctx)
            except Exception:  # never expected (the schema was just read); confluent-kafka reads these then
                table[data[1:5]] = None
        return value

    def _entry(self, data: bytes, ctx: SerializationContext) -> _Entry:
        """The parsed schemas to read records with `data`'s schema id; confluent-kafka just read one, so
        the registry client has the writer's schema cached under the subject it asked with."""
        schema = self._client.get_schema(int.from_bytes(data[1:5], "big"), self._strategy(ctx, None))
        if not _plain(schema):
            return None
        writer = parse(schema)
        if _is_bytes(writer):
            return None
        return writer, (None if self._reader is None or self._reader == writer else self._reader)


def direct(serializer: ConfluentSerializer | None, deserializer: ConfluentDeserializer,
           client: SchemaRegistryClient, settings: RegistrySettings, is_key: bool, writer: str | None,
           reader: str | None) -> tuple[ConfluentSerializer | None, ConfluentDeserializer]:
    """confluent-kafka's Avro serializer and deserializer, wrapped in the direct path where the settings allow."""
    if not direct_settings(settings, is_key):
        return serializer, deserializer
    strategy = settings.key_strategy if is_key else settings.value_strategy
    if serializer is not None and writer is not None and not _is_bytes(parse(_schema_loads(writer))):
        serializer = DirectAvroSerializer(serializer, writer, is_key)
    return serializer, DirectAvroDeserializer(deserializer, client, reader, strategy, is_key)
