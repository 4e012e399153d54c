"""`dsl.store.format=HEADERS` (Kafka Streams 4.4's KIP-1285): the DSL's table stores become timestamped key-value
stores with headers, with Kafka Streams' bytes.

Kafka Streams 4.4.0's TopologyTestDriver (tests/java/streams4 `DslHeadersCheck`) and streamlet's run the same drawn
cases: `groupByKey().count()`, `groupByKey().reduce()` and a materialized `table()`, under `HEADERS` (and, marked as
a known difference, `DEFAULT`), with and without a cache, over records with and without headers (tombstones for
the table). Every changelog record (key, value, timestamp, headers), every output record and, under HEADERS, every
stored value must be Kafka Streams'. What they show: in 4.4.0 the DSL stores its values without headers, a
delete logs the current record's headers, and the output keeps the input's headers.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from streamlet import (
    Consumed,
    Materialized,
    PositionBound,
    Produced,
    Serdes,
    StreamsBuilder,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeWithHeadersQuery,
)
from streamlet.errors import ConfigError
from streamlet.queries import ReadOnlyRecord
from streamlet.queries.store_query import run_query
from streamlet.stores.keyvalue.headers import DslTimestampedKeyValueStoreWithHeaders
from streamlet.stores.keyvalue.timestamped import TypedTimestampedKeyValueStore
from streamlet.testing import TopologyTestDriver
from tests.streams4_java import run_check


def _topology(op: str) -> Any:
    s = Serdes.String()
    builder = StreamsBuilder()
    if op == "count":
        (builder.stream("in", Consumed(s, s)).group_by_key()
         .count(Materialized("agg", key_serde=s, value_serde=Serdes.Long()))
         .to_stream().map_values(str).to("out", Produced(s, s)))
    elif op == "reduce":
        (builder.stream("in", Consumed(s, s)).group_by_key()
         .reduce(lambda a, b: a + b, Materialized("agg", key_serde=s, value_serde=s))
         .to_stream().to("out", Produced(s, s)))
    else:
        builder.table("in", Consumed(s, s), Materialized("agg", key_serde=s, value_serde=s)).to_stream() \
            .to("out", Produced(s, s))
    return builder.build()


def _headers(headers: Any) -> str:
    parts = [f"{name}={'null' if value is None else value.hex()}" for name, value in headers or ()]
    return ";".join(parts) or "-"


def _parse_headers(spec: str) -> list[tuple[str, bytes | None]]:
    return [(name, None if value == "null" else value.encode())
            for name, value in (pair.split("=", 1) for pair in spec.split(";"))]


def _config(store_format: str, cache: str) -> dict[str, Any]:
    return {"application.id": "dslh", "bootstrap.servers": "localhost:9", "dsl.store.format": store_format,
            "statestore.cache.max.bytes": 1048576 if cache == "1" else 0}


def streamlet_lines(label: str, op: str, store_format: str, cache: str, records: list[str]) -> list[str]:
    with TopologyTestDriver(_topology(op), _config(store_format, cache), initial_wall_clock_time=0) as driver:
        source = driver.create_input_topic("in", Serdes.String().serializer, Serdes.String().serializer)
        for record in records:
            key, value, ts, *spec = record.split(",", 3)
            source.pipe_input(key, None if value == "null" else value, int(ts),
                              headers=_parse_headers(spec[0]) if spec else None)
        store = driver.get_state_store("agg")
        headers = store_format.upper() == "HEADERS"
        assert isinstance(store, DslTimestampedKeyValueStoreWithHeaders if headers else TypedTimestampedKeyValueStore)
        changelog = driver.create_output_topic("dslh-agg-changelog", Serdes.Bytes(), Serdes.Bytes())
        lines = [f"{label} cl {r.key.hex()} {'null' if r.value is None else r.value.hex()} {r.timestamp} "
                 f"{_headers(r.headers)}" for r in changelog.read_records_to_list()]
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        lines += [f"{label} out {r.key} {'null' if r.value is None else r.value} {r.timestamp} {_headers(r.headers)}"
                  for r in out.read_records_to_list()]
        if headers:
            with store._bytes.range(None, None) as stored:  # the local bytes under the serdes
                lines += [f"{label} store {key.decode()} {value.hex()}" for key, value in stored]
    return lines


def _cases(seed: int, count: int, formats: tuple[str, ...]) -> list[tuple[str, str, str, str, list[str]]]:
    """(label, op, format, cache, records) drawn from `seed`: keys a-c, values with tombstones for the table,
    timestamps out of order, up to two headers a record (some with null values)."""
    rnd = random.Random(seed)
    cases = []
    for i in range(count):
        op, fmt, cache = rnd.choice(["count", "reduce", "table"]), rnd.choice(formats), rnd.choice("01")
        records = []
        for _ in range(rnd.randint(1, 10)):
            value = rnd.choice(["x", "yy", "null"] if op == "table" else ["x", "yy"])
            headers = ";".join(f"{rnd.choice(['h', 'trace'])}={rnd.choice(['null', 'a', 'xyz', ''])}"
                               for _ in range(rnd.choice([0, 0, 1, 2])))
            fields = [rnd.choice("abc"), value, str(rnd.randint(0, 40)), *([headers] if headers else [])]
            records.append(",".join(fields))
        cases.append((f"c{i}", op, fmt, cache, records))
    return cases


def _java_and_ours(cases: list[tuple[str, str, str, str, list[str]]]) -> tuple[list[str], list[str]]:
    java = run_check("DslHeadersCheck", "".join(f"{label} {op} {fmt} {cache} {' '.join(recs)}\n"
                                                for label, op, fmt, cache, recs in cases)).splitlines()
    java = [line for line in java if " class " not in line]
    ours = [line for label, op, fmt, cache, recs in cases for line in streamlet_lines(label, op, fmt, cache, recs)]
    return java, ours


def test_dsl_store_bytes_under_headers_are_kafka_streams() -> None:
    cases = _cases(1285, 60, ("HEADERS", "headers"))
    assert any("=" in r for *_, recs in cases for r in recs) and any(",null," in r for *_, recs in cases for r in recs)
    java, ours = _java_and_ours(cases)
    assert any(" store " in line for line in java)
    assert ours == java


def test_dsl_store_bytes_under_default_are_kafka_streams() -> None:
    java, ours = _java_and_ours(_cases(1286, 30, ("DEFAULT",)))
    assert ours == java


def test_the_setting_takes_either_case_and_refuses_others_as_kafka_streams() -> None:
    for ok in ("headers", "Default", "HEADERS"):
        TopologyTestDriver(_topology("count"), _config(ok, "0")).close()
    with pytest.raises(ConfigError, match=r"Invalid value foo for configuration dsl.store.format: String must be one "
                                          r"of \(case insensitive\): HEADERS, DEFAULT"):
        TopologyTestDriver(_topology("count"), _config("foo", "0"))


def test_a_dsl_store_with_headers_answers_the_header_queries_with_no_headers() -> None:
    """What a DSL store keeps under HEADERS answers `TimestampedKeyWithHeadersQuery` and the timestamped queries
    (the store is Kafka Streams' MeteredTimestampedKeyValueStoreWithHeaders there)."""
    topology = _topology("count")
    with TopologyTestDriver(topology, _config("headers", "0")) as driver:
        driver.create_input_topic("in", Serdes.String().serializer, Serdes.String().serializer) \
            .pipe_input("k", "v", 7, headers=[("h", b"1")])
        store = driver.get_state_store("agg")
        assert isinstance(store, DslTimestampedKeyValueStoreWithHeaders)
        bound = PositionBound.unbounded()
        assert run_query(store, TimestampedKeyWithHeadersQuery.with_key("k"), bound, 0).get_result() == \
            ReadOnlyRecord("k", 1, 7, ())
        assert list(run_query(store, TimestampedRangeWithHeadersQuery.with_no_bounds(), bound, 0).get_result()) == [
            ReadOnlyRecord("k", 1, 7, ())]
        assert run_query(store, TimestampedKeyQuery.with_key("k"), bound, 0).get_result() == (1, 7)
    with TopologyTestDriver(topology, _config("DEFAULT", "0")) as driver:  # the same topology, run again
        assert isinstance(driver.get_state_store("agg"), TypedTimestampedKeyValueStore)
