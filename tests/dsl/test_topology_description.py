"""The Java collection orders behind `describe()`, and the description as data.

The golden tests check whole outputs; these pin the pieces (String.hashCode, HashSet order, the
red-black tree) so a regression points at its cause.
"""

from __future__ import annotations

from functools import cmp_to_key

from hypothesis import given
from hypothesis import strategies as st

from streamlet.topology_description import (
    JavaTreeSet,
    ProcessorDescription,
    SinkDescription,
    SourceDescription,
    _Node,
    hash_capacity_copied,
    hash_capacity_grown,
    java_hash_order,
    java_string_hash,
    java_string_key,
)
from tests.dsl.topologies import processor_api, wordcount


def test_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("\u00e9") == 233
    # A supplementary character hashes as its two UTF-16 code units, as in Java.
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00
    # Values printed by Java 17 (`"...".hashCode()`); long strings wrap around 32 bits.
    assert java_string_hash("KSTREAM-SOURCE-0000000000") == 1861603632
    assert java_string_hash("counts-store") == 211737368
    assert java_string_hash("x" * 100) == 1680682496


def test_string_order_is_utf16_code_unit_order() -> None:
    assert java_string_key("\uffff") > java_string_key("\U0001F600")  # Python's str order says the opposite
    assert java_string_key("KSTREAM-A") < java_string_key("KSTREAM-B") < java_string_key("a")


def test_hash_capacities() -> None:
    assert [hash_capacity_grown(n) for n in (0, 12, 13, 24, 25)] == [16, 16, 32, 32, 64]
    assert [hash_capacity_copied(n) for n in (0, 1, 11, 12, 24)] == [16, 16, 16, 32, 64]


def test_hash_order_is_by_bucket_then_insertion() -> None:
    # "Aa" and "BB" collide, so they keep insertion order whichever way round they are added.
    assert java_hash_order(["BB", "Aa"], 16) == ["BB", "Aa"]
    assert java_hash_order(["Aa", "BB"], 16) == ["Aa", "BB"]
    assert java_hash_order(["topic-b", "topic-a", "topic-c"], 16) == ["topic-a", "topic-b", "topic-c"]


def _node(name: str, size: int) -> _Node:
    node = _Node(name)
    node.size = size
    return node


def _by_size_then_name(a: _Node, b: _Node) -> int:
    if a.size != b.size:
        return b.size - a.size
    return (a.name > b.name) - (a.name < b.name)


@given(st.lists(st.tuples(st.integers(1, 5), st.text("abc", min_size=1, max_size=3)), unique_by=lambda t: t[1]))
def test_tree_set_with_a_fixed_order_iterates_sorted(items: list[tuple[int, str]]) -> None:
    tree = JavaTreeSet(_by_size_then_name)
    nodes = [_node(name, size) for size, name in items]
    for node in nodes:
        tree.add(node)
    assert list(tree) == sorted(nodes, key=cmp_to_key(_by_size_then_name))
    _assert_red_black(tree)


def _assert_red_black(tree: JavaTreeSet) -> None:
    root = tree._root
    assert root is None or not root.red

    def black_height(t: object) -> int:
        if t is None:
            return 1
        left, right = black_height(t.left), black_height(t.right)  # type: ignore[attr-defined]
        assert left == right
        if t.red:  # type: ignore[attr-defined]
            assert not (t.left and t.left.red) and not (t.right and t.right.red)  # type: ignore[attr-defined]
        return left + (0 if t.red else 1)  # type: ignore[attr-defined]

    black_height(root)


def test_tree_set_keeps_the_order_its_shape_recorded_when_keys_change() -> None:
    # Like java.util.TreeSet: changing a key after insertion does not re-sort what is already in.
    tree = JavaTreeSet(_by_size_then_name)
    a, b = _node("a", 1), _node("b", 1)
    tree.add(a)
    tree.add(b)
    b.size = 5
    assert [n.name for n in tree] == ["a", "b"]
    tree.add(a)  # equal to itself: not added twice
    assert len(tree) == 2


def test_description_is_inspectable() -> None:
    description = processor_api().describe()
    (sub,) = description.subtopologies
    by_name = {node.name: node for node in sub.nodes}
    source = by_name["Source"]
    assert isinstance(source, SourceDescription)
    assert source.topics == ["topic-a", "topic-b", "topic-c"]
    process = by_name["Process"]
    assert isinstance(process, ProcessorDescription)
    assert process.stores == ["Counts", "store-a", "store-b"]
    assert [n.name for n in process.predecessors] == ["Source"]
    assert {n.name for n in process.successors} == {"Leaf", "Sink-1", "Sink-2"}
    sink = by_name["Sink-2"]
    assert isinstance(sink, SinkDescription)
    assert sink.topic == "output-2"
    assert {n.name for n in sink.predecessors} == {"Process", "Audit"}


def test_repartitioned_topology_has_two_subtopologies_in_description() -> None:
    description = wordcount().describe()
    assert [s.id for s in description.subtopologies] == [0, 1]
    second = description.subtopologies[1]
    assert second.nodes[0].name == "counts-store-repartition-source"
    assert str(description).startswith("Topologies:\n   Sub-topology: 0\n")
