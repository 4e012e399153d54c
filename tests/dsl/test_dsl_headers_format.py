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
    JoinWindows,
    Materialized,
    PositionBound,
    Produced,
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowKeyWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
    TimeWindows,
    WindowKeyQuery,
)
from streamlet.errors import ConfigError
from streamlet.queries import ReadOnlyRecord
from streamlet.queries.store_query import run_query
from streamlet.stores.keyvalue.headers import DslTimestampedKeyValueStoreWithHeaders
from streamlet.stores.keyvalue.timestamped import TypedTimestampedKeyValueStore
from streamlet.stores.session.headers import DslSessionStoreWithHeaders
from streamlet.stores.session.typed import TypedSessionStore
from streamlet.stores.value_formats import join_aggregation_headers, join_headers_value
from streamlet.stores.window.headers import DslTimestampedWindowStoreWithHeaders
from streamlet.stores.window.typed import TypedTimestampedWindowStore
from streamlet.testing import TopologyTestDriver
from streamlet.windowed import SessionWindow, TimeWindow, Windowed
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
    elif op in ("wcount", "slcount"):
        grouped = builder.stream("in", Consumed(s, s)).group_by_key()
        windowed = (grouped.windowed_by(TimeWindows.of_size_with_no_grace(100)) if op == "wcount"
                    else grouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(50)))
        (windowed.count(Materialized("agg", key_serde=s, value_serde=Serdes.Long()))
         .to_stream().select_key(lambda k, v: f"{k.key}@{k.window.start}").map_values(str).to("out", Produced(s, s)))
    elif op == "scount":
        (builder.stream("in", Consumed(s, s)).group_by_key()
         .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(30))
         .count(Materialized("agg", key_serde=s, value_serde=Serdes.Long()))
         .to_stream().select_key(lambda k, v: f"{k.key}@{k.window.start}-{k.window.end}")
         .map_values(lambda v: None if v is None else str(v)).to("out", Produced(s, s)))
    elif op == "join":
        everything = builder.stream("in", Consumed(s, s))
        (everything.filter(lambda k, v: v.startswith("x"))
         .join(everything.filter(lambda k, v: not v.startswith("x")), lambda a, b: a + b,
               JoinWindows.of_time_difference_with_no_grace(10), StreamJoined(s, s, s, store_name="agg"))
         .to("out", Produced(s, s)))
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
        if op == "join":
            return _join_lines(label, driver)
        store = driver.get_state_store("agg")
        headers = store_format.upper() == "HEADERS"
        kinds = {"wcount": (DslTimestampedWindowStoreWithHeaders, TypedTimestampedWindowStore),
                 "slcount": (DslTimestampedWindowStoreWithHeaders, TypedTimestampedWindowStore),
                 "scount": (DslSessionStoreWithHeaders, TypedSessionStore)}
        with_headers, without = kinds.get(op, (DslTimestampedKeyValueStoreWithHeaders, TypedTimestampedKeyValueStore))
        assert type(store) is (with_headers if headers else without)
        changelog = driver.create_output_topic("dslh-agg-changelog", Serdes.Bytes(), Serdes.Bytes())
        lines = [f"{label} cl {r.key.hex()} {'null' if r.value is None else r.value.hex()} {r.timestamp} "
                 f"{_headers(r.headers)}" for r in changelog.read_records_to_list()]
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        lines += [f"{label} out {r.key} {'null' if r.value is None else r.value} {r.timestamp} {_headers(r.headers)}"
                  for r in out.read_records_to_list()]
        if headers and op in ("wcount", "slcount"):  # the local bytes under the cache, as Java's all() reads
            lines += sorted(f"{label} store {kv.key.key} {kv.key.window.start} {_stored_window(store, kv)}"
                            for kv in store.all())
        elif headers and op == "scount":
            lines += sorted(f"{label} store {kv.key.key} {kv.key.window.start} {kv.key.window.end} "
                            f"{join_aggregation_headers((), Serdes.Long().serializer.serialize('t', kv.value)).hex()}"
                            for key in "abc" for kv in store.fetch(key))
        elif headers:
            with store._bytes.range(None, None) as stored:  # the local bytes under the serdes
                lines += [f"{label} store {key.decode()} {value.hex()}" for key, value in stored]
    return lines


def _join_lines(label: str, driver: TopologyTestDriver) -> list[str]:
    lines = []
    for side in ("this", "other"):
        log = driver.create_output_topic(f"dslh-agg-{side}-join-store-changelog", Serdes.Bytes(), Serdes.Bytes())
        lines += [f"{label} cl-{side} {r.key.hex()} {r.value.hex()} {r.timestamp} {_headers(r.headers)}"
                  for r in log.read_records_to_list()]
    out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
    return lines + [f"{label} out {r.key} {r.value} {r.timestamp} {_headers(r.headers)}"
                    for r in out.read_records_to_list()]


def _stored_window(store: Any, kv: Any) -> str:
    """A window's value as the store with headers keeps it (`join_headers_value`), read through the store (and its
    cache, as Java's `all()` reads), with the headers it keeps, which Kafka Streams' serde writes."""
    found = store.fetch_with_headers(kv.key.key, kv.key.window.start, kv.key.window.start)
    (entry,) = list(found)
    value = entry.value
    raw = Serdes.Long().serializer.serialize("t", value.value)
    return join_headers_value(value.headers, value.timestamp, raw).hex()


def _cases(seed: int, count: int, formats: tuple[str, ...], ops: tuple[str, ...] = ("count", "reduce", "table"),
           max_timestamp: int = 40) -> list[tuple[str, str, str, str, list[str]]]:
    """(label, op, format, cache, records) drawn from `seed`: keys a-c, values with tombstones for the table,
    timestamps out of order up to `max_timestamp`, up to two headers a record (some with null values)."""
    rnd = random.Random(seed)
    cases = []
    for i in range(count):
        op, fmt, cache = rnd.choice(ops), rnd.choice(formats), rnd.choice("01")
        records = []
        for _ in range(rnd.randint(1, 10)):
            value = rnd.choice(["x", "yy", "null"] if op == "table" else ["x", "yy"])
            headers = ";".join(f"{rnd.choice(['h', 'trace'])}={rnd.choice(['null', 'a', 'xyz', ''])}"
                               for _ in range(rnd.choice([0, 0, 1, 2])))
            fields = [rnd.choice("abc"), value, str(rnd.randint(0, max_timestamp)), *([headers] if headers else [])]
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


WINDOWED_OPS = ("wcount", "slcount", "scount")


def test_windowed_and_session_stores_under_headers_are_kafka_streams() -> None:
    """Windowed (tumbling and sliding) and session counts under HEADERS: the stores are window and session stores
    with headers holding Kafka Streams 4.4.0's bytes (no headers in what the aggregations store), the changelog is
    Kafka Streams' (a removed session's record carries the current record's headers), and so is the output (a
    cached session count forwards with its stored headers: none)."""
    cases = _cases(1356, 60, ("HEADERS", "headers"), WINDOWED_OPS, max_timestamp=300)
    assert {op for _l, op, *_ in cases} == set(WINDOWED_OPS) and {c for *_, c, _r in cases} == {"0", "1"}
    java, ours = _java_and_ours(cases)
    assert any(" store " in line for line in java) and any(" cl " in line and " null " in line for line in java)
    assert ours == java


def test_windowed_and_session_stores_under_default_are_kafka_streams() -> None:
    java, ours = _java_and_ours(_cases(1357, 30, ("DEFAULT",), WINDOWED_OPS, max_timestamp=300))
    assert ours == java


def test_join_store_changelogs_carry_the_records_headers_as_kafka_streams() -> None:
    """Kafka Streams 4.4.0 keeps a stream-stream join's sides as window stores with headers under either format:
    their changelog records carry the headers of the records they hold."""
    cases = _cases(1358, 30, ("DEFAULT", "HEADERS"), ("join",), max_timestamp=60)
    java, ours = _java_and_ours(cases)
    assert any(" cl-this " in line and line.split()[-1] != "-" for line in java)
    assert any(" out " in line for line in java)
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


def test_dsl_window_and_session_stores_with_headers_answer_the_header_queries_with_no_headers() -> None:
    """Under HEADERS a windowed count's store answers `TimestampedWindowKeyWithHeadersQuery` and
    `TimestampedWindowRangeWithHeadersQuery` (and `WindowKeyQuery` with `ValueAndTimestamp`), a session count's
    store `TimestampedWindowRangeWithHeadersQuery.with_key` with the session's end as the timestamp; none with
    headers, since the aggregations store none."""
    bound = PositionBound.unbounded()
    with TopologyTestDriver(_topology("wcount"), _config("headers", "0")) as driver:
        driver.create_input_topic("in", Serdes.String().serializer, Serdes.String().serializer) \
            .pipe_input("k", "v", 107, headers=[("h", b"1")])
        store = driver.get_state_store("agg")
        window = Windowed("k", TimeWindow(100, 200))
        assert list(run_query(store, TimestampedWindowKeyWithHeadersQuery.with_key_and_window_start_range(
            "k", 0, 1000), bound, 0).get_result()) == [ReadOnlyRecord(window, 1, 107, ())]
        assert list(run_query(store, TimestampedWindowRangeWithHeadersQuery.with_window_start_range(0, 1000), bound,
                              0).get_result()) == [ReadOnlyRecord(window, 1, 107, ())]
        assert list(run_query(store, WindowKeyQuery.with_key_and_window_start_range("k", 0, 1000), bound,
                              0).get_result()) == [(100, (1, 107))]
    with TopologyTestDriver(_topology("scount"), _config("headers", "0")) as driver:
        source = driver.create_input_topic("in", Serdes.String().serializer, Serdes.String().serializer)
        source.pipe_input("k", "v", 5, headers=[("h", b"1")])
        source.pipe_input("k", "v", 9, headers=[("h", b"2")])
        store = driver.get_state_store("agg")
        assert list(run_query(store, TimestampedWindowRangeWithHeadersQuery.with_key("k"), bound, 0).get_result()) \
            == [ReadOnlyRecord(Windowed("k", SessionWindow(5, 9)), 2, 9, ())]
