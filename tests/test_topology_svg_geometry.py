"""`streamlet describe --format svg` is readable for any topology: every name is written out in full
inside its box, every box and label is on the canvas, and no edge runs through a box other than the two
it joins. Checked on the SVG's own geometry for the topologies the differential suite generates, the
foreign-key and global-table topologies, and the examples (the live page draws the same picture)."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings

from examples.bench_topologies_windows_join import join_topology
from examples.wordcount import topology as wordcount_topology
from streamlet import StreamsBuilder, Topology
from streamlet.topology_render import to_svg
from tests.dsl.global_fk_topologies import GLOBAL_FK_TOPOLOGIES
from tests.fidelity.strategies import cases
from tests.fidelity.topology import apply

NS = "{http://www.w3.org/2000/svg}"
CHAR_EM = 0.62  # a monospace glyph's advance is 0.6em in the common fonts (DejaVu Sans Mono: 0.602)
Rect = tuple[float, float, float, float]  # x0, y0, x1, y1
Point = tuple[float, float]


def _rect(element: ET.Element) -> Rect:
    x, y = float(element.get("x", 0)), float(element.get("y", 0))
    return x, y, x + float(element.get("width", 0)), y + float(element.get("height", 0))


def _path_points(d: str) -> list[list[Point]]:
    """The polylines of a path's M/L/C commands (curves sampled), one list per subpath."""
    tokens = re.findall(r"[MLC]|-?\d+(?:\.\d+)?", d)
    lines: list[list[Point]] = []
    i, command = 0, ""
    while i < len(tokens):
        if tokens[i] in "MLC":
            command = tokens[i]
            i += 1
            continue
        if command == "C":
            (x0, y0) = lines[-1][-1]
            c1, c2, end = [(float(tokens[i + k]), float(tokens[i + k + 1])) for k in (0, 2, 4)]
            for step in range(1, 21):
                t = step / 20
                lines[-1].append(tuple(  # type: ignore[arg-type]
                    (1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t ** 2 * p2 + t ** 3 * p3
                    for p0, p1, p2, p3 in zip((x0, y0), c1, c2, end, strict=True)))
            i += 6
            continue
        point = (float(tokens[i]), float(tokens[i + 1]))
        if command == "M":
            lines.append([point])
        else:
            lines[-1].append(point)
        i += 2
    return lines


def _edges(root: ET.Element) -> Iterator[list[Point]]:
    for line in root.iter(f"{NS}line"):
        yield [(float(line.get("x1", 0)), float(line.get("y1", 0))),
               (float(line.get("x2", 0)), float(line.get("y2", 0)))]
    for path in root.iter(f"{NS}path"):
        if path.get("fill", "") == "none":  # edges; filled paths are arrowheads' shapes
            yield from _path_points(path.get("d", ""))


def _on_border(point: Point, rect: Rect, slack: float = 1.5) -> bool:
    x, y = point
    x0, y0, x1, y1 = rect
    inside = x0 - slack <= x <= x1 + slack and y0 - slack <= y <= y1 + slack
    return inside and min(abs(x - x0), abs(x - x1), abs(y - y0), abs(y - y1)) <= slack


def _crosses(a: Point, b: Point, rect: Rect, margin: float = 2.0) -> bool:
    """Whether segment ab enters the rectangle shrunk by `margin` (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = rect[0] + margin, rect[1] + margin, rect[2] - margin, rect[3] - margin
    if x0 >= x1 or y0 >= y1:
        return False
    dx, dy = b[0] - a[0], b[1] - a[1]
    low, high = 0.0, 1.0
    for p, q in ((-dx, a[0] - x0), (dx, x1 - a[0]), (-dy, a[1] - y0), (dy, y1 - a[1])):
        if p == 0:
            if q < 0:
                return False
        else:
            t = q / p
            if p < 0:
                low = max(low, t)
            else:
                high = min(high, t)
            if low > high:
                return False
    return True


def check_svg(svg: str, names: set[str]) -> None:
    """The readability rules (see the module docstring); `names` are every node, topic and store."""
    root = ET.fromstring(svg)
    _, _, width, height = (float(v) for v in root.get("viewBox", "").split())
    family = (root.get("font-family") or "").lower()
    assert "mono" in family, f"a font whose widths are known is named: {family!r}"
    font_px = float(root.get("font-size", "11"))
    boxes: list[tuple[Rect, str]] = []
    drawn: set[str] = set()
    for group in root.iter(f"{NS}g"):
        rect, text, title = group.find(f"{NS}rect"), group.find(f"{NS}text"), group.find(f"{NS}title")
        if rect is None or text is None:
            continue
        box = _rect(rect)
        label = "".join(text.itertext())
        assert title is not None and title.text is not None and title.text.split(": ", 1)[1] == label, \
            f"a name is not written out in full: {label!r}"
        drawn.add(label)
        assert box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height, \
            f"{label!r}'s box {box} is off the canvas {width}x{height}"
        text_x = float(text.get("x", 0))
        assert box[0] <= text_x and text_x + len(label) * CHAR_EM * font_px <= box[2] + 0.5, \
            f"{label!r} runs out of its box {box}"
        boxes.append((box, label))
    assert drawn == names
    for text in root.iter(f"{NS}text"):
        label_x, label_y = float(text.get("x", 0)), float(text.get("y", 0))
        content = "".join(text.itertext())
        assert label_x >= 0 and label_x + len(content) * CHAR_EM * font_px <= width and 0 <= label_y <= height, \
            f"text {content!r} is off the canvas"
    for polyline in _edges(root):
        ends = [box for box, _ in boxes if _on_border(polyline[0], box) or _on_border(polyline[-1], box)]
        for x, y in polyline:
            assert -0.5 <= x <= width + 0.5 and -0.5 <= y <= height + 0.5, f"an edge leaves the canvas at {(x, y)}"
        for a, b in itertools.pairwise(polyline):
            for box, label in boxes:
                if box not in ends:
                    assert not _crosses(a, b, box), f"an edge {a}->{b} runs through {label!r}'s box {box}"


def _names(topology: Topology) -> set[str]:
    description = topology.describe()
    names: set[str] = set()
    groups = [sub.nodes for sub in description.subtopologies] + \
        [[g.source, g.processor] for g in description.global_stores]
    for nodes in groups:
        for node in nodes:
            names.add(node.name)
            names.update(getattr(node, "topics", ()) or ())
            names.update(getattr(node, "stores", ()) or ())
            if getattr(node, "topic", None):
                names.add(node.topic)
    return names


NAMED: dict[str, Callable[[], Topology]] = {**GLOBAL_FK_TOPOLOGIES, "wordcount": wordcount_topology,
                                            "join": join_topology}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_the_named_topologies_are_drawn_readably(name: str) -> None:
    topology = NAMED[name]()
    check_svg(to_svg(topology.describe()), _names(topology))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(cases())
def test_every_generated_topology_is_drawn_readably(case: dict[str, Any]) -> None:
    builder = StreamsBuilder()
    current: Any = None
    try:
        for op in case["ops"]:
            current = apply(builder, current, op)
        topology = builder.build()
    except Exception:  # a topology the DSL refuses (Kafka Streams refuses it too): nothing to draw
        assume(False)
        raise
    check_svg(to_svg(topology.describe()), _names(topology))
