"""`.. streamlet-config::`: the configuration reference, made from `streamlet.config` at build time, so
the defaults and descriptions shown are the ones the code has.

The table is built as docutils nodes, not as reStructuredText handed to the parser: the directive sits
in a MyST (Markdown) page, whose parser would read `.. list-table::` as a paragraph, and text such as
`<task>/<store>` would go into the HTML as tags. A text node is escaped by the writer whatever it holds.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

_HEADERS = ("Setting", "Default", "What it does")
_WIDTHS = (25, 20, 55)


def _shown(key: str, value: Any) -> str:
    from streamlet.config import DEFAULTS, StreamsConfig

    if key == "commit.interval.ms":
        return "30000 (100 under exactly_once_v2)"
    if key == "state.dir":
        return "<tmp>/streamlet"
    if DEFAULTS[key] is None:
        return "(none)"
    resolved = StreamsConfig({"application.id": "x"})[key]
    return repr(resolved) if isinstance(resolved, str) else str(resolved)


def _inline(text: str) -> list[nodes.Node]:
    """`text` as text nodes, its `backticked` spans as literals (the descriptions' only markup)."""
    parts: list[nodes.Node] = []
    for i, piece in enumerate(re.split(r"`([^`]+)`", text)):
        if piece:
            parts.append(nodes.literal(piece, piece) if i % 2 else nodes.Text(piece))
    return parts


def _row(cells: list[list[nodes.Node]]) -> nodes.row:
    row = nodes.row()
    for content in cells:
        row += nodes.entry("", nodes.paragraph("", "", *content))
    return row


class ConfigTable(SphinxDirective):
    """Every Kafka Streams-level setting streamlet reads, with its default and what it does."""

    def run(self) -> list[nodes.Node]:
        from streamlet.config import DEFAULTS, DESCRIPTIONS

        group = nodes.tgroup(cols=len(_HEADERS))
        for width in _WIDTHS:
            group += nodes.colspec(colwidth=width)
        group += nodes.thead("", _row([[nodes.Text(h)] for h in _HEADERS]))
        body = nodes.tbody()
        for key in sorted(DEFAULTS):
            default = _shown(key, DEFAULTS[key])
            body += _row([[nodes.literal(key, key)], [nodes.literal(default, default)], _inline(DESCRIPTIONS[key])])
        group += body
        table = nodes.table("", group, classes=["streamlet-config"])
        return [table]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("streamlet-config", ConfigTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
