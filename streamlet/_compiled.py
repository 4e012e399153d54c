"""Whether this process runs the mypyc-compiled hot path or the pure-Python modules it was built from.

The per-record path of a worker (`HOT_MODULES`: the task loop, processor nodes, the DSL processors
WordCount runs, the record cache, the typed/timestamped/change-logging store layers, the collector)
can be compiled with mypyc at install time (`setup.py`); the compiled modules are extension modules
beside the `.py` files, which Python's import system prefers. That is wrong whenever the two differ,
so this module decides once, when `streamlet/__init__.py` imports it first, before any hot module:

- `STREAMLET_PURE_PYTHON=1` in the environment: pure Python;
- no build manifest (`_compiled_manifest.json`, written by the build after every module compiled),
  a compiled module missing, or a source whose SHA-256 differs from the one it was compiled from (an
  edit or a merge since the build): pure Python, with a warning naming the first stale file;
- otherwise the compiled modules.

A build that fell back to pure Python (no C compiler, no mypyc, a failed compilation, or
`STREAMLET_PURE_PYTHON=1` at install) leaves `_compiled_fallback.txt` with its reason in the package,
so that `REASON` (and `streamlet version`, and `streamlet run`'s first log line) can say why.

Pure Python is all or nothing: the compiled modules call each other's classes natively, so mixing a
compiled caller with a freshly edited pure callee would give two different classes of the same name.
The choice is made by putting a finder in front of `sys.meta_path` that maps every hot module to its
`.py` file. Stdlib only: `setup.py` reads `HOT_MODULES` from this file without importing streamlet.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

HOT_MODULES: tuple[str, ...] = (
    "streamlet.actors.stream_task",
    "streamlet.actors.processor_node",
    "streamlet.actors.processor_context",
    "streamlet.actors.partition_group",
    "streamlet.actors.record_collector",
    "streamlet.dsl.processors.stateless",
    "streamlet.dsl.processors.forwarding",
    "streamlet.dsl.processors.fold_processors",
    "streamlet.stores.keyvalue.caching",
    "streamlet.stores.cache",
    "streamlet.stores.keyvalue.typed",
    "streamlet.stores.keyvalue.timestamped",
    "streamlet.stores.keyvalue.changelogging",
    "streamlet.stores.value_formats",
    "streamlet.metrics.topic_counters",
    "streamlet.partitioner",
)
"""The modules mypyc compiles (the ones a WordCount profile spends its time in). Not `dsl.processors.aggregate`
and `dsl.processors.table`: their suppliers are pickled with the topology (the Spark engine), and a mypyc
class does not survive pickle (`serializable=True` did not restore its attributes; tests/test_compiled_hot_path.py).
The fold processors of `aggregate`, `reduce` and `count` are apart from their suppliers for that reason
(`dsl.processors.fold_processors`). `partitioner`: every keyed record a sink writes is hashed (murmur2), and at
millions of distinct keys no memo of hashes helps."""

MANIFEST_NAME = "_compiled_manifest.json"
"""Written into the package by the build once every module compiled: each source's SHA-256."""

FALLBACK_NAME = "_compiled_fallback.txt"
"""Written into the package by a build that installed the pure-Python hot path: why it did."""

PURE_ENV = "STREAMLET_PURE_PYTHON"
_ASKED = f"{PURE_ENV} is set"

_PACKAGE_DIR = Path(__file__).resolve().parent


def source_path(module: str, root: Path | None = None) -> Path:
    """The `.py` file of a hot module, under `root` (the directory holding the `streamlet` package)."""
    base = _PACKAGE_DIR.parent if root is None else root
    return base.joinpath(*module.split(".")).with_suffix(".py")


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compiled_file(module: str) -> Path | None:
    """The extension module Python would load for `module`, if one is there."""
    src = source_path(module)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = src.with_suffix(suffix)
        if candidate.exists():
            return candidate
    return None


def _decide(environ: dict[str, str] | os._Environ[str]) -> tuple[bool, str]:
    """(use the compiled modules?, why): see the module docstring for the rules."""
    if environ.get(PURE_ENV, "") not in ("", "0"):
        return False, _ASKED
    try:
        manifest = json.loads((_PACKAGE_DIR / MANIFEST_NAME).read_text())
        digests: dict[str, str] = manifest["sources"]
    except (OSError, ValueError, KeyError, TypeError):
        try:
            why = (_PACKAGE_DIR / FALLBACK_NAME).read_text().strip()
        except OSError:
            return False, "not compiled: no build manifest"
        return False, f"not compiled at install: {why or 'no reason recorded'}"
    for module in HOT_MODULES:
        if _compiled_file(module) is None:
            return False, f"{module} is not compiled"
        src = source_path(module)
        try:
            stale = digests.get(module) != source_digest(src)
        except OSError:
            return False, f"{src} is missing"
        if stale:
            return False, f"stale: {src} changed since it was compiled"
    return True, "compiled with mypyc"


class _PureSourceFinder(importlib.abc.MetaPathFinder):
    """Finds each hot module's `.py` file ahead of the compiled extension beside it."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in HOT_MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


COMPILED = False
"""True when this process runs the compiled hot path (set by `select`)."""
REASON = "not selected yet"
"""Why `COMPILED` is what it is (for logs, `streamlet version` and tests)."""


def select() -> bool:
    """Decide compiled or pure for this process (once; later calls return the first answer)."""
    global COMPILED, REASON
    if REASON != "not selected yet":
        return COMPILED
    COMPILED, REASON = _decide(os.environ)
    if not COMPILED:
        if not any(isinstance(f, _PureSourceFinder) for f in sys.meta_path):
            sys.meta_path.insert(0, _PureSourceFinder())
        if REASON.startswith("stale"):
            warnings.warn(f"streamlet: running the pure-Python hot path, the compiled one is {REASON} "
                          "(rebuild it with `make compile` or `pip install -e .`)", RuntimeWarning, stacklevel=2)
    return COMPILED


if __name__ == "streamlet._compiled":  # not when setup.py reads HOT_MODULES from this file
    select()  # at import: `streamlet/__init__.py` imports this module before anything else


def describe() -> str:
    """One line for people: `compiled (mypyc)`, or `pure Python (why)`."""
    select()
    return "compiled (mypyc)" if COMPILED else f"pure Python ({REASON})"


def fell_back() -> bool:
    """True when this process runs pure Python though nobody asked for it (`STREAMLET_PURE_PYTHON`)."""
    return not select() and REASON != _ASKED


def in_use() -> dict[str, str]:
    """The file each already imported hot module was loaded from (a `.py` or a compiled extension)."""
    return {name: str(getattr(sys.modules[name], "__file__", "")) for name in HOT_MODULES if name in sys.modules}
