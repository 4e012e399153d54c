"""Explicit naming of internal resources (KIP-1111): `StreamsBuilder({"ensure.explicit.internal.resource.naming":
True})` refuses a topology whose state stores, changelog or repartition topics have generated names, and
names them in Kafka Streams' words.

Differential: each labelled topology below is built the same way by Kafka Streams 4.4.0
(NamingCheck in tests/java/streams4, built with Maven) with the setting on; the outcome (built, or the
`TopologyException` message) must be the same, label by label. Which operations record a generated name is
Kafka Streams' own choice and not always the obvious one (a suppression buffer's changelog but not its
store, a foreign-key join's result store but not its subscription store), so every case is asked of it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from streamlet import (
    Grouped,
    Joined,
    JoinWindows,
    KStream,
    KTable,
    Materialized,
    Repartitioned,
    SessionWindows,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TableJoined,
    TimeWindows,
)
from streamlet.dsl.suppressed import BufferConfig
from streamlet.errors import TopologyError
from tests.streams4_java import run_check

SECOND = timedelta(seconds=1)
TEN = timedelta(seconds=10)


def _in(b: StreamsBuilder) -> KStream:
    return b.stream("in")


def _table(b: StreamsBuilder, topic: str, store: str) -> KTable:
    return b.table(topic, materialized=Materialized(store))


def _first(x: object, _y: object) -> object:
    return x


def _suppress(name: str | None = None, logged: bool = True) -> Suppressed:
    buffer = BufferConfig.unbounded() if logged else BufferConfig.unbounded().with_logging_disabled()
    suppressed = Suppressed.until_time_limit(SECOND, buffer)
    return suppressed if name is None else suppressed.with_name(name)


def _two_counts(b: StreamsBuilder) -> None:
    _in(b).group_by_key().count()
    b.stream("in2").select_key(lambda k, v: v).group_by_key().count()


def _join(b: StreamsBuilder, options: StreamJoined | None = None, select: bool = False, kind: str = "join") -> None:
    left = _in(b).select_key(lambda k, v: v) if select else _in(b)
    join = getattr(left, kind)
    join(b.stream("in2"), _first, JoinWindows.of_time_difference_with_no_grace(SECOND), options).to("out")


CASES: dict[str, Callable[[StreamsBuilder], object]] = {
    "count": lambda b: _in(b).group_by_key().count(),
    "count_named": lambda b: _in(b).group_by_key().count(Materialized("c")),
    "count_serdes_only": lambda b: _in(b).group_by_key().count(Materialized()),
    "count_unlogged": lambda b: _in(b).group_by_key().count(Materialized(logging=False)),
    "reduce": lambda b: _in(b).group_by_key().reduce(_first),
    "aggregate": lambda b: _in(b).group_by_key().aggregate(lambda: "", lambda k, v, a: a),
    "select_key_count": lambda b: _in(b).select_key(lambda k, v: v).group_by_key().count(),
    "select_key_count_named": lambda b: _in(b).select_key(lambda k, v: v).group_by_key(Grouped(name="g"))
    .count(Materialized("c")),
    "select_key_count_store_named": lambda b: _in(b).select_key(lambda k, v: v).group_by_key()
    .count(Materialized("c")),
    "group_by_grouped_named": lambda b: _in(b).group_by(lambda k, v: v, Grouped(name="g")).count(),
    "two_counts": _two_counts,
    "windowed_count": lambda b: _in(b).group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(TEN)).count(),
    "session_count": lambda b: _in(b).group_by_key()
    .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(TEN)).count(),
    "sliding_count": lambda b: _in(b).group_by_key()
    .windowed_by(SlidingWindows.of_time_difference_with_no_grace(TEN)).count(),
    "cogroup": lambda b: _in(b).group_by_key().cogroup(lambda k, v, a: a).aggregate(lambda: ""),
    "table": lambda b: b.table("t").to_stream().to("out"),
    "table_named": lambda b: _table(b, "t", "ts").to_stream().to("out"),
    "global_table": lambda b: b.global_table("g"),
    "to_table": lambda b: _in(b).to_table().to_stream().to("out"),
    "table_join": lambda b: _table(b, "t1", "a").join(_table(b, "t2", "b"), _first).to_stream().to("out"),
    "table_join_serdes_only": lambda b: _table(b, "t1", "a").join(_table(b, "t2", "b"), _first, Materialized())
    .to_stream().to("out"),
    "table_left_join_named": lambda b: _table(b, "t1", "a").left_join(_table(b, "t2", "b"), _first, Materialized("j"))
    .to_stream().to("out"),
    "table_filter_map_values": lambda b: _table(b, "t1", "a").filter(lambda k, v: True)
    .map_values(lambda v: v, Materialized()).to_stream().to("out"),
    "fk_join": lambda b: _table(b, "t1", "a").join(_table(b, "t2", "b"), lambda v: v, _first).to_stream().to("out"),
    "fk_join_named": lambda b: _table(b, "t1", "a").join(
        _table(b, "t2", "b"), lambda v: v, _first, TableJoined(name="fk"), Materialized("r")).to_stream().to("out"),
    "table_group_by": lambda b: _table(b, "t1", "a").group_by(lambda k, v: (v, v)).count(),
    "stream_join": lambda b: _join(b),
    "stream_join_store_named": lambda b: _join(b, StreamJoined(store_name="j")),
    "stream_join_processor_named": lambda b: _join(b, StreamJoined(name="n")),
    "stream_join_unlogged": lambda b: _join(b, StreamJoined(logging=False)),
    "stream_left_join": lambda b: _join(b, kind="left_join"),
    "stream_outer_join": lambda b: _join(b, kind="outer_join"),
    "stream_join_repartition": lambda b: _join(b, StreamJoined(store_name="j"), select=True),
    "stream_join_repartition_named": lambda b: _join(b, StreamJoined(store_name="j", name="n"), select=True),
    "stream_table_join_repartition_named": lambda b: _in(b).select_key(lambda k, v: v)
    .join(_table(b, "t", "ts"), _first, Joined(name="jj")).to("out"),
    "stream_table_join": lambda b: _in(b).join(_table(b, "t", "ts"), _first).to("out"),
    "stream_table_join_repartition": lambda b: _in(b).select_key(lambda k, v: v).join(_table(b, "t", "ts"), _first)
    .to("out"),
    "repartition": lambda b: _in(b).repartition().to("out"),
    "repartition_serdes_only": lambda b: _in(b).repartition(Repartitioned()).to("out"),
    "repartition_named": lambda b: _in(b).repartition(Repartitioned(name="r")).to("out"),
    "suppress": lambda b: _in(b).group_by_key().count(Materialized("c")).suppress(_suppress()).to_stream().to("out"),
    "suppress_named": lambda b: _in(b).group_by_key().count(Materialized("c")).suppress(_suppress("s"))
    .to_stream().to("out"),
    "suppress_unlogged": lambda b: _in(b).group_by_key().count(Materialized("c")).suppress(_suppress(logged=False))
    .to_stream().to("out"),
    "stateless": lambda b: _in(b).filter(lambda k, v: True).map_values(lambda v: v).to("out"),
}


def _streamlet_outcome(case: Callable[[StreamsBuilder], object]) -> str:
    builder = StreamsBuilder({"ensure.explicit.internal.resource.naming": "true"})
    case(builder)
    try:
        builder.build()
    except TopologyError as exc:
        return f"TopologyException: {exc}"
    return "OK"


@pytest.fixture(scope="module")
def kafka_streams() -> dict[str, str]:
    lines = [line.split("\t", 1) for line in run_check("NamingCheck").splitlines() if "\t" in line]
    return {label: outcome.replace("\\n", "\n") for label, outcome in lines}


def test_every_case_is_asked_of_both(kafka_streams: dict[str, str]) -> None:
    assert list(kafka_streams) == list(CASES)


@pytest.mark.parametrize("label", list(CASES))
def test_the_naming_check_answers_as_kafka_streams(kafka_streams: dict[str, str], label: str) -> None:
    assert _streamlet_outcome(CASES[label]) == kafka_streams[label]


def test_without_the_setting_generated_names_are_allowed() -> None:
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().count()
    assert builder.build().describe() is not None
