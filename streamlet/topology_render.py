"""Drawings of a `TopologyDescription`: Graphviz DOT, Mermaid, and a self-contained SVG.

`describe()`'s text is Kafka Streams' and made for diffing; a drawing is for reading. Topics are drawn
as nodes of their own between the sub-topologies, so a repartition topic shows where one sub-topology
hands over to the next, and stores hang off the processors that use them. The SVG needs no Graphviz
and no script (a page can inline it); its layout is `streamlet.topology_svg`'s.
"""

from __future__ import annotations

from collections.abc import Iterator

from streamlet.topology_description import (
    ProcessorDescription,
    SinkDescription,
    SourceDescription,
    SubtopologyDescription,
    TopologyDescription,
    groups,
    node_kind,
)
from streamlet.topology_svg import to_svg as draw

FORMATS = ("text", "dot", "mermaid", "svg")


def render(description: TopologyDescription, fmt: str) -> str:
    """`description` in `fmt`: one of FORMATS."""
    if fmt == "text":
        return str(description)
    if fmt == "dot":
        return to_dot(description)
    if fmt == "mermaid":
        return to_mermaid(description)
    if fmt == "svg":
        return to_svg(description)
    raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")


def _edges(sub: SubtopologyDescription) -> Iterator[tuple[str, str]]:
    """(from, to) for node links, topic reads and writes, and store use; ids prefixed by kind."""
    for node in sub.nodes:
        for succ in node.successors:
            yield f"n:{node.name}", f"n:{succ.name}"
        if isinstance(node, SourceDescription):
            for topic in node.topics:
                yield f"t:{topic}", f"n:{node.name}"
        elif isinstance(node, SinkDescription) and node.topic:  # a dynamic sink has no fixed topic
            yield f"n:{node.name}", f"t:{node.topic}"
        elif isinstance(node, ProcessorDescription):
            for store in node.stores:
                yield f"n:{node.name}", f"s:{store}"


def _topics_and_stores(description: TopologyDescription) -> tuple[list[str], list[str]]:
    topics: dict[str, None] = {}
    stores: dict[str, None] = {}
    for sub in groups(description):
        for src, dst in _edges(sub):
            for end in (src, dst):
                kind, name = end.split(":", 1)
                (topics if kind == "t" else stores if kind == "s" else {})[name] = None
    return list(topics), list(stores)


# -- DOT ------------------------------------------------------------------------------------------------
def _dot_id(ident: str) -> str:
    return '"' + ident.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(description: TopologyDescription) -> str:
    """Graphviz DOT: `streamlet describe --format dot APP | dot -Tpng > topology.png`."""
    lines = ["digraph topology {", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10];']
    topics, stores = _topics_and_stores(description)
    for topic in topics:
        lines.append(f"  {_dot_id('t:' + topic)} [label={_dot_id(topic)}, shape=cds, style=filled, "
                     'fillcolor="#e8eef7"];')
    for store in stores:
        lines.append(f"  {_dot_id('s:' + store)} [label={_dot_id(store)}, shape=cylinder];")
    for sub in groups(description):
        lines.append(f"  subgraph cluster_{sub.id} {{")
        lines.append(f"    label={_dot_id(f'Sub-topology {sub.id}')};")
        for node in sub.nodes:
            shape = {"source": "invhouse", "sink": "house", "processor": "box"}[node_kind(node)]
            lines.append(f"    {_dot_id('n:' + node.name)} [label={_dot_id(node.name)}, shape={shape}];")
        lines.append("  }")
    for sub in groups(description):
        for src, dst in _edges(sub):
            style = " [style=dashed, arrowhead=none]" if dst.startswith("s:") else ""
            lines.append(f"  {_dot_id(src)} -> {_dot_id(dst)}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- Mermaid ----------------------------------------------------------------------------------------------
def to_mermaid(description: TopologyDescription) -> str:
    """A Mermaid flowchart (renders in GitHub and GitLab markdown inside a ```mermaid block)."""
    ids: dict[str, str] = {}

    def mid(key: str) -> str:
        return ids.setdefault(key, f"{key[0]}{len(ids)}")

    def label(text: str) -> str:
        return '"' + text.replace('"', "#quot;") + '"'

    lines = ["flowchart TB"]
    topics, stores = _topics_and_stores(description)
    for topic in topics:
        lines.append(f"    {mid('t:' + topic)}[/{label(topic)}/]")
    for store in stores:
        lines.append(f"    {mid('s:' + store)}[({label(store)})]")
    for sub in groups(description):
        lines.append(f"    subgraph sub{sub.id}[{label(f'Sub-topology {sub.id}')}]")
        for node in sub.nodes:
            open_, close = {"source": ("[>", "]"), "sink": ("[\\", "/]"), "processor": ("[", "]")}[node_kind(node)]
            lines.append(f"        {mid('n:' + node.name)}{open_}{label(node.name)}{close}")
        lines.append("    end")
    for sub in groups(description):
        for src, dst in _edges(sub):
            arrow = "-.-" if dst.startswith("s:") else "-->"
            lines.append(f"    {mid(src)} {arrow} {mid(dst)}")
    return "\n".join(lines) + "\n"


# -- SVG ------------------------------------------------------------------------------------------------
def to_svg(description: TopologyDescription) -> str:
    """A standalone SVG, every name in full and no edge through a box (see `streamlet.topology_svg`)."""
    return draw(description)
