"""`make docs` builds the documentation with warnings as errors, and what it renders is what a reader
needs: the configuration reference is a real table with every setting, placeholders such as
`<task>/<store>` shown as text (not swallowed as HTML tags), and option names as typed (`--http`)."""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from streamlet.config import DEFAULTS, DESCRIPTIONS

DOCS = Path(__file__).resolve().parents[2] / "docs"


class _Tables(HTMLParser):
    """The text of every table cell, row by row, and the page's visible text outside tables."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        while self._tags and self._tags.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif "script" not in self._tags and "style" not in self._tags:
            self.text.append(data)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs-html")
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS),
                          str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return out


def test_the_configuration_reference_is_a_table_of_every_setting(built: Path) -> None:
    page = _Tables()
    page.feed((built / "configuration.html").read_text(encoding="utf-8"))
    assert "list-table" not in "".join(page.text), "the directive's source shows as text"
    rows = {row[0]: row for row in page.rows if len(row) == 3}
    assert rows.pop("Setting") == ["Setting", "Default", "What it does"]
    assert set(rows) == set(DEFAULTS)
    for key, (_, _, description) in rows.items():
        assert " ".join(description.split()) == " ".join(DESCRIPTIONS[key].replace("`", "").split()), key
    assert "<state.dir>/<application.id>/<task>/<store>" in rows["state.dir"][2]
    assert rows["state.dir"][1] == "<tmp>/streamlet"
    assert "streamlet run --http" in rows["application.server"][2]
