"""Every public class and function a user imports has a docstring that `help()` shows, and no public
method of theirs is undocumented: the API reference (docs/api.md) is made from these. What `help()` shows
says the thing itself: it never sends the reader into the source (a `.py` file, an internal module)."""

from __future__ import annotations

import enum
import importlib
import inspect
import re
from typing import Any

import pytest

# A source file (`stream_stream_join.py`, `processors/fold.py`) or an internal package's module.
_INTO_THE_SOURCE = re.compile(r"[\w/]+\.py\b|\bstreamlet\.(?:actors|runtime|kafka)\.\w+")

PUBLIC_MODULES = ["streamlet", "streamlet.testing", "streamlet.testing.strategies", "streamlet.testing.pytest_plugin"]


def _public_objects() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__.startswith("streamlet"):
                found.append((f"{module_name}.{name}", obj))
    return found


def _undocumented_members(cls: type) -> list[str]:
    missing = []
    for name, member in vars(cls).items():
        if name.startswith("_") or (issubclass(cls, enum.Enum) and isinstance(member, cls)):
            continue
        func = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        if callable(func) and getattr(func, "__module__", "").startswith("streamlet") \
                and not (inspect.getdoc(func) or "").strip():
            missing.append(name)
    return missing


@pytest.mark.parametrize(("name", "obj"), _public_objects(), ids=[n for n, _ in _public_objects()])
def test_public_api_is_documented(name: str, obj: Any) -> None:
    own_doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    assert (own_doc or "").strip(), f"{name} has no docstring of its own"
    assert "# --" not in (inspect.getdoc(obj) or "")
    if inspect.isclass(obj):
        assert not _undocumented_members(obj), f"{name}: undocumented public members {_undocumented_members(obj)}"


def _member_docs(cls: type) -> list[tuple[str, str]]:
    docs = []
    members = {name: member for klass in reversed(cls.__mro__) if klass.__module__.startswith("streamlet")
               for name, member in vars(klass).items()}  # inherited ones too: help() shows them
    for name, member in members.items():
        if name.startswith("_") and name != "__init__":
            continue
        func = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        if callable(func) and getattr(func, "__module__", "").startswith("streamlet"):
            docs.append((name, inspect.getdoc(func) or ""))
    return docs


@pytest.mark.parametrize(("name", "obj"), _public_objects(), ids=[n for n, _ in _public_objects()])
def test_public_docstrings_never_point_into_the_source(name: str, obj: Any) -> None:
    docs = [(name, inspect.getdoc(obj) or "")]
    if inspect.isclass(obj):
        docs += [(f"{name}.{member}", doc) for member, doc in _member_docs(obj)]
    for where, doc in docs:
        found = _INTO_THE_SOURCE.findall(doc)
        assert not found, f"help({where}) sends the reader into the source ({found}): say the thing instead"


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_module_docstrings_name_no_source_files(module_name: str) -> None:
    doc = importlib.import_module(module_name).__doc__ or ""
    found = re.findall(r"[\w/]+\.py\b", doc)
    assert not found, f"help({module_name}) names source files {found}"
