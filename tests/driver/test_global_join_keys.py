"""A global-table join's joiner may see the stream record's key, and the key it was mapped to (Kafka Streams
4.x's `ValueJoinerWithKey` and `ValueJoinerWithStreamAndMappedKey`): `join(global_table, selector,
lambda key, mapped_key, value, row: ...)`.

Property: for any stream input and table rows, inner and left joins, a four-parameter joiner gets the
record's own key, `selector(key, value)` and the same (value, row) pair the two-parameter joiner gets, on the
same records in the same order; a three-parameter one gets the key, value and row."""

from __future__ import annotations

from ast import literal_eval
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet import Serdes, StreamsBuilder, Topology
from streamlet.dsl.processors.stream_table_join import joiner_arity
from streamlet.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {"default.key.serde": "String", "default.value.serde": "String"}


def _selector(key: Any, value: Any) -> Any:
    return None if value is None or value.startswith("-") else value[0]


def _topology(joiner: Callable[..., Any], left: bool) -> Topology:
    builder = StreamsBuilder()
    table = builder.global_table("rows")
    stream = builder.stream("events")
    join = stream.left_join if left else stream.join
    join(table, _selector, joiner).map_values(repr).to("out")
    return builder.build()


def _run(topology: Topology, rows: list[tuple[str, str | None]], events: list[tuple[str | None, str | None]]
         ) -> list[tuple[Any, str]]:
    with TopologyTestDriver(topology, CONFIG) as driver:
        row_pipe = driver.create_input_topic("rows", S, S)
        event_pipe = driver.create_input_topic("events", S, S)
        for key, value in rows:
            row_pipe.pipe_input(key, value, 0)
        for ts, (key, value) in enumerate(events):
            event_pipe.pipe_input(key, value, ts)
        return [(r.key, r.value) for r in driver.create_output_topic("out", S, S).read_records_to_list()]


_rows = st.lists(st.tuples(st.sampled_from("abc"), st.none() | st.sampled_from(["X", "Y"])), max_size=6)
_events = st.lists(st.tuples(st.none() | st.sampled_from(["k1", "k2"]),
                             st.none() | st.sampled_from(["a1", "b2", "c3", "d4", "-x"])), max_size=15)


@settings(max_examples=60, deadline=None)
@given(rows=_rows, events=_events, left=st.booleans())
def test_the_joiner_sees_the_stream_key_and_the_mapped_key(rows: list[tuple[str, str | None]],
                                                           events: list[tuple[str | None, str | None]],
                                                           left: bool) -> None:
    plain = _run(_topology(lambda v, row: (v, row), left), rows, events)
    with_key = _run(_topology(lambda k, v, row: (k, v, row), left), rows, events)
    with_keys = _run(_topology(lambda k, mk, v, row: (k, mk, v, row), left), rows, events)
    assert len(plain) == len(with_key) == len(with_keys)
    for (key, pair), (key1, triple), (key2, quad) in zip(plain, with_key, with_keys, strict=True):
        v, row = literal_eval(pair)  # repr of a tuple of str/None
        assert key == key1 == key2
        assert literal_eval(triple) == (key, v, row)
        assert literal_eval(quad) == (key, _selector(key, v), v, row)


def test_joiner_arity() -> None:
    assert joiner_arity(lambda v, r: v) == 2 and joiner_arity(lambda k, v, r: v) == 3
    assert joiner_arity(lambda k, m, v, r: v) == 4 and joiner_arity(max) == 2
    assert joiner_arity(lambda v, r, extra=None: v) == 2
