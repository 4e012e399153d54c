"""The fenced blocks of the README and `docs/*.md`, read as the Markdown parser reads them.

Each block knows its page, line, language, the headings it sits under, and the doc-test annotation
written right before it as an HTML comment (invisible on GitHub and in the built docs):

    <!-- doc-test: script -->                            run a Python block as a program, in the background
    <!-- doc-test: given streams = MODULE:FUNCTION -->   run it with `streams`, a running KafkaStreams of that topology

A Python block whose first line is `# NAME.py` is a file the reader saves: other blocks import it or
run it by that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
_ANNOTATION = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$", re.DOTALL)
_FILE_LINE = re.compile(r"^#\s*([A-Za-z_][A-Za-z0-9_]*\.py)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: `headings` are the (level, title) pairs above it, outermost first."""

    page: str
    line: int
    lang: str
    code: str
    headings: tuple[tuple[int, str], ...]
    annotation: str | None

    @property
    def file_name(self) -> str | None:
        """`NAME.py` when the block is a file to save (its first line says `# NAME.py`)."""
        first = self.code.split("\n", 1)[0]
        match = _FILE_LINE.match(first) if self.lang == "python" else None
        return match.group(1) if match else None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """The README and every page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def read_blocks(path: Path) -> list[Block]:
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    page = str(path.relative_to(REPO))
    headings: list[tuple[int, str]] = []
    annotation: str | None = None
    blocks: list[Block] = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            level = int(token.tag[1:])
            headings = [h for h in headings if h[0] < level] + [(level, tokens[index + 1].content)]
        if token.type == "html_block" and (match := _ANNOTATION.match(token.content.strip())):
            annotation = match.group(1)
            continue
        if token.type == "fence":
            line = (token.map[0] + 1) if token.map else 0
            blocks.append(Block(page, line, token.info.strip(), token.content, tuple(headings), annotation))
        annotation = None
    return blocks


def section_of(block: Block) -> tuple[tuple[int, str], ...]:
    """The section a background process started in this block lives in: the headings down to the
    first of level 2 or deeper (its subsections belong to it)."""
    out: list[tuple[int, str]] = []
    for level, title in block.headings:
        out.append((level, title))
        if level >= 2:
            break
    return tuple(out)
