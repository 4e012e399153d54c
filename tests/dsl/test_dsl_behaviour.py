"""Each DSL operation run through the TopologyTestDriver (the Java replay tests cover exact parity)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.dsl import Consumed, Grouped, Materialized, Produced, Repartitioned, StreamsBuilder
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import KeyValue, Record
from streamlet.serdes import Serdes
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.factory import Stores
from streamlet.stores.keyvalue.api import KeyValueStore
from streamlet.testing import TestInputTopic, TestOutputTopic, TopologyTestDriver
from streamlet.topology import Topology

NO_CACHE = {"application.id": "dsl-behaviour", "statestore.cache.max.bytes": 0,
            "default.key.serde": "String", "default.value.serde": "String"}
CACHED = {**NO_CACHE, "statestore.cache.max.bytes": 10 * 1024 * 1024}
STR, LONG = Serdes.String(), Serdes.Long()


@contextmanager
def run(topology: Topology, config: dict[str, Any] | None = None) -> Iterator[TopologyTestDriver]:
    with TopologyTestDriver(topology, config or NO_CACHE) as driver:
        yield driver


def topics(driver: TopologyTestDriver, out_value_serde: Any = STR, out: str = "out",
           inp: str = "in") -> tuple[TestInputTopic, TestOutputTopic]:
    return driver.create_input_topic(inp, STR, STR), driver.create_output_topic(out, STR, out_value_serde)


def one_step(build: Callable[[Any], Any], out_value_serde: Any = STR) -> Callable[..., list[Record]]:
    """A topology in -> build(stream) -> out; returns a function piping (key, value, ts[, headers])."""
    builder = StreamsBuilder()
    result = build(builder.stream("in"))
    result.to("out", Produced(STR, out_value_serde))
    topology = builder.build()

    def pipe(*records: tuple[Any, ...]) -> list[Record]:
        with run(topology) as driver:
            inp, out = topics(driver, out_value_serde)
            for rec in records:
                key, value, ts, *headers = rec
                inp.pipe_input(key, value, ts, headers=headers[0] if headers else None)
            return out.read_records_to_list()

    return pipe


HEADERS = (("h", b"1"),)


def test_filter_and_filter_not_keep_timestamp_and_headers() -> None:
    keep = one_step(lambda s: s.filter(lambda k, v: v.startswith("a")))
    assert keep(("k", "apple", 5, HEADERS), ("k", "pear", 6)) == [Record("k", "apple", 5, HEADERS)]
    drop = one_step(lambda s: s.filter_not(lambda k, v: v.startswith("a")))
    assert drop(("k", "apple", 5), ("k", "pear", 6, HEADERS)) == [Record("k", "pear", 6, HEADERS)]


def test_map_accepts_key_value_or_tuple() -> None:
    swap = one_step(lambda s: s.map(lambda k, v: KeyValue(v, k)))
    assert swap(("k", "v", 1, HEADERS)) == [Record("v", "k", 1, HEADERS)]
    upper = one_step(lambda s: s.map(lambda k, v: (k.upper(), v + "!")))
    assert upper(("k", "v", 2)) == [Record("K", "v!", 2)]


def test_map_values_select_key_and_flat_maps() -> None:
    assert one_step(lambda s: s.map_values(len), LONG)(("k", "abc", 1)) == [Record("k", 3, 1)]
    assert one_step(lambda s: s.select_key(lambda k, v: v))(("k", "v", 1)) == [Record("v", "v", 1)]
    words = one_step(lambda s: s.flat_map_values(lambda v: (w for w in v.split())))
    assert words(("k", "a b", 7, HEADERS)) == [Record("k", "a", 7, HEADERS), Record("k", "b", 7, HEADERS)]
    pairs = one_step(lambda s: s.flat_map(lambda k, v: [(c, k) for c in v]))
    assert pairs(("k", "xy", 3)) == [Record("x", "k", 3), Record("y", "k", 3)]
    assert pairs(("k", "", 3)) == []


def test_peek_and_foreach_see_every_record_in_order() -> None:
    seen: list[tuple[str, Any, Any]] = []
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.peek(lambda k, v: seen.append(("peek", k, v))).to("out")
    stream.foreach(lambda k, v: seen.append(("foreach", k, v)))
    with run(builder.build()) as driver:
        inp, out = topics(driver)
        inp.pipe_input("a", "1", 1)
        inp.pipe_input("b", "2", 2)
        assert out.read_key_values_to_list() == [KeyValue("a", "1"), KeyValue("b", "2")]
    assert seen == [("peek", "a", "1"), ("foreach", "a", "1"), ("peek", "b", "2"), ("foreach", "b", "2")]


def test_merge_forwards_both_inputs() -> None:
    builder = StreamsBuilder()
    builder.stream("left").merge(builder.stream("right")).to("out")
    with run(builder.build()) as driver:
        left = driver.create_input_topic("left", STR, STR)
        right = driver.create_input_topic("right", STR, STR)
        out = driver.create_output_topic("out", STR, STR)
        left.pipe_input("l", "1", 1)
        right.pipe_input("r", "2", 2)
        assert out.read_records_to_list() == [Record("l", "1", 1), Record("r", "2", 2)]


class RunningTotal(Processor):
    """Adds the value's length to a per-key total kept in a store, and forwards the total."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store("totals")
        assert isinstance(store, KeyValueStore)
        self.store = store

    def process(self, record: Record) -> None:
        total = (self.store.get(record.key) or 0) + len(record.value)
        self.store.put(record.key, total)
        self.context.forward(record.with_value(total))


def test_process_with_a_store_then_continue_with_the_dsl() -> None:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("totals"), STR, LONG))
    builder.stream("in").process(RunningTotal, "totals").map_values(lambda t: t * 10).to("out", Produced(STR, LONG))
    with run(builder.build()) as driver:
        inp, out = topics(driver, LONG)
        inp.pipe_key_value_list([("a", "xx"), ("a", "yyy"), ("b", "z")])
        assert out.read_key_values_to_list() == [KeyValue("a", 20), KeyValue("a", 50), KeyValue("b", 10)]
        assert driver.get_key_value_store("totals").get("a") == 5


def test_count_keeps_the_max_timestamp_in_the_store(caplog: pytest.LogCaptureFixture) -> None:
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count(Materialized("counts")).to_stream().to("out", Produced(STR, LONG))
    with run(builder.build()) as driver, caplog.at_level(logging.WARNING, logger="streamlet.dsl"):
        inp, out = topics(driver, LONG)
        inp.pipe_input("a", "x", 10)
        inp.pipe_input("a", "x", 5)
        inp.pipe_input(None, "x", 20)  # dropped: null key
        inp.pipe_input("a", None, 30)  # dropped: null value
        assert out.read_records_to_list() == [Record("a", 1, 10), Record("a", 2, 10)]
        assert driver.get_timestamped_key_value_store("counts").get("a") == ValueAndTimestamp(2, 10)
        assert driver.get_key_value_store("counts").get("a") == 2  # plain values, as Java's driver shows them
    assert sum("Skipping record due to null key or value" in m for m in caplog.messages) == 2


def test_caching_sends_one_update_per_key_per_commit() -> None:
    builder = StreamsBuilder()
    (builder.stream("in").flat_map_values(str.split).group_by_key().count()
     .to_stream().to("out", Produced(STR, LONG)))
    with run(builder.build(), CACHED) as driver:
        inp, out = topics(driver, LONG)
        inp.pipe_input("line", "a a a", 1)  # one record, one commit: the cache forwards once
        inp.pipe_input("line", "a", 2)
        assert out.read_records_to_list() == [Record("line", 3, 1), Record("line", 4, 2)]


def test_group_by_repartitions_through_an_internal_topic() -> None:
    builder = StreamsBuilder()
    (builder.stream("in").group_by(lambda k, v: v[0], Grouped(STR, STR))
     .reduce(lambda a, b: a + "," + b, Materialized("joined", caching=False))
     .to_stream().to("out"))
    with run(builder.build(), {**CACHED, "application.id": "regroup"}) as driver:
        inp, out = topics(driver)
        inp.pipe_key_value_list([("k1", "x1"), ("k2", "y2"), ("k3", "x3")])
        assert out.read_key_values_to_list() == [KeyValue("x", "x1"), KeyValue("y", "y2"),
                                                 KeyValue("x", "x1,x3")]
        assert driver.get_key_value_store("joined").get("x") == "x1,x3"
    assert "regroup-joined-repartition" in driver.produced_topic_names()
    assert "regroup-joined-changelog" in driver.produced_topic_names()


def test_group_by_selector_sees_key_and_value_and_reduce_folds_values() -> None:
    builder = StreamsBuilder()
    (builder.stream("in").group_by(lambda k, v: k[0]).reduce(lambda a, b: a + b)
     .to_stream().to("out"))
    with run(builder.build()) as driver:
        inp, out = topics(driver)
        inp.pipe_key_value_list([("ab", "1"), ("ac", "2"), ("b", "3")])
        assert out.read_key_values_to_list() == [KeyValue("a", "1"), KeyValue("a", "12"), KeyValue("b", "3")]


def test_repartition_and_in_memory_store_without_logging() -> None:
    builder = StreamsBuilder()
    (builder.stream("in").select_key(lambda k, v: v).repartition(Repartitioned(name="by-value"))
     .group_by_key().count(Materialized("c", store_type="in_memory", logging=False))
     .to_stream().to("out", Produced(STR, LONG)))
    with run(builder.build(), {**NO_CACHE, "application.id": "rp"}) as driver:
        inp, out = topics(driver, LONG)
        inp.pipe_key_value_list([("1", "x"), ("2", "x")])
        assert out.read_key_values_to_list() == [KeyValue("x", 1), KeyValue("x", 2)]
    # Every topic written to, read or not; no changelog (logging off).
    assert driver.produced_topic_names() == {"out", "rp-by-value-repartition"}


def test_table_source_materialized_tombstones_and_to_stream() -> None:
    builder = StreamsBuilder()
    table = builder.table("in", Consumed(STR, STR), Materialized("rows"))
    table.map_values(str.upper).to_stream().to("out")
    with run(builder.build()) as driver:
        inp, out = topics(driver)
        inp.pipe_input("a", "x", 1)
        inp.pipe_input("b", "y", 2)
        inp.pipe_input("a", None, 3)
        inp.pipe_input(None, "ignored", 4)
        assert out.read_records_to_list() == [Record("a", "X", 1), Record("b", "Y", 2), Record("a", None, 3)]
        store = driver.get_timestamped_key_value_store("rows")
        assert store.get("a") is None
        assert store.get("b") == ValueAndTimestamp("y", 2)


def test_table_filter_forwards_tombstones_for_rejected_rows() -> None:
    builder = StreamsBuilder()
    builder.table("in").filter_not(lambda k, v: v == "hide").to_stream().to("out")
    with run(builder.build()) as driver:
        inp, out = topics(driver)
        inp.pipe_key_value_list([("a", "show"), ("a", "hide"), ("b", "hide")])
        assert out.read_key_values_to_list() == [KeyValue("a", "show"), KeyValue("a", None), KeyValue("b", None)]


def test_table_filter_with_old_values_skips_rows_never_shown() -> None:
    builder = StreamsBuilder()
    (builder.table("in", materialized=Materialized("src")).filter(lambda k, v: v != "hide")
     .to_stream().to("out"))
    with run(builder.build()) as driver:
        inp, out = topics(driver)
        inp.pipe_key_value_list([("a", "show"), ("a", "hide"), ("b", "hide"), ("b", "hide")])
        assert out.read_key_values_to_list() == [KeyValue("a", "show"), KeyValue("a", None)]


keys = st.sampled_from(["a", "b", "c"])
events = st.lists(st.tuples(keys, st.integers(0, 1000)), max_size=25)


@settings(max_examples=50, deadline=None)
@given(events)
def test_property_aggregate_is_a_fold_stamped_with_the_running_max(items: list[tuple[str, int]]) -> None:
    builder = StreamsBuilder()
    (builder.stream("in").group_by_key()
     .aggregate(lambda: "", lambda k, v, agg: agg + v[0], Materialized(value_serde=STR))
     .to_stream().to("out"))
    with run(builder.build()) as driver:
        inp, out = topics(driver)
        for key, ts in items:
            inp.pipe_input(key, f"{ts % 10}", ts)
        got = out.read_records_to_list()
    folded: dict[str, str] = {}
    newest: dict[str, int] = {}
    expected = []
    for key, ts in items:
        folded[key] = folded.get(key, "") + f"{ts % 10}"
        newest[key] = max(newest.get(key, ts), ts)
        expected.append(Record(key, folded[key], newest[key]))
    assert got == expected


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(keys, st.sampled_from(["x", "y", "z"])), max_size=25))
def test_property_group_by_count_matches_counter(items: list[tuple[str, str]]) -> None:
    builder = StreamsBuilder()
    builder.stream("in").group_by(lambda k, v: v).count().to_stream().to("out", Produced(STR, LONG))
    with run(builder.build()) as driver:
        inp, out = topics(driver, LONG)
        inp.pipe_key_value_list(items)
        updates = out.read_key_values_to_list()
    running: Counter[str] = Counter()
    expected = []
    for _key, value in items:
        running[value] += 1
        expected.append(KeyValue(value, running[value]))
    assert updates == expected
