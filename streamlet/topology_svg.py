"""The SVG drawing of a `TopologyDescription` (`streamlet describe --format svg`, the live page).

A drawing is for reading, so it keeps three promises whatever the topology: every name is written out
in full inside its box (boxes are as wide as their names, in a monospace font whose widths are known),
everything is on the canvas, and no edge runs through a box other than the two it joins.

How: each sub-topology is a column of its own, its nodes in rows (layers) by their distance from its
inputs, with the topics it reads above their sources, the topics only it writes below their sinks, and
its stores below the processors that use them. Rows are shared by all columns, so the space between
two rows holds no box. An edge between neighbouring rows is a straight line through that space. Any
other edge (across several rows, upwards, or a write to a topic another column reads: a repartition or
a foreign-key join's subscription topic) leaves its box into the space below it, runs to the lane at the
right of its column, along the lane to the space above its target, and in. Lanes and the spaces between
rows hold no box, so the promise holds by construction; the spaces and lanes widen with the edges they
carry so that edges do not run on top of each other. No Graphviz, no script: a page can inline it.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from html import escape
from itertools import pairwise

from streamlet.topology_description import (
    ProcessorDescription,
    SinkDescription,
    SourceDescription,
    SubtopologyDescription,
    TopologyDescription,
    groups,
    node_kind,
)

FONT_FAMILY = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace"
FONT_PX = 11
CHAR_W = 0.61 * FONT_PX  # a monospace glyph's advance: 0.6em in the common fonts (DejaVu Sans Mono 0.602em)
_BOX_H, _PAD_X, _NODE_GAP, _ROW_GAP, _TRACK, _LANE, _COLUMN_GAP, _MARGIN, _LABEL_H = 28, 9, 14, 30, 6, 14, 26, 16, 22
_WAYPOINT_W = 8.0  # the room an edge passing a row takes in it
_FILL = {"source": "#dff0d8", "processor": "#f5f5f5", "sink": "#fcf8e3", "topic": "#e8eef7", "store": "#f2dede"}


def text_width(text: str) -> float:
    """The drawn width of `text` in FONT_FAMILY at FONT_PX (wide East Asian characters take two cells)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text) * CHAR_W


@dataclass
class _Box:
    key: str  # "n:<node>", "t:<topic>", "s:<store>"
    label: str
    kind: str
    column: int
    row: int = 0
    x: float = 0.0
    y: float = 0.0

    @property
    def width(self) -> float:
        return _WAYPOINT_W if self.kind == "waypoint" else text_width(self.label) + 2 * _PAD_X


@dataclass
class _Edge:
    src: str
    dst: str
    store: bool  # a processor's use of a store: dashed, no arrow
    via: list[str] = field(default_factory=list)  # its waypoints, one per row it passes, top to bottom
    points: list[tuple[float, float]] = field(default_factory=list)


def _collect(subs: list[SubtopologyDescription]) -> tuple[dict[str, _Box], list[_Edge]]:
    """Every box (in its column) and every edge of the drawing."""
    boxes: dict[str, _Box] = {}
    edges: list[_Edge] = []
    readers: dict[str, int] = {}
    for column, sub in enumerate(subs):
        for node in sub.nodes:
            if isinstance(node, SourceDescription):
                for topic in node.topics:
                    readers.setdefault(topic, column)
    for column, sub in enumerate(subs):
        for node in sub.nodes:
            boxes[f"n:{node.name}"] = _Box(f"n:{node.name}", node.name, node_kind(node), column)
    for column, sub in enumerate(subs):
        for node in sub.nodes:
            key = f"n:{node.name}"
            edges += [_Edge(key, f"n:{succ.name}", False) for succ in node.successors if f"n:{succ.name}" in boxes]
            if isinstance(node, SourceDescription):
                for topic in node.topics:
                    boxes.setdefault(f"t:{topic}", _Box(f"t:{topic}", topic, "topic", readers[topic]))
                    edges.append(_Edge(f"t:{topic}", key, False))
            elif isinstance(node, SinkDescription) and node.topic:  # a dynamic sink has no fixed topic
                boxes.setdefault(f"t:{node.topic}", _Box(f"t:{node.topic}", node.topic, "topic",
                                                          readers.get(node.topic, column)))
                edges.append(_Edge(key, f"t:{node.topic}", False))
            elif isinstance(node, ProcessorDescription):
                for store in node.stores:
                    boxes.setdefault(f"s:{store}", _Box(f"s:{store}", store, "store", column))
                    edges.append(_Edge(key, f"s:{store}", True))
    return boxes, edges


def _ranked(boxes: dict[str, _Box], edges: list[_Edge]) -> None:
    """Give every box its row: the longest path to it from its column's inputs, over the edges inside
    a column that point down (a write to a topic that some source reads is left out: it may close a
    loop)."""
    read = {e.src for e in edges if e.src.startswith("t:")}
    down = [e for e in edges if boxes[e.src].column == boxes[e.dst].column and e.dst not in read]
    preds: dict[str, list[str]] = defaultdict(list)
    for e in down:
        preds[e.dst].append(e.src)
    rows: dict[str, int] = {}
    visiting: set[str] = set()

    def row(key: str) -> int:
        if key not in rows:
            if key in visiting:  # a cycle, which Kafka Streams' validation rejects: cut it here
                return 0
            visiting.add(key)
            rows[key] = 1 + max((row(p) for p in preds[key]), default=-1)
            visiting.discard(key)
        return rows[key]

    for key, box in boxes.items():
        box.row = row(key)


def _add_waypoints(boxes: dict[str, _Box], edges: list[_Edge]) -> list[tuple[str, str]]:
    """An edge down its own column across several rows passes each row in between through a slot of its
    own there (a waypoint, an invisible narrow box), so it needs no detour. Returns every link between
    neighbouring rows (edges and their pieces), which orders the rows."""
    links: list[tuple[str, str]] = []
    for number, e in enumerate(edges):
        src, dst = boxes[e.src], boxes[e.dst]
        if src.column == dst.column and dst.row > src.row + 1:
            for row in range(src.row + 1, dst.row):
                key = f"w:{number}:{row}"
                boxes[key] = _Box(key, "", "waypoint", src.column, row)
                e.via.append(key)
        chain = [e.src, *e.via, e.dst]
        links += [(a, b) for a, b in pairwise(chain) if boxes[b].row == boxes[a].row + 1]
    return links


def _ordered(boxes: dict[str, _Box], links: list[tuple[str, str]]) -> dict[tuple[int, int], list[_Box]]:
    """Each (column, row)'s boxes left to right: first as met, then by the mean position of their
    neighbours in the rows above and below, a few sweeps each way (fewer crossing lines)."""
    cells: dict[tuple[int, int], list[_Box]] = defaultdict(list)
    for box in boxes.values():
        cells[(box.column, box.row)].append(box)
    ups: dict[str, list[str]] = defaultdict(list)
    downs: dict[str, list[str]] = defaultdict(list)
    for a, b in links:
        ups[b].append(a)
        downs[a].append(b)
    position = {box.key: float(i) for cell in cells.values() for i, box in enumerate(cell)}
    rows = max((box.row for box in boxes.values()), default=0)
    for sweep in range(8):
        forward = sweep % 2 == 0
        for r in (range(1, rows + 1) if forward else range(rows - 1, -1, -1)):
            for (_, row), cell in cells.items():
                if row != r:
                    continue
                near = ups if forward else downs

                def centre(box: _Box, near: dict[str, list[str]] = near) -> float:
                    keys = near.get(box.key)
                    return sum(position[k] for k in keys) / len(keys) if keys else position[box.key]

                cell.sort(key=centre)
                for i, box in enumerate(cell):
                    position[box.key] = float(i)
    return cells


def _place(boxes: dict[str, _Box], edges: list[_Edge], labels: list[str]) -> tuple[float, float, list[float]]:
    """Coordinates for every box and every edge's points; returns the canvas' width and height and
    where each column (and its label) starts."""
    links = _add_waypoints(boxes, edges)
    cells = _ordered(boxes, links)
    n_rows = 1 + max((box.row for box in boxes.values()), default=0)
    widths = [max(_align(cells, links, boxes, column, n_rows), text_width(label))
              for column, label in enumerate(labels)]
    # The edges not between neighbouring rows run through the gaps and a lane: lane k is right of column
    # k (-1: left of column 0); an edge takes the one on its column's side towards its target.
    gap_tracks: dict[int, int] = defaultdict(int)  # gap g lies between rows g and g + 1 (-1: above row 0)
    lane_tracks: dict[int, int] = defaultdict(int)
    plan: list[tuple[_Edge, int, int, int, int]] = []  # edge, lane, its tracks: gap below src, gap above dst, lane
    for e in edges:
        src, dst = boxes[e.src], boxes[e.dst]
        if dst.row == src.row + 1 or e.via:
            continue
        if dst.column != src.column:
            lane = src.column - 1 if dst.column < src.column else src.column
        else:
            middle = (src.x + src.width / 2 + dst.x + dst.width / 2) / 2
            lane = src.column - 1 if middle < widths[src.column] / 2 else src.column
        below, above = src.row, dst.row - 1
        plan.append((e, lane, gap_tracks[below], gap_tracks[above] + (below == above), lane_tracks[lane]))
        gap_tracks[below] += 1
        gap_tracks[above] += 1
        lane_tracks[lane] += 1
    gap_h = {g: _ROW_GAP + _TRACK * gap_tracks[g] for g in range(-1, n_rows)}
    row_y: list[float] = []
    y = _MARGIN + _LABEL_H + gap_h[-1]
    for r in range(n_rows):
        row_y.append(y)
        y += _BOX_H + gap_h[r]
    height = row_y[-1] + _BOX_H + _MARGIN + _TRACK * gap_tracks[n_rows - 1]
    lane_x = {-1: _MARGIN + _LANE / 2}
    x = _MARGIN + (_LANE + _TRACK * lane_tracks[-1] if lane_tracks[-1] else 0.0)
    starts: list[float] = []
    for column, width in enumerate(widths):
        starts.append(x)
        for box in boxes.values():
            if box.column == column:
                box.x, box.y = x + box.x, row_y[box.row]
        lane_x[column] = x + width + _LANE / 2
        x += width + _LANE + _TRACK * lane_tracks[column] + _COLUMN_GAP
    width_total = x - _COLUMN_GAP + _MARGIN
    _ports(boxes, edges)
    for e, lane, below_track, above_track, lane_track in plan:
        src, dst = boxes[e.src], boxes[e.dst]
        (sx, _), (dx, _) = e.points[0], e.points[-1]
        gap_below = row_y[src.row] + _BOX_H + _ROW_GAP / 2 + _TRACK * below_track
        gap_above = row_y[dst.row] - gap_h[dst.row - 1] + _ROW_GAP / 2 + _TRACK * above_track
        at = lane_x[lane] + _TRACK * lane_track
        e.points = [e.points[0], (sx, gap_below), (at, gap_below), (at, gap_above), (dx, gap_above), e.points[-1]]
    return width_total, height, starts


def _align(cells: dict[tuple[int, int], list[_Box]], links: list[tuple[str, str]], boxes: dict[str, _Box],
           column: int, n_rows: int) -> float:
    """x of the column's boxes, relative to its left side: each box as near as its row's order allows
    to the middle of the boxes it is linked to in the row above (then below, then above again), so
    that lines run short and an edge's waypoints stack up straight. Returns the column's width."""
    ups: dict[str, list[str]] = defaultdict(list)
    downs: dict[str, list[str]] = defaultdict(list)
    for a, b in links:
        ups[b].append(a)
        downs[a].append(b)
    rows = [cells.get((column, r), []) for r in range(n_rows)]
    for row in rows:
        x = 0.0
        for box in row:
            box.x = x
            x += box.width + _NODE_GAP

    def centre(key: str) -> float:
        return boxes[key].x + boxes[key].width / 2

    for near, order in ((ups, rows[1:]), (downs, rows[-2::-1]), (ups, rows[1:])):
        for row in order:
            wanted = [sum(map(centre, near[b.key])) / len(near[b.key]) - b.width / 2 if near[b.key] else b.x
                      for b in row]
            right = float("-inf")
            for box, x in zip(row, wanted, strict=True):
                box.x = max(x, right)
                right = box.x + box.width + _NODE_GAP
        left = min((b.x for row in rows for b in row), default=0.0)
        for row in rows:
            for box in row:
                box.x -= left
    return max((b.x + b.width for row in rows for b in row), default=0.0)


def _ports(boxes: dict[str, _Box], edges: list[_Edge]) -> None:
    """Start and end points: out of a box's bottom and into the next one's top, spread along the side
    when several edges share it."""
    outs: dict[str, list[_Edge]] = defaultdict(list)
    ins: dict[str, list[_Edge]] = defaultdict(list)
    for e in edges:
        outs[e.src].append(e)
        ins[e.dst].append(e)
    start: dict[int, tuple[float, float]] = {}
    end: dict[int, tuple[float, float]] = {}
    for key, group in outs.items():
        box = boxes[key]
        group.sort(key=lambda e: boxes[(e.via or [e.dst])[0]].x)
        for i, e in enumerate(group):
            start[id(e)] = (box.x + box.width * (i + 1) / (len(group) + 1), box.y + _BOX_H)
    for key, group in ins.items():
        box = boxes[key]
        group.sort(key=lambda e: boxes[(e.via or [e.src])[-1]].x)
        for i, e in enumerate(group):
            end[id(e)] = (box.x + box.width * (i + 1) / (len(group) + 1), box.y)
    for e in edges:
        through = [(boxes[k].x + _WAYPOINT_W / 2, boxes[k].y + dy) for k in e.via for dy in (0, _BOX_H)]
        e.points = [start[id(e)], *through, end[id(e)]]


def to_svg(description: TopologyDescription) -> str:
    """A standalone SVG of the topology (see the module docstring for its layout)."""
    subs = groups(description)
    boxes, edges = _collect(subs)
    _ranked(boxes, edges)
    labels = [f"Sub-topology {sub.id}" for sub in subs]
    width, height, starts = _place(boxes, edges, labels) if boxes else (2.0 * _MARGIN, 2.0 * _MARGIN, [])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT_FAMILY}" font-size="{FONT_PX}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    for x, label in zip(starts, labels, strict=False):
        out.append(f'<text x="{x:.1f}" y="{_MARGIN + FONT_PX:.1f}" fill="#888">{escape(label)}</text>')
    for e in edges:
        d = " ".join(f"{'M' if i == 0 else 'L'} {x:.1f} {y:.1f}" for i, (x, y) in enumerate(e.points))
        style = ' stroke-dasharray="4 3"' if e.store else ' marker-end="url(#arrow)"'
        out.append(f'<path d="{d}" fill="none" stroke="#555"{style}/>')
    for box in boxes.values():
        if box.kind == "waypoint":
            continue
        rx = 14 if box.kind == "topic" else 3
        out.append(f'<g class="{box.kind}"><rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
                   f'height="{_BOX_H}" rx="{rx}" fill="{_FILL[box.kind]}" stroke="#777"/>'
                   f'<text x="{box.x + _PAD_X:.1f}" y="{box.y + _BOX_H / 2 + FONT_PX * 0.35:.1f}">'
                   f"{escape(box.label)}</text><title>{escape(box.kind)}: {escape(box.label)}</title></g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
