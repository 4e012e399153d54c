"""The configuration reference in docs/configuration.md is a Markdown table (readable on the repository
page and in an editor, not only in the built HTML) generated from `streamlet.config`; it must be what the
code generates now, and `help(StreamsConfig)` lists the same settings."""

from __future__ import annotations

import importlib.util
import pydoc
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from streamlet import StreamsConfig
from streamlet.config import DEFAULTS, MARKDOWN_BEGIN, MARKDOWN_END, markdown_reference, settings_table

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = DOCS / "configuration.md"
REGENERATE = "python docs/make_config_reference.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_config_reference", DOCS / "make_config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_holds_the_table_the_code_generates() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(MARKDOWN_BEGIN) == 1 and text.count(MARKDOWN_END) == 1, \
        f"{PAGE}: the generated table's marker comments are missing; put them back and run `{REGENERATE}`"
    shown = text[text.index(MARKDOWN_BEGIN):text.index(MARKDOWN_END) + len(MARKDOWN_END)]
    assert shown + "\n" == markdown_reference(), \
        f"{PAGE} differs from the settings in streamlet/config.py: run `{REGENERATE}` from the repository root"
    assert _generator().regenerated(text) == text


def test_the_table_has_a_row_per_setting() -> None:
    rows = [line for line in markdown_reference().splitlines() if line.startswith("| `")]
    assert [re.match(r"\| `([^`]+)`", row).group(1) for row in rows] == sorted(DEFAULTS)  # type: ignore[union-attr]
    assert all(row.count(" | ") == 2 for row in rows), "a description holds an unescaped |"


def test_help_lists_every_setting_with_its_default() -> None:
    shown = pydoc.render_doc(StreamsConfig, renderer=pydoc.plaintext)
    for key, default, _ in settings_table():
        assert f"{key} (default: {default})" in shown, key


def test_without_docstrings_the_module_still_imports() -> None:
    done = subprocess.run([sys.executable, "-OO", "-c", "import streamlet.config as c; "
                           "assert c.StreamsConfig.__doc__ is None; print(len(c.settings_table()))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(DEFAULTS)
