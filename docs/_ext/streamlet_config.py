"""`.. streamlet-config::`: the configuration reference, made from `streamlet.config` at build time, so
the defaults and descriptions shown are the ones the code has."""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


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


class ConfigTable(SphinxDirective):
    """Every Kafka Streams-level setting streamlet reads, with its default and what it does."""

    def run(self) -> list[nodes.Node]:
        from streamlet.config import DEFAULTS, DESCRIPTIONS

        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 25 20 55", "",
                 "   * - Setting", "     - Default", "     - What it does"]
        for key in sorted(DEFAULTS):
            lines += [f"   * - ``{key}``", f"     - ``{_shown(key, DEFAULTS[key])}``",
                      f"     - {DESCRIPTIONS[key]}"]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="streamlet.config"), self.content_offset, container)
        return container.children


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("streamlet-config", ConfigTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
