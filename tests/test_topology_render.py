"""`streamlet describe --format dot|mermaid|svg`: every node, topic and store of the topology is drawn,
with every link of its description, in a document each tool accepts."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from examples.bench_topologies_windows_join import join_topology
from examples.wordcount import topology as wordcount_topology
from streamlet.cli import main
from streamlet.topology_description import ProcessorDescription, SinkDescription, SourceDescription
from streamlet.topology_render import render, to_dot, to_mermaid, to_svg


def _expected(description: object) -> tuple[set[str], set[tuple[str, str]]]:
    """Labels (nodes, topics, stores) and labelled links the description holds."""
    labels: set[str] = set()
    links: set[tuple[str, str]] = set()
    for sub in description.subtopologies:  # type: ignore[attr-defined]
        for node in sub.nodes:
            labels.add(node.name)
            links |= {(node.name, succ.name) for succ in node.successors}
            if isinstance(node, SourceDescription):
                labels |= set(node.topics)
                links |= {(topic, node.name) for topic in node.topics}
            if isinstance(node, SinkDescription):
                labels.add(node.topic)
                links.add((node.name, node.topic))
            if isinstance(node, ProcessorDescription):
                labels |= set(node.stores)
                links |= {(node.name, store) for store in node.stores}
    return labels, links


@pytest.mark.parametrize("make", [wordcount_topology, join_topology])
def test_dot_has_every_node_and_link(make: object) -> None:
    description = make().describe()  # type: ignore[operator]
    labels, links = _expected(description)
    dot = to_dot(description)
    assert dot.startswith("digraph topology {") and dot.rstrip().endswith("}")
    drawn = set(re.findall(r'label="([^"]+)"', dot)) - {f"Sub-topology {s.id}" for s in description.subtopologies}
    assert drawn == labels
    edges = {(a.split(":", 1)[1], b.split(":", 1)[1]) for a, b in re.findall(r'"([^"]+)" -> "([^"]+)"', dot)}
    assert edges == links


@pytest.mark.parametrize("make", [wordcount_topology, join_topology])
def test_mermaid_has_every_node_and_link(make: object) -> None:
    description = make().describe()  # type: ignore[operator]
    labels, links = _expected(description)
    text = to_mermaid(description)
    assert text.startswith("flowchart TB\n")
    ids = dict(re.findall(r'^\s+([tsn]\d+)\W+"([^"]+)"', text, flags=re.MULTILINE))
    assert set(ids.values()) == labels
    edges = {(ids[a], ids[b]) for a, b in re.findall(r"^\s+([tsn]\d+) (?:-->|-\.-) ([tsn]\d+)$", text, re.MULTILINE)}
    assert edges == links


@pytest.mark.parametrize("make", [wordcount_topology, join_topology])
def test_svg_is_valid_xml_with_every_box_apart(make: object) -> None:
    description = make().describe()  # type: ignore[operator]
    labels, links = _expected(description)
    root = ET.fromstring(to_svg(description))
    ns = "{http://www.w3.org/2000/svg}"
    groups = root.findall(f"{ns}g")
    titles = {g.find(f"{ns}title").text.split(": ", 1)[1] for g in groups}  # type: ignore[union-attr]
    assert titles == labels
    rects = [(float(r.get("x")), float(r.get("y"))) for g in groups for r in g.findall(f"{ns}rect")]  # type: ignore[arg-type]
    assert len(set(rects)) == len(rects), "two boxes drawn on top of each other"
    assert len(root.findall(f"{ns}line")) + len(root.findall(f"{ns}path")) == len(links)


def test_describe_command_prints_each_format(capsys: pytest.CaptureFixture[str]) -> None:
    for fmt in ("text", "dot", "mermaid", "svg"):
        assert main(["describe", "examples.wordcount:topology", "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert out.rstrip("\n") == render(wordcount_topology().describe(), fmt).rstrip("\n")
        assert "counts-store" in out


def test_a_global_store_is_drawn_with_its_source_and_store() -> None:
    from tests.dsl.global_fk_topologies import global_table_joins

    description = global_table_joins().describe()
    for fmt in ("dot", "mermaid", "svg"):
        drawing = render(description, fmt)
        assert "global-input-STATE-STORE-0000000000" in drawing and "KTABLE-SOURCE-0000000002" in drawing, fmt
