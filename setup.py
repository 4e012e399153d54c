"""Builds streamlet's per-record hot path with mypyc (`streamlet/_compiled.py` lists the modules).

Everything else about the package is in pyproject.toml. The compiled modules are an optimization only:
when mypyc or a C compiler is missing, or the compilation fails, the install still succeeds as pure
Python and says so (set `STREAMLET_PURE_PYTHON=1` to skip the compilation on purpose). Once every module
compiled, the build writes `streamlet/_compiled_manifest.json` with each source's SHA-256; at import,
`streamlet._compiled.select` uses the compiled modules only if every source still matches, so a stale
build never shadows an edited `.py` file. A build that falls back writes `streamlet/_compiled_fallback.txt`
instead, with the reason: pip shows a successful build's output only with `-v`, so the installed package
says it (`streamlet version`, `streamlet run`'s first log line).

`python setup.py build_ext --inplace` (what `make compile` runs) rebuilds in place, and returns at once
when the manifest already matches every source.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
_compiled: dict[str, Any] = runpy.run_path(str(ROOT / "streamlet" / "_compiled.py"))
HOT_MODULES: tuple[str, ...] = _compiled["HOT_MODULES"]
MANIFEST_NAME: str = _compiled["MANIFEST_NAME"]
FALLBACK_NAME: str = _compiled["FALLBACK_NAME"]
PURE_ENV: str = _compiled["PURE_ENV"]
GROUP = "streamlet._hot"
"""mypyc's shared library becomes `streamlet/_hot__mypyc.*.so`, inside the package."""


def _digests() -> dict[str, str]:
    return {m: _compiled["source_digest"](_compiled["source_path"](m, ROOT)) for m in HOT_MODULES}


def _have_compiler() -> bool:
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) is not None


def _remove_stale_extensions() -> None:
    """Delete compiled modules beside sources that are no longer compiled (a module taken off `HOT_MODULES`):
    Python would still load them, and only the listed modules are guarded by the manifest."""
    import importlib.machinery

    keep = {GROUP + "__mypyc", *HOT_MODULES}
    suffixes = sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True)  # ".cpython-...so" before ".so"
    for path in (ROOT / "streamlet").rglob("*.so"):
        suffix = next((s for s in suffixes if path.name.endswith(s)), None)
        if suffix is None:
            continue
        module = ".".join(path.relative_to(ROOT).with_name(path.name[: -len(suffix)]).parts)
        if module not in keep:
            print(f"streamlet: removing {path}: no longer compiled", file=sys.stderr)
            path.unlink()


class _BuildHotPath(build_ext):
    """Compiles the hot modules with mypyc when it can, then writes the manifest; never fails the install."""

    def run(self) -> None:
        self.extensions = []
        package = self._target() / "streamlet"
        manifest = package / MANIFEST_NAME
        if os.environ.get(PURE_ENV, "") not in ("", "0"):
            if self._target() == ROOT:  # in place: the checkout's build stays as it is
                print(f"streamlet: {PURE_ENV} is set: not compiling the hot path", file=sys.stderr)
            else:  # a wheel: without the compiled modules' manifest, whatever an earlier build left in build/
                manifest.unlink(missing_ok=True)
                self._fall_back(f"{PURE_ENV} was set")
            return
        digests = _digests()
        if self.inplace:
            _remove_stale_extensions()
        if self.inplace and self._up_to_date(manifest, digests):
            return
        manifest.unlink(missing_ok=True)  # until every module compiled again
        if not _have_compiler():
            self._fall_back("no C compiler found")
            return
        try:
            from mypyc.build import mypycify
        except ImportError:
            self._fall_back("mypyc (the mypy package) was not installed")
            return
        sources = [str(Path(*m.split(".")).with_suffix(".py")) for m in HOT_MODULES]
        cwd = os.getcwd()
        os.chdir(ROOT)  # mypyc names modules from paths relative to the working directory
        try:
            self.extensions = mypycify([*sources, "--ignore-missing-imports"], group_name=GROUP, opt_level="3",
                                       target_dir=str(ROOT / "build" / "mypyc"))
            self._prepare(self.extensions)
            super().run()
        except (Exception, SystemExit) as exc:  # a type error mypyc rejects, a compiler error
            self._remove_outputs()
            self.extensions = []
            self._fall_back(f"compiling it failed ({type(exc).__name__}: {exc})")
            return
        finally:
            os.chdir(cwd)
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps({"sources": digests}, indent=1, sort_keys=True) + "\n")
        (package / FALLBACK_NAME).unlink(missing_ok=True)

    def _target(self) -> Path:
        """Where the package being built lies: the source tree (in place, editable) or the build directory."""
        return ROOT if self.inplace or getattr(self, "editable_mode", False) else Path(self.build_lib)

    def _fall_back(self, reason: str) -> None:
        """Say why the hot path stays pure Python, in the build's output and in the package (for run time)."""
        print(f"WARNING: streamlet: the hot path is not compiled, {reason}; installing the pure-Python hot path "
              "(it runs, more slowly)", file=sys.stderr)
        note = self._target() / "streamlet" / FALLBACK_NAME
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(reason.splitlines()[0] + "\n")

    def _prepare(self, extensions: list[Any]) -> None:
        """What setuptools' `finalize_options` does per extension, for the ones mypyc made after it ran."""
        self.check_extensions_list(extensions)
        self.ext_map = {}
        for ext in extensions:
            ext._full_name = self.get_ext_fullname(ext.name)
            self.ext_map[ext._full_name] = self.ext_map[ext._full_name.split(".")[-1]] = ext
            ext._links_to_dynamic = ext._needs_stub = False
            ext._file_name = self.get_ext_filename(ext._full_name)

    def _up_to_date(self, manifest: Path, digests: dict[str, str]) -> bool:
        """An in-place build whose manifest still matches every source has nothing to do."""
        try:
            return bool(json.loads(manifest.read_text())["sources"] == digests)
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def _remove_outputs(self) -> None:
        """A failed build leaves no half set of compiled modules (the import guard would ignore them anyway)."""
        for ext in self.extensions:
            path = Path(self.get_ext_fullpath(ext.name))
            path.unlink(missing_ok=True)

    def get_outputs(self) -> list[str]:
        outputs: list[str] = super().get_outputs()
        if not (self.inplace or getattr(self, "editable_mode", False)):
            name = MANIFEST_NAME if self.extensions else FALLBACK_NAME
            outputs.append(str(Path(self.build_lib) / "streamlet" / name))
        return outputs


# ext_modules must not be empty, or setuptools never runs build_ext (and makes a pure wheel): this
# placeholder stands for the list `_BuildHotPath.run` replaces with mypyc's extensions.
from setuptools import Extension  # noqa: E402

setup(ext_modules=[Extension("streamlet._hot_placeholder", sources=[])], cmdclass={"build_ext": _BuildHotPath})
