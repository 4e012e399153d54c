"""The topology drawn as inline SVG, made by the app itself (the page loads nothing from outside).

Each sub-topology is a column; inside it, nodes are placed in rows by their depth from the sources
(a node sits one row below its deepest parent), and an edge is drawn from each parent to each child.
Sources are green, sinks blue, processors grey; a processor's stores are listed under its name, a
source's and a sink's topics likewise.
"""

from __future__ import annotations

from html import escape
from typing import Any

from streamlet.topology import SinkSpec, SourceSpec, Topology

_BOX_W, _BOX_H, _GAP_X, _GAP_Y, _PAD = 250, 46, 40, 28, 16
_FILL = {"source": "#d8f3dc", "sink": "#dbe9ff", "processor": "#eeeeee"}


def _kind(spec: Any) -> str:
    return "source" if isinstance(spec, SourceSpec) else "sink" if isinstance(spec, SinkSpec) else "processor"


def _detail(spec: Any) -> str:
    if isinstance(spec, SourceSpec):
        return ", ".join(spec.topics)
    if isinstance(spec, SinkSpec):
        return f"→ {spec.topic}"
    stores = getattr(spec, "stores", [])
    return f"stores: {', '.join(stores)}" if stores else ""


def _short(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def topology_svg(topology: Topology) -> str:
    """An <svg> element drawing every sub-topology of `topology`."""
    placed: dict[str, tuple[float, float]] = {}
    boxes: list[str] = []
    edges: list[str] = []
    width = height = 0.0
    for column, sub in enumerate(topology.sub_topologies()):
        depth: dict[str, int] = {}
        for name in sub.nodes:  # nodes come in topological order: parents first
            parents = [p for p in getattr(topology.nodes[name], "parents", []) if p in depth]
            depth[name] = 1 + max((depth[p] for p in parents), default=-1)
        rows: dict[int, int] = {}
        x0 = _PAD + column * (_BOX_W + _GAP_X) * 1.0
        label_y = _PAD + 12
        boxes.append(f'<text x="{x0}" y="{label_y}" class="sub">Sub-topology {sub.id}</text>')
        for name in sub.nodes:
            row = depth[name]
            slot = rows.get(row, 0)
            rows[row] = slot + 1
            x = x0 + slot * 12
            y = _PAD + 24 + row * (_BOX_H + _GAP_Y) + slot * 6
            placed[name] = (x, y)
            spec = topology.nodes[name]
            kind = _kind(spec)
            boxes.append(
                f'<g class="node {kind}" data-node="{escape(name)}"><title>{escape(name)}</title>'
                f'<rect x="{x}" y="{y}" width="{_BOX_W}" height="{_BOX_H}" rx="6" fill="{_FILL[kind]}" stroke="#555"/>'
                f'<text x="{x + 8}" y="{y + 19}">{escape(_short(name))}</text>'
                f'<text x="{x + 8}" y="{y + 37}" class="detail">{escape(_short(_detail(spec)))}</text></g>')
            width = max(width, x + _BOX_W + _PAD)
            height = max(height, y + _BOX_H + _PAD)
        for name in sub.nodes:
            for parent in getattr(topology.nodes[name], "parents", []):
                if parent in placed and name in placed:
                    (px, py), (cx, cy) = placed[parent], placed[name]
                    edges.append(f'<line x1="{px + _BOX_W / 2}" y1="{py + _BOX_H}" x2="{cx + _BOX_W / 2}" y2="{cy}" '
                                 'stroke="#777" marker-end="url(#arrow)"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="topology" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="12">'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>'
            '<style>.sub{font-weight:bold}.detail{fill:#555;font-size:11px}</style>'
            + "".join(edges) + "".join(boxes) + "</svg>")
