"""Drawings of a `TopologyDescription`: Graphviz DOT, Mermaid, and a self-contained SVG.

`describe()`'s text is Kafka Streams' and made for diffing; a drawing is for reading. Topics are drawn
as nodes of their own between the sub-topologies, so a repartition topic shows where one sub-topology
hands over to the next, and stores hang off the processors that use them. The SVG needs no Graphviz
and no script (a page can inline it): each sub-topology is a column, its nodes ranked by their distance
from its sources, topics on the sides.
"""

from __future__ import annotations

from collections.abc import Iterator
from html import escape

from streamlet.topology_description import (
    NodeDescription,
    ProcessorDescription,
    SinkDescription,
    SourceDescription,
    SubtopologyDescription,
    TopologyDescription,
)

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


def _subs(description: TopologyDescription) -> list[SubtopologyDescription]:
    """The sub-topologies, global stores' groups (a source and its processor) included, by id."""
    globals_ = [SubtopologyDescription(g.id, [g.source, g.processor]) for g in description.global_stores]
    return sorted([*description.subtopologies, *globals_], key=lambda s: s.id)


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
    for sub in _subs(description):
        for src, dst in _edges(sub):
            for end in (src, dst):
                kind, name = end.split(":", 1)
                (topics if kind == "t" else stores if kind == "s" else {})[name] = None
    return list(topics), list(stores)


def _kind(node: NodeDescription) -> str:
    return "source" if isinstance(node, SourceDescription) else "sink" if isinstance(node, SinkDescription) \
        else "processor"


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
    for sub in _subs(description):
        lines.append(f"  subgraph cluster_{sub.id} {{")
        lines.append(f"    label={_dot_id(f'Sub-topology {sub.id}')};")
        for node in sub.nodes:
            shape = {"source": "invhouse", "sink": "house", "processor": "box"}[_kind(node)]
            lines.append(f"    {_dot_id('n:' + node.name)} [label={_dot_id(node.name)}, shape={shape}];")
        lines.append("  }")
    for sub in _subs(description):
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
    for sub in _subs(description):
        lines.append(f"    subgraph sub{sub.id}[{label(f'Sub-topology {sub.id}')}]")
        for node in sub.nodes:
            open_, close = {"source": ("[>", "]"), "sink": ("[\\", "/]"), "processor": ("[", "]")}[_kind(node)]
            lines.append(f"        {mid('n:' + node.name)}{open_}{label(node.name)}{close}")
        lines.append("    end")
    for sub in _subs(description):
        for src, dst in _edges(sub):
            arrow = "-.-" if dst.startswith("s:") else "-->"
            lines.append(f"    {mid(src)} {arrow} {mid(dst)}")
    return "\n".join(lines) + "\n"


# -- SVG ------------------------------------------------------------------------------------------------
_BOX_W, _BOX_H, _GAP_X, _GAP_Y, _PAD = 220, 34, 60, 26, 20
_FILL = {"source": "#dff0d8", "processor": "#f5f5f5", "sink": "#fcf8e3", "topic": "#e8eef7", "store": "#f2dede"}


def _ranks(sub: SubtopologyDescription) -> dict[str, int]:
    """Each node's longest distance from a source of its sub-topology (a DAG: Kafka Streams forbids cycles)."""
    rank: dict[str, int] = {}
    by_name = {n.name: n for n in sub.nodes}

    def visit(name: str) -> int:
        if name not in rank:
            rank[name] = 0  # guards against a cycle, which validate() rejects anyway
            preds = [p.name for p in by_name[name].predecessors if p.name in by_name]
            rank[name] = 1 + max((visit(p) for p in preds), default=0) if preds else 1
        return rank[name]

    for node in sub.nodes:
        visit(node.name)
    return rank


def to_svg(description: TopologyDescription) -> str:
    """A standalone SVG: one column per sub-topology (nodes by rank), topics in row 0 above the sources
    that read them and below the sinks that write them; stores to the right of their processors."""
    boxes: dict[str, tuple[float, float, str, str]] = {}  # key -> (x, y, label, kind)
    step_x, step_y = _BOX_W + 20, _BOX_H + _GAP_Y
    col_x: list[float] = []
    x = float(_PAD)
    bottom = 0.0
    for sub in _subs(description):
        col_x.append(x)
        rank = _ranks(sub)
        by_rank: dict[int, list[NodeDescription]] = {}
        for node in sorted(sub.nodes, key=lambda n: (rank[n.name], n.name)):
            by_rank.setdefault(rank[node.name], []).append(node)
        widest = max(len(nodes) for nodes in by_rank.values())
        store_x = x + widest * step_x
        topic_slots = 0
        has_stores = False
        for r, nodes in sorted(by_rank.items()):
            for i, node in enumerate(nodes):
                nx, ny = x + i * step_x, _PAD + r * step_y
                boxes[f"n:{node.name}"] = (nx, ny, node.name, _kind(node))
                bottom = max(bottom, ny)
                if isinstance(node, SourceDescription):
                    for topic in node.topics:
                        if f"t:{topic}" not in boxes:
                            boxes[f"t:{topic}"] = (x + topic_slots * step_x, _PAD, topic, "topic")
                            topic_slots += 1
                if isinstance(node, ProcessorDescription):
                    for j, store in enumerate(node.stores):
                        if f"s:{store}" not in boxes:
                            boxes[f"s:{store}"] = (store_x, ny + j * (_BOX_H + 6), store, "store")
                            has_stores = True
        x += max(widest, topic_slots) * step_x + (step_x if has_stores else 0) + _GAP_X
    sink_row = bottom + step_y
    sink_slots: dict[float, int] = {}
    for sub in _subs(description):
        for node in sub.nodes:
            if isinstance(node, SinkDescription) and node.topic and f"t:{node.topic}" not in boxes:
                sx = boxes[f"n:{node.name}"][0]
                slot = sink_slots.get(sx, 0)
                sink_slots[sx] = slot + 1
                boxes[f"t:{node.topic}"] = (sx + slot * 16, sink_row + slot * (_BOX_H + 6), node.topic, "topic")
    width = int(x - _GAP_X + _PAD)
    height = int(max(b[1] for b in boxes.values()) + _BOX_H + _PAD) if boxes else _PAD * 2
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    for col, sub in enumerate(_subs(description)):
        out.append(f'<text x="{col_x[col]:.0f}" y="{_PAD + step_y - 6}" fill="#888">Sub-topology {sub.id}</text>')
    for sub in _subs(description):
        for src, dst in _edges(sub):
            if src not in boxes or dst not in boxes:
                continue
            x1, y1, _, _ = boxes[src]
            x2, y2, _, _ = boxes[dst]
            to_store = dst.startswith("s:")
            start = (x1 + _BOX_W, y1 + _BOX_H / 2) if to_store else (x1 + _BOX_W / 2, y1 + _BOX_H)
            end = (x2, y2 + _BOX_H / 2) if to_store else (x2 + _BOX_W / 2, y2)
            dash = ' stroke-dasharray="4 3"' if to_store else ' marker-end="url(#arrow)"'
            if not to_store and y2 < y1:  # a write to a topic drawn above (a repartition topic): a curve
                start, end = (x1 + _BOX_W, y1 + _BOX_H / 2), (x2, y2 + _BOX_H / 2)
                bend = (start[0] + _GAP_X * 2, start[1], end[0] - _GAP_X, end[1])
                out.append(f'<path d="M {start[0]:.0f} {start[1]:.0f} C {bend[0]:.0f} {bend[1]:.0f} {bend[2]:.0f} '
                           f'{bend[3]:.0f} {end[0]:.0f} {end[1]:.0f}" fill="none" stroke="#555"{dash}/>')
                continue
            out.append(f'<line x1="{start[0]:.0f}" y1="{start[1]:.0f}" x2="{end[0]:.0f}" y2="{end[1]:.0f}" '
                       f'stroke="#555"{dash}/>')
    for _key, (bx, by, label, kind) in boxes.items():
        rx = 14 if kind == "topic" else 3
        out.append(f'<g class="{kind}"><rect x="{bx:.0f}" y="{by:.0f}" width="{_BOX_W}" height="{_BOX_H}" '
                   f'rx="{rx}" fill="{_FILL[kind]}" stroke="#777"/><text x="{bx + 8:.0f}" y="{by + 21:.0f}">'
                   f"{escape(_shorten(label))}</text><title>{escape(kind)}: {escape(label)}</title></g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _shorten(label: str, limit: int = 34) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"
