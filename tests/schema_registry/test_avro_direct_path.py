"""The Avro serdes' direct path (streamlet/schema_registry/avro_fast.py) against confluent-kafka's own
`AvroSerializer` / `AvroDeserializer` on the same `mock://` registry: the same bytes, the same values, the
same errors, for generated schemas and values (records, unions, enums, fixed, arrays, maps, logical types)
and for schema evolution; and where the direct path is off, every record goes through confluent-kafka."""

from __future__ import annotations

import datetime
import io
import json
import re
import struct
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, record_subject_name_strategy, topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.common.schema_registry_client import Rule, RuleKind, RuleMode, RuleSet
from confluent_kafka.schema_registry.common.serde import RuleContext, RuleExecutor
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlet.errors import SerializationError
from streamlet.schema_registry import GenericAvroSerde, SpecificAvroSerde, drop_scope
from streamlet.schema_registry.avro_fast import DirectAvroDeserializer, DirectAvroSerializer
from streamlet.schema_registry.client import RegistrySettings, registry_client
from streamlet.schema_registry.framing import RegistrySerde
from tests.schema_registry.test_avro_serdes import ORDER_V1, Order

# -- generated schemas and values --------------------------------------------------------------------------

Gen = tuple[Any, st.SearchStrategy[Any]]
"""A schema and a strategy for values that fit it."""

_INT = st.integers(-(2 ** 31), 2 ** 31 - 1)
_LONG = st.integers(-(2 ** 63), 2 ** 63 - 1)
_PRIMITIVES: list[Gen] = [
    ("null", st.none()), ("boolean", st.booleans()), ("int", _INT), ("long", _LONG),
    ("float", st.floats(allow_nan=False, width=32)), ("double", st.floats(allow_nan=False)),
    ("string", st.text(max_size=12)), ("bytes", st.binary(max_size=12)),
]
_INSTANTS = st.datetimes(min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1),
                         timezones=st.just(datetime.UTC))
_LOGICAL: list[Gen] = [
    ({"type": "int", "logicalType": "date"}, st.dates()),
    ({"type": "long", "logicalType": "timestamp-millis"},
     _INSTANTS.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))),
    ({"type": "long", "logicalType": "timestamp-micros"}, _INSTANTS),
    ({"type": "int", "logicalType": "time-millis"},
     st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    ({"type": "long", "logicalType": "time-micros"}, st.times()),
    ({"type": "string", "logicalType": "uuid"}, st.uuids()),
    ({"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
     st.decimals(min_value=Decimal("-9999999.99"), max_value=Decimal("9999999.99"), places=2)),
]


class _Names:
    """Fresh names for the named types of one schema."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, kind: str) -> str:
        self.count += 1
        return f"{kind}{self.count}"


@st.composite
def _gen(draw: st.DrawFn, names: _Names, depth: int) -> Gen:
    kinds = ["primitive", "logical"] + (["record", "array", "map", "union", "enum", "fixed"] if depth < 3 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "primitive":
        return draw(st.sampled_from(_PRIMITIVES))
    if kind == "logical":
        return draw(st.sampled_from(_LOGICAL))
    if kind == "enum":
        symbols = draw(st.lists(st.sampled_from(["A", "B", "C", "D_1", "e"]), min_size=1, max_size=4, unique=True))
        return {"type": "enum", "name": names("E"), "symbols": symbols}, st.sampled_from(symbols)
    if kind == "fixed":
        size = draw(st.integers(0, 6))
        return {"type": "fixed", "name": names("F"), "size": size}, st.binary(min_size=size, max_size=size)
    if kind == "array":
        items, values = draw(_gen(names, depth + 1))
        return {"type": "array", "items": items}, st.lists(values, max_size=4)
    if kind == "map":
        items, values = draw(_gen(names, depth + 1))
        return {"type": "map", "values": items}, st.dictionaries(st.text(max_size=5), values, max_size=4)
    if kind == "union":  # null with one other branch, or two branches of kinds a value tells apart
        other, values = draw(_gen(names, depth + 1).filter(
            lambda g: not isinstance(g[0], list) and g[0] != "null"))
        if draw(st.booleans()):
            return ["null", other], st.none() | values
        return [other, "null"], values | st.none()
    return draw(_record(names, depth))


@st.composite
def _record(draw: st.DrawFn, names: _Names, depth: int = 0) -> Gen:
    fields = draw(st.lists(_gen(names, depth + 1), min_size=1, max_size=5))
    schema = {"type": "record", "name": names("R"), "namespace": "gen",
              "fields": [{"name": f"f{index}", "type": field} for index, (field, _) in enumerate(fields)]}
    values = st.fixed_dictionaries({f"f{index}": value for index, (_, value) in enumerate(fields)})
    return schema, values


@st.composite
def schemas_and_values(draw: st.DrawFn) -> tuple[Any, list[Any]]:
    """A record schema, or sometimes another top-level type, and 2 to 5 values of it."""
    names = _Names()
    if draw(st.integers(0, 4)) == 0:
        schema, values = draw(_gen(names, 1).filter(lambda g: not _written_raw(g[0])))
    else:
        schema, values = draw(_record(names))
    # None is no value to a serde (a tombstone): it never reaches confluent-kafka's serializer or the direct path
    return schema, draw(st.lists(values.filter(lambda value: value is not None), min_size=2, max_size=5))


def _written_raw(schema: Any) -> bool:
    """A top-level schema confluent-kafka writes raw (`bytes`, also with a logical type) or cannot read back
    (`null`: no body)."""
    return schema in ("null", "bytes") or (isinstance(schema, dict) and schema.get("type") == "bytes")


# -- the two paths -----------------------------------------------------------------------------------------

@pytest.fixture
def url() -> Iterator[str]:
    scope = f"direct-{uuid.uuid4().hex}"
    yield f"mock://{scope}"
    drop_scope(scope)


def _context(topic: str, is_key: bool = False) -> SerializationContext:
    return SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)


def _confluent(url: str, writer: Any = None, reader: Any = None, **conf: Any) -> tuple[AvroSerializer,
                                                                                         AvroDeserializer]:
    """confluent-kafka's own serializer and deserializer, configured as streamlet's serde configures them."""
    client = registry_client(RegistrySettings.from_config({"schema.registry.url": url}))
    settings = {"subject.name.strategy": topic_subject_name_strategy, "use.latest.version": False, **conf}
    serializer = AvroSerializer(client, _text(writer), conf={**settings, "auto.register.schemas": True,
                                                             "normalize.schemas": False}) if writer else None
    return serializer, AvroDeserializer(client, _text(reader) if reader is not None else None, conf=settings)


def _text(schema: Any) -> str:
    return json.dumps(schema, separators=(",", ":"))


class _Counted:
    """Counts the calls to a serde's confluent-kafka serializer and deserializer behind the direct path."""

    def __init__(self, serde: RegistrySerde[Any]) -> None:
        self.writes = self.reads = 0
        state = serde._state
        if isinstance(state.serializer, DirectAvroSerializer):
            state.serializer._slow = self._count(state.serializer._slow, "writes")
        assert isinstance(state.deserializer, DirectAvroDeserializer)
        state.deserializer._slow = self._count(state.deserializer._slow, "reads")

    def _count(self, call: Callable[..., Any], what: str) -> Callable[..., Any]:
        def counted(*args: Any) -> Any:
            setattr(self, what, getattr(self, what) + 1)
            return call(*args)
        return counted


def _outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What a call gave ("value", it) or raised ("error", type, message), streamlet's `SerializationError`
    taken by its cause (confluent-kafka's or fastavro's exception)."""
    try:
        return "value", call()
    except SerializationError as exc:
        cause = exc.__cause__
        return "error", type(cause), _unaddressed(str(cause))
    except Exception as exc:
        return "error", type(exc), _unaddressed(str(exc))


def _exception(call: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as caught:  # any exception: compared with the other path's
        call()
    return caught.value


# -- the same bytes, values and errors ---------------------------------------------------------------------

@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=schemas_and_values(), is_key=st.booleans())
def test_the_same_bytes_and_values_as_confluent_kafka(url: str, case: tuple[Any, list[Any]], is_key: bool) -> None:
    schema, values = case
    topic = f"t-{uuid.uuid4().hex}"
    serde = GenericAvroSerde(schema, config={"schema.registry.url": url}, is_key=is_key)
    counted = _Counted(serde)
    theirs_write, theirs_read = _confluent(url, schema)
    assert theirs_write is not None
    ctx = _context(topic, is_key)

    ours = [serde.serializer.serialize(topic, value) for value in values]
    assert ours == [theirs_write(value, ctx) for value in values]
    read = [_outcome(lambda data=data: serde.deserializer.deserialize(topic, data)) for data in ours]
    assert read == [_outcome(lambda data=data: theirs_read(data, ctx)) for data in ours]
    assert counted.writes == 1  # every record after the first went the direct way
    if all(data is not None and len(data) > 5 for data in ours):  # no body: confluent-kafka refuses it
        assert counted.reads == 1


@dataclass
class _Evolution:
    writer: dict[str, Any]
    reader: dict[str, Any]
    values: list[dict[str, Any]]


@st.composite
def evolutions(draw: st.DrawFn) -> _Evolution:
    """A record schema and a later (or earlier) version of it: a field added with a default, or one removed."""
    names = _Names()
    generated, generated_values = draw(_record(names))
    # an `id` first, kept in every version: a body is never empty (confluent-kafka refuses those)
    writer = {**generated, "fields": [{"name": "id", "type": "string"}, *generated["fields"]]}
    values = st.builds(lambda id_, rest: {"id": id_, **rest}, st.text(max_size=8), generated_values)
    fields = list(writer["fields"])
    if draw(st.booleans()):
        del fields[draw(st.integers(1, len(fields) - 1))]
    else:
        added, default = draw(st.sampled_from([
            ("string", "none"), ("long", -1), ("double", 0.5), ("boolean", True), (["null", "string"], None),
            ({"type": "array", "items": "int"}, [1, 2]), ({"type": "map", "values": "string"}, {"k": "v"}),
            ({"type": "enum", "name": names("E"), "symbols": ["X", "Y"]}, "Y")]))
        fields.insert(draw(st.integers(0, len(fields))), {"name": "added", "type": added, "default": default})
    return _Evolution(writer, {**writer, "fields": fields}, draw(st.lists(values, min_size=2, max_size=4)))


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=evolutions())
def test_evolution_reads_as_confluent_kafka_reads(url: str, case: _Evolution) -> None:
    topic = f"t-{uuid.uuid4().hex}"
    writer = GenericAvroSerde(case.writer, config={"schema.registry.url": url})
    reader = GenericAvroSerde(reader_schema=case.reader, config={"schema.registry.url": url})
    counted = _Counted(reader)
    _, theirs = _confluent(url, reader=case.reader)
    data = [writer.serializer.serialize(topic, value) for value in case.values]
    ours = [reader.deserializer.deserialize(topic, item) for item in data]
    assert ours == [theirs(item, _context(topic)) for item in data]
    assert counted.reads == 1
    removed = {f["name"] for f in case.writer["fields"]} - {f["name"] for f in case.reader["fields"]}
    added = [f for f in case.reader["fields"] if f["name"] == "added"]
    for value, read in zip(case.values, ours, strict=True):
        assert set(read) == {f["name"] for f in case.reader["fields"]}
        assert all(read[name] == value[name] for name in read if name != "added")
        assert not removed & set(read)
        if added:
            assert read["added"] == added[0]["default"]


def test_specific_records_read_old_and_new_versions_directly(url: str) -> None:
    topic = "orders"
    old = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url})
    serde = SpecificAvroSerde(Order, config={"schema.registry.url": url})
    counted = _Counted(serde)
    data = [old.serializer.serialize(topic, {"id": f"o-{i}", "amount": i / 4}) for i in range(3)]
    data += [serde.serializer.serialize(topic, Order(f"n-{i}", i * 2.0, "CHF")) for i in range(3)]
    assert [serde.deserializer.deserialize(topic, item) for item in data] == [
        Order("o-0", 0.0), Order("o-1", 0.25), Order("o-2", 0.5),
        Order("n-0", 0.0, "CHF"), Order("n-1", 2.0, "CHF"), Order("n-2", 4.0, "CHF")]
    assert (counted.writes, counted.reads) == (1, 2)  # one read per schema id, then direct


def _warm(url: str, schema: Any = ORDER_V1) -> tuple[GenericAvroSerde, bytes]:
    """A serde that has written and read one record of topic `orders`: past it, the direct path."""
    serde = GenericAvroSerde(schema, config={"schema.registry.url": url})
    first = serde.serializer.serialize("orders", {"id": "o-0", "amount": 0.0})
    assert first is not None
    serde.deserializer.deserialize("orders", first)
    return serde, first


@pytest.mark.parametrize("cut", [1, 4, 8, 12], ids=lambda cut: f"cut-{cut}")
def test_truncated_body_fails_as_confluent_kafka_fails(url: str, cut: int) -> None:
    serde, _ = _warm(url)
    data = serde.serializer.serialize("orders", {"id": "order-1", "amount": 1.5})
    assert data is not None
    _, theirs = _confluent(url)
    truncated = data[:5 + cut]
    with pytest.raises(SerializationError, match=rf"does not match its writer schema \(schema id "
                                                 rf"{struct.unpack('>I', data[1:5])[0]}\)") as ours:
        serde.deserializer.deserialize("orders", truncated)
    expected = _exception(lambda: theirs(truncated, _context("orders")))
    assert type(ours.value.__cause__) is type(expected)
    assert _unaddressed(str(ours.value.__cause__)) == _unaddressed(str(expected))


def _unaddressed(message: str) -> str:
    """An error message without the addresses of the objects it shows (fastavro shows the stream it read)."""
    return re.sub(r" at 0x[0-9a-f]+", " at 0x...", message)


def test_trailing_bytes_are_ignored_as_confluent_kafka_ignores_them(url: str) -> None:
    serde, first = _warm(url)
    _, theirs = _confluent(url)
    padded = first + b"\x00\x7f trailing"
    assert serde.deserializer.deserialize("orders", padded) == theirs(padded, _context("orders")) == {
        "id": "o-0", "amount": 0.0}


def test_framing_without_a_body_is_refused_as_before(url: str) -> None:
    serde, first = _warm(url)
    with pytest.raises(SerializationError, match="Expecting data framing of length 6 bytes or more"):
        serde.deserializer.deserialize("orders", first[:5])


def test_unknown_schema_id_after_a_known_one_names_it(url: str) -> None:
    serde, _ = _warm(url)
    with pytest.raises(SerializationError, match="schema id 4242 of a record of topic 'orders' could not be fetched"):
        serde.deserializer.deserialize("orders", b"\x00" + struct.pack(">I", 4242) + b"\x02a")


@pytest.mark.parametrize("value", [{"id": 7, "amount": 1.0}, {"id": "o"}, {"id": "o", "amount": "x"}, "text"])
def test_value_that_does_not_fit_fails_as_confluent_kafka_fails(url: str, value: Any) -> None:
    serde, _ = _warm(url)
    theirs, _ = _confluent(url, ORDER_V1)
    assert theirs is not None
    with pytest.raises(SerializationError, match="does not fit the schema for topic 'orders', subject "
                                                 "'orders-value'") as ours:
        serde.serializer.serialize("orders", value)
    expected = _exception(lambda: theirs(value, _context("orders")))
    assert type(ours.value.__cause__) is type(expected)
    assert str(ours.value.__cause__) == str(expected)


def test_a_new_topic_registers_its_subject_first(url: str) -> None:
    serde, _ = _warm(url)
    other = serde.serializer.serialize("payments", {"id": "p", "amount": 2.0})
    client = registry_client(RegistrySettings.from_config({"schema.registry.url": url}))
    assert sorted(client.get_subjects()) == ["orders-value", "payments-value"]
    assert other is not None and other[1:5] == struct.pack(">I", client.get_latest_version("payments-value").schema_id)


# -- where the direct path is off ---------------------------------------------------------------------------

def test_off_with_use_latest_version(url: str) -> None:
    client = registry_client(RegistrySettings.from_config({"schema.registry.url": url}))
    client.register_schema("orders-value", Schema(_text(ORDER_V1), "AVRO"))
    serde = GenericAvroSerde(config={"schema.registry.url": url, "use.latest.version": "true",
                                     "auto.register.schemas": "false"})
    assert not isinstance(serde._state.serializer, DirectAvroSerializer)
    assert not isinstance(serde._state.deserializer, DirectAvroDeserializer)
    data = serde.serializer.serialize("orders", {"id": "o", "amount": 1.0})
    assert serde.deserializer.deserialize("orders", data) == {"id": "o", "amount": 1.0}


def test_off_with_a_subject_name_strategy_of_ones_own(url: str) -> None:
    def strategy(ctx: Any, record_name: str | None) -> str | None:
        return record_subject_name_strategy(ctx, record_name)

    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url, "value.subject.name.strategy": strategy})
    assert not isinstance(serde._state.serializer, DirectAvroSerializer)
    assert not isinstance(serde._state.deserializer, DirectAvroDeserializer)
    data = serde.serializer.serialize("orders", {"id": "o", "amount": 1.0})
    assert serde.deserializer.deserialize("orders", data) == {"id": "o", "amount": 1.0}


def test_on_with_the_built_in_strategies(url: str) -> None:
    serde = GenericAvroSerde(ORDER_V1, config={"schema.registry.url": url,
                                               "value.subject.name.strategy": "TopicRecordNameStrategy"})
    counted = _Counted(serde)
    data = [serde.serializer.serialize("orders", {"id": f"o-{i}", "amount": 1.0}) for i in range(3)]
    assert [serde.deserializer.deserialize("orders", item) for item in data] == [
        {"id": f"o-{i}", "amount": 1.0} for i in range(3)]
    assert (counted.writes, counted.reads) == (1, 1)


def test_off_for_a_bytes_schema_written_raw(url: str) -> None:
    serde = GenericAvroSerde("bytes", config={"schema.registry.url": url})
    assert not isinstance(serde._state.serializer, DirectAvroSerializer)
    counted = _Counted(serde)
    data = [serde.serializer.serialize("blobs", payload) for payload in (b"ab", b"", b"xyz")]
    assert [item[5:] for item in data if item] == [b"ab", b"", b"xyz"]  # raw, as confluent-kafka writes them
    assert [serde.deserializer.deserialize("blobs", item) for item in data[::2]] == [b"ab", b"xyz"]
    assert counted.reads == 2  # every record through confluent-kafka


def _body(schema: dict[str, Any], value: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


class _Upper(RuleExecutor):
    """A data-contract rule executor of this test's own: upper-cases the `id` of every record it reads."""

    def type(self) -> str:
        return "STREAMLET_TEST_UPPER"

    def transform(self, ctx: RuleContext, message: Any) -> Any:
        return {**message, "id": message["id"].upper()}


def test_off_for_a_writer_schema_with_rules(url: str) -> None:
    """A data contract's rules are confluent-kafka's to run: every record of that schema id goes through it."""
    registry = RuleRegistry.get_global_instance()
    registry.register_executor(_Upper())
    try:
        client = registry_client(RegistrySettings.from_config({"schema.registry.url": url}))
        rule = Rule(name="upper", doc=None, kind=RuleKind.TRANSFORM, mode=RuleMode.READ, type="STREAMLET_TEST_UPPER",
                    tags=None, params=None, expr=None, on_success=None, on_failure=None, disabled=False)
        rules = RuleSet(migration_rules=None, domain_rules=[rule])
        schema_id = client.register_schema("orders-value", Schema(_text(ORDER_V1), "AVRO", rule_set=rules))
        serde = GenericAvroSerde(config={"schema.registry.url": url})
        counted = _Counted(serde)
        framed = [b"\x00" + struct.pack(">I", schema_id) + _body(ORDER_V1, {"id": f"o-{i}", "amount": 1.0})
                  for i in range(3)]
        assert [serde.deserializer.deserialize("orders", item) for item in framed] == [
            {"id": f"O-{i}", "amount": 1.0} for i in range(3)]
        assert counted.reads == 3
    finally:
        registry._rule_executors.pop("STREAMLET_TEST_UPPER", None)
