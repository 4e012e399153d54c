"""The Avro workloads (`pipe_avro`, `window_count_avro`): their input is the events in Confluent's wire format,
record for record, and their checker judges Avro output exactly (streamlet's topologies on the driver, with
the in-process `mock://` registry); every other system says n/a. No broker, no timings."""

from __future__ import annotations

import io
import random
import struct
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pytest

from benchmarks import workloads as wl
from benchmarks.measure import latency_record
from benchmarks.systems import AVRO_SYSTEMS, SYSTEMS, RunSpec, streamlet_command


def _decode(value: bytes, schema: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(schema id, record) of a Confluent-framed Avro value; the body must be exactly one record."""
    assert value[0] == 0
    body = io.BytesIO(value[5:])
    record = fastavro.schemaless_reader(body, fastavro.parse_schema(schema), None)
    assert body.tell() == len(value) - 5
    return int.from_bytes(value[1:5], "big"), record  # type: ignore[return-value]


@pytest.mark.parametrize("keys", [None, 700])
def test_the_avro_events_are_the_json_events_in_confluents_wire_format(keys: int | None) -> None:
    schema_id = 0x01020304
    avro = list(wl.input_records("events_avro", 3000, keys, schema_id))
    json_events = list(wl.events(3000, keys=keys))
    assert len(avro) == len(json_events)
    for (key, value, ts), (json_key, json_value, json_ts) in zip(avro, json_events, strict=True):
        assert (key, ts) == (json_key, json_ts)
        assert value[:5] == b"\x00\x01\x02\x03\x04"
        assert _decode(value, wl.EVENT_SCHEMA) == (schema_id, orjson.loads(json_value))


def test_the_avro_input_needs_its_schema_id() -> None:
    with pytest.raises(ValueError, match="schema"):
        wl.input_records("events_avro", 10)


def test_a_latency_run_writes_the_events_in_avro_for_the_avro_workloads() -> None:
    for workload in wl.AVRO_WORKLOADS:
        key, value = latency_record(workload, 5, 0, random.Random(7), None, 42)
        json_key, json_value = latency_record(workload.removesuffix("_avro"), 5, 0, random.Random(7))
        assert key == json_key
        assert _decode(value, wl.EVENT_SCHEMA) == (42, orjson.loads(json_value))


def test_the_schemas_are_written_as_javas_schema_to_string_writes_them() -> None:
    # The text both systems register: Java's Avro writes a record compact, type, name, namespace, fields.
    assert wl.schema_text(wl.CENTS_SCHEMA) == (
        '{"type":"record","name":"EventCents","namespace":"io.streamlet.bench","fields":[{"name":"id","type":"long"},'
        '{"name":"user","type":"string"},{"name":"amount_cents","type":"long"}]}')


def test_only_streamlet_and_kafka_streams_run_the_avro_workloads_and_get_the_registry() -> None:
    for key, system in SYSTEMS.items():
        for workload in wl.AVRO_WORKLOADS:
            assert (workload in system.not_applicable) == (key not in AVRO_SYSTEMS), key
    run = RunSpec("pipe_avro", "b:1", "app", "in", "out", "at_least_once", 1000, Path("/tmp/x"),
                  registry="http://r/apis/ccompat/v7")
    assert run.cli_args()[-2:] == ["--registry", "http://r/apis/ccompat/v7"]
    assert "schema.registry.url=http://r/apis/ccompat/v7" in streamlet_command(1)(run)
    assert "--registry" not in RunSpec("pipe", "b:1", "app", "in", "out", "at_least_once", 1000,
                                       Path("/tmp/x")).cli_args()


# --- the checker, against streamlet's topologies on the driver (mock:// registry) ------------------------

@pytest.fixture
def registry() -> Iterator[tuple[str, Callable[[str, dict[str, Any]], int], Callable[[int], str | None]]]:
    """A `mock://` registry: (url, register(subject, schema) -> id, schema_of(id) -> text or None)."""
    from confluent_kafka.schema_registry import Schema
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    from streamlet.schema_registry import drop_scope
    from streamlet.schema_registry.client import RegistrySettings, registry_client

    scope = f"bench-{uuid.uuid4().hex}"
    url = f"mock://{scope}"
    client = registry_client(RegistrySettings.from_config({"schema.registry.url": url}))

    def register(subject: str, schema: dict[str, Any]) -> int:
        return int(client.register_schema(subject, Schema(wl.schema_text(schema), "AVRO")))

    def schema_of(schema_id: int) -> str | None:
        try:
            return str(client.get_schema(schema_id).schema_str)
        except SchemaRegistryError:
            return None

    try:
        yield url, register, schema_of
    finally:
        drop_scope(scope)


def _driver_output(workload: str, records: int, url: str, schema_id: int, keys: int | None,
                   monkeypatch: pytest.MonkeyPatch) -> list[tuple[bytes, bytes]]:
    from benchmarks.apps import streamlet_app
    from streamlet import Serdes
    from streamlet.testing.test_driver import TopologyTestDriver

    monkeypatch.setenv("BENCH_INPUT", "in")
    monkeypatch.setenv("BENCH_OUTPUT", "out")
    config = {"application.id": workload, "schema.registry.url": url}
    with TopologyTestDriver(getattr(streamlet_app, workload)(), config) as driver:
        source = driver.create_input_topic("in", Serdes.Bytes(), Serdes.Bytes())
        for key, value, ts in wl.input_records("events_avro", records, keys, schema_id):
            source.pipe_input(key, value, ts)
        return [(kv.key, kv.value) for kv in
                driver.create_output_topic("out", Serdes.Bytes(), Serdes.Bytes()).read_key_values_to_list()]


def _judged_complete(expected: wl.Expected, output: list[tuple[bytes, bytes]]) -> wl.Tracker:
    """The tracker after the whole output, which it must find correct and complete."""
    tracker = expected.tracker()
    for key, value in output:
        tracker.add(key, value)
    check = tracker.check()
    assert check.correct and tracker.complete, check.detail
    return tracker


def test_the_pipe_checker_judges_avro_output_exactly(registry: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    url, register, schema_of = registry
    records = 4000
    events_id = register("in-value", wl.EVENT_SCHEMA)
    output = _driver_output("pipe_avro", records, url, events_id, None, monkeypatch)
    expected = wl.Expected("pipe_avro", records, partitions=1, schema_of=schema_of)
    check = _judged_complete(expected, output).check()
    views = sum(orjson.loads(v)["kind"] == "view" for _k, v, _ts in wl.events(records))
    assert check.outputs == records - views > 2000
    cents_id, first = _decode(output[0][1], wl.CENTS_SCHEMA)
    assert cents_id != events_id and set(first) == {"id", "user", "amount_cents"}

    def judged(*extra: tuple[bytes, bytes | None], drop: int | None = None) -> wl.Check:
        t = expected.tracker()
        for n, (key, value) in enumerate(output):
            if n != drop:
                t.add(key, value)
        for extra_key, extra_value in extra:
            t.add(extra_key, extra_value)
        return t.check()

    key, value = output[0]
    record = _decode(value, wl.CENTS_SCHEMA)[1]
    assert judged((key, value)).duplicates == 1  # a repeat
    assert not judged(drop=0).correct  # one missing
    header = value[:5]
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(wl.CENTS_SCHEMA), dict(record, amount_cents=1))
    wrong_values: list[tuple[str, bytes | None]] = [
        ("a wrong amount", header + body.getvalue()),
        ("a truncated body", value[:-1]),
        ("a byte after the record", value + b"\x00"),
        ("no framing", value[5:]),
        ("another magic byte", b"\x01" + value[1:]),
        ("a schema id the registry does not have", b"\x00" + struct.pack(">I", 999_999) + value[5:]),
        ("the input's schema", wl.event_encoder(events_id)({"id": record["id"], "user": record["user"],
                                                            "amount": 0, "kind": "buy"})),
        ("JSON", orjson.dumps(record)),
        ("a tombstone", None),
    ]
    for what, bad in wrong_values:
        check = judged((key, bad), drop=0)
        assert not check.correct and "1 wrong" in check.detail, what


def test_a_schema_is_looked_up_once_per_id(registry: Any) -> None:
    _url, register, schema_of = registry
    cents_id = register("out-value", wl.CENTS_SCHEMA)
    asked: list[int] = []

    def counting(schema_id: int) -> str | None:
        asked.append(schema_id)
        return schema_of(schema_id)

    decode = wl.AvroValues(wl.CENTS_SCHEMA, counting)
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(wl.CENTS_SCHEMA), {"id": 1, "user": "u1", "amount_cents": 5})
    value = b"\x00" + struct.pack(">I", cents_id) + body.getvalue()
    assert [decode(value) for _ in range(3)] == [{"id": 1, "user": "u1", "amount_cents": 5}] * 3
    assert asked == [cents_id]


def test_the_pipe_checker_needs_the_registry() -> None:
    with pytest.raises(ValueError, match="schema_of"):
        wl.Expected("pipe_avro", 10)


@pytest.mark.parametrize("keys", [None, 1500])
def test_the_window_count_checker_judges_the_avro_window_count(keys: int | None, registry: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    url, register, _schema_of = registry
    records = 6000
    output = _driver_output("window_count_avro", records, url, register("in-value", wl.EVENT_SCHEMA), keys,
                            monkeypatch)
    expected = wl.Expected("window_count_avro", records, partitions=1, keys=keys)
    tracker = _judged_complete(expected, output)
    assert expected.counts is not None and expected.counts.size == len({k for k, _v in output})
    assert expected.counts.size >= (keys or wl.USERS // 2)  # every user of the first minute, at the least
    key, value = output[-1]
    tracker.add(key, struct.pack(">q", struct.unpack(">q", value)[0] + 1))  # one count off by one
    assert not tracker.check().correct


def test_an_avro_event_the_serde_cannot_read_fails_the_window_count(registry: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The window count reads every value with the Avro serde, though it does not use it: the Avro workload
    costs what its JSON twin does plus the decoding (a value of an unknown schema id stops it)."""
    url, _register, _schema_of = registry
    from streamlet.errors import DeserializationError

    with pytest.raises(DeserializationError, match="schema id 424242"):
        _driver_output("window_count_avro", 10, url, 424_242, None, monkeypatch)
