"""How the command-line tools load an application: its `MODULE:FUNCTION`, its settings, its logging.

`streamlet run | describe | reset | topics` (`streamlet.cli.main`) and `streamlet spark ...`
(`streamlet.cli.spark`) take an application and its layered settings the same way: the function's own
dict, then `--config` files (.properties or .json), then `--set key=value`, later wins. Users' scripts
may use the same helpers (`streamlet.cli` exports them).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streamlet.errors import StreamsError
from streamlet.kafka import broker_wait_log
from streamlet.topology import Topology


class UsageError(StreamsError):
    """A command-line mistake: unknown module or function, unreadable config file, malformed --set."""


# -- configuration sources ------------------------------------------------------------------------

_PROPERTIES_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape_properties(text: str) -> str:
    out: list[str] = []
    chars = iter(text)
    for ch in chars:
        if ch != "\\":
            out.append(ch)
            continue
        nxt = next(chars, "")
        if nxt == "u":
            code = "".join(next(chars, "") for _ in range(4))
            try:
                out.append(chr(int(code, 16)))
            except ValueError as exc:
                raise UsageError(f"malformed \\u escape {code!r} in a .properties file") from exc
        else:
            out.append(_PROPERTIES_ESCAPES.get(nxt, nxt))
    return "".join(out)


def _split_property(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped `=`, `:` or whitespace, as java.util.Properties."""
    index, escaped = 0, False
    while index < len(line):
        ch = line[index]
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in "=: \t\f":
            break
        index += 1
    key, rest = line[:index], line[index:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape_properties(key), _unescape_properties(rest)


def parse_properties(text: str) -> dict[str, str]:
    """Java `.properties` syntax: `#`/`!` comments, `=`/`:`/space separators, `\\` continuations."""
    result: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")  # continuation lines lose their indentation too
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes: the line continues
            pending += line[:-1]
            continue
        logical, pending = pending + line, ""
        if logical:
            key, value = _split_property(logical)
            result[key] = value
    if pending:
        key, value = _split_property(pending)
        result[key] = value
    return result


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A `.json` object or a Java-style `.properties` file (any other extension is read as the latter)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the config file {file}: {exc.strerror or exc}") from exc
    if file.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"the config file {file} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise UsageError(f"the config file {file} must hold a JSON object of settings")
        return {str(k): v for k, v in data.items()}
    return dict(parse_properties(text))


def parse_settings(items: Sequence[str]) -> dict[str, str]:
    """`--set key=value` pairs; the value may itself contain `=`."""
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set expects key=value, got {item!r}")
        result[key.strip()] = value
    return result


# -- loading the application ----------------------------------------------------------------------

def load_target(spec: str) -> tuple[Any, dict[str, Any]]:
    """Import `MODULE:FUNCTION` and return (topology, the app's own config dict).

    The current directory is importable, as with `python -m`. FUNCTION defaults to `topology`; it
    may also name a `Topology` attribute directly. A `StreamsBuilder` result is built.
    """
    module_name, _, attribute = spec.partition(":")
    attribute = attribute or "topology"
    if not module_name:
        raise UsageError(f"expected MODULE:FUNCTION, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only a missing *target* is a usage error; a missing import inside the app is its own bug.
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise UsageError(f"cannot import {module_name!r}: no such module (run from the directory "
                             "that contains it, or put it on PYTHONPATH)") from exc
        raise
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UsageError(f"module {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    result = target() if callable(target) and not isinstance(target, Topology) else target
    config: dict[str, Any] = {}
    if isinstance(result, tuple):
        if len(result) != 2 or not isinstance(result[1], dict):
            raise UsageError(f"{spec} returned a tuple; expected (topology, config_dict)")
        result, config = result[0], dict(result[1])
    if not isinstance(result, Topology) and callable(getattr(result, "build", None)):
        result = result.build()
    if not isinstance(result, Topology):
        raise UsageError(f"{spec} returned {type(result).__name__}, not a Topology")
    return result, config


def configure_logging(level: str) -> None:
    """Log to stderr at `level`, and say in streamlet's words when the app waits for the broker."""
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    broker_wait_log.install()  # "waiting for the broker" / "continuing" instead of only aiokafka's retry errors
