"""Sphinx configuration of streamlet's documentation (`make docs`; warnings are errors)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

project = "streamlet"
author = "the streamlet developers"
copyright = "streamlet developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures show them; the descriptions stay readable
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
default_role = "code"  # `name` in docstrings is code, as it is in the source
nitpicky = False
suppress_warnings = ["myst.header"]
smartquotes = False  # `--http`, `...` and quotes stay as typed: readers copy them
