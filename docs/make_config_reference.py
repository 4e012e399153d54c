"""Writes the configuration reference into docs/configuration.md, between its marker comments, from
`streamlet.config` (the settings, their defaults and what they do): `python docs/make_config_reference.py`.

tests/docs/test_config_reference.py fails when the page and the code differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "configuration.md"
sys.path.insert(0, str(PAGE.parents[1]))

from streamlet.config import MARKDOWN_BEGIN, MARKDOWN_END, markdown_reference  # noqa: E402


def regenerated(text: str) -> str:
    """`text` (the page) with what lies between its markers (and the markers) made anew."""
    start, end = text.index(MARKDOWN_BEGIN), text.index(MARKDOWN_END) + len(MARKDOWN_END)
    return text[:start] + markdown_reference().rstrip("\n") + text[end:]


def main() -> None:
    text = PAGE.read_text(encoding="utf-8")
    new = regenerated(text)
    if new != text:
        PAGE.write_text(new, encoding="utf-8")
    print(f"{PAGE}: {'rewritten' if new != text else 'up to date'}")


if __name__ == "__main__":
    main()
