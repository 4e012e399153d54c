"""The foreign-key join's extractor may take the row's key too (KIP-1104, Kafka Streams 4.x's `BiFunction`
overload): `join(other, lambda key, value: ..., joiner)`.

Property: a join whose extractor reads the foreign key from the key gives, record for record, what the
same join gives when the key is copied into the value and a one-parameter extractor reads it from there
(the pre-4.x workaround), for any sequence of left and right updates and deletes, inner and left joins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet import Serdes, StreamsBuilder, TableJoined, Topology
from streamlet.dsl.foreign_key_join import sees_key
from streamlet.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {"default.key.serde": "String", "default.value.serde": "String"}
LEFT_KEYS = ["a:1", "a:2", "b:1", "c:3", "x"]  # the foreign key is before the colon ("x" has none)
RIGHT_KEYS = ["a", "b", "c"]


def _foreign_key(key: str) -> str | None:
    return key.split(":")[0] if ":" in key else None


def _topology(extractor: Callable[..., Any], joiner: Callable[[Any, Any], Any], left: bool) -> Topology:
    builder = StreamsBuilder()
    orders, customers = builder.table("left"), builder.table("right")
    join = orders.left_join if left else orders.join
    join(customers, extractor, joiner, TableJoined(name="fk")).to_stream().to("out")
    return builder.build()


def _run(topology: Topology, updates: list[tuple[str, str, str | None]], embed_key: bool) -> list[Any]:
    with TopologyTestDriver(topology, CONFIG) as driver:
        pipes = {side: driver.create_input_topic(side, S, S) for side in ("left", "right")}
        out = driver.create_output_topic("out", S, S)
        for ts, (side, key, value) in enumerate(updates):
            if embed_key and side == "left" and value is not None:
                value = f"{key}|{value}"
            pipes[side].pipe_input(key, value, ts)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


_updates = st.lists(st.one_of(
    st.tuples(st.just("left"), st.sampled_from(LEFT_KEYS), st.none() | st.sampled_from(["p", "q", "r"])),
    st.tuples(st.just("right"), st.sampled_from(RIGHT_KEYS), st.none() | st.sampled_from(["X", "Y"])),
), max_size=25)


@settings(max_examples=60, deadline=None)
@given(updates=_updates, left=st.booleans())
def test_an_extractor_of_key_and_value_joins_as_the_key_copied_into_the_value(
        updates: list[tuple[str, str, str | None]], left: bool) -> None:
    def pair(a: Any, b: Any) -> str:
        return f"{a}&{b}"

    with_key = _run(_topology(lambda key, _value: _foreign_key(key), pair, left), updates, embed_key=False)
    from_value = _run(_topology(lambda value: _foreign_key(value.split("|")[0]),
                                lambda a, b: pair(a.split("|", 1)[1], b), left), updates, embed_key=True)
    assert with_key == from_value


def test_a_one_parameter_extractor_still_sees_the_value_only() -> None:
    seen: list[Any] = []

    def by_value(value: Any) -> str:
        seen.append(value)
        return "a"

    out = _run(_topology(by_value, lambda a, b: f"{a}&{b}", left=False),
               [("right", "a", "X"), ("left", "a:1", "p")], embed_key=False)
    assert seen == ["p"] and out == [("a:1", "p&X", 1)]


def test_which_extractors_see_the_key() -> None:
    def two(key: Any, value: Any) -> Any: ...
    def two_with_default(value: Any, extra: Any = None) -> Any: ...
    def keyword_only(value: Any, *, key: Any = None) -> Any: ...

    assert sees_key(two) and sees_key(lambda k, v: k)
    assert not sees_key(two_with_default) and not sees_key(keyword_only) and not sees_key(lambda v: v)
    assert not sees_key(str.upper.__get__("x")) and not sees_key(len)  # builtins: the value only
