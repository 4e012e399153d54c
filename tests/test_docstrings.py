"""Every public class and function a user imports has a docstring that `help()` shows, and no public
method of theirs is undocumented: the API reference (docs/api.md) is made from these."""

from __future__ import annotations

import enum
import importlib
import inspect
from typing import Any

import pytest

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
