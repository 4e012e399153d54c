"""Every Python form docs/java-names.md gives for a Kafka Streams (Java) name exists as written.

The page's tables have a Java column and a Python column. Each `code` span of the Python column is
read as a Python expression and checked against the code: every class, function, method, attribute
and enum member it names must exist (looked up on `streamlet`, on the classes the page's placeholder
table says `stream`, `table`, `streams`, ... stand for, and on the types the code's annotations give
results), every call's keyword arguments must be parameters of what it calls, and a quoted setting
name must be one `StreamsConfig` knows (or a Kafka client setting behind one of Kafka Streams'
prefixes). Lower-case names the page does not define (`k`, `serde`, `n`) are the reader's own values.
"""

from __future__ import annotations

import ast
import enum
import inspect
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

import streamlet
import streamlet.testing
from streamlet.config import DEFAULTS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "java-names.md"
_CLIENT_PREFIXES = ("consumer.", "main.consumer.", "restore.consumer.", "global.consumer.", "producer.",
                    "admin.", "topic.")


@dataclass(frozen=True)
class Instance:
    """A value of type `cls` (a placeholder, or what a call returns)."""

    cls: type


@dataclass(frozen=True)
class Bound:
    """A method looked up on an `Instance`: called, it gets `self`."""

    owner: type
    name: str


def _tables() -> list[list[list[tuple[str, list[str]]]]]:
    """Each table of the page: rows (header first) of cells, each cell as (text, its code spans)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(PAGE.read_text(encoding="utf-8"))
    tables: list[list[list[tuple[str, list[str]]]]] = []
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            tables[-1].append([])
        elif token.type == "inline" and tokens[index - 1].type in ("th_open", "td_open"):
            spans = [child.content for child in token.children or [] if child.type == "code_inline"]
            tables[-1][-1].append((token.content, spans))
    return tables


def _placeholders(tables: list[list[list[tuple[str, list[str]]]]]) -> dict[str, type]:
    found: dict[str, type] = {}
    for table in tables:
        if [text for text, _ in table[0]] != ["Placeholder", "Stands for"]:
            continue
        for (_, names), (_, types) in ((row[0], row[1]) for row in table[1:]):
            cls = eval(types[0], vars(streamlet) | {"streamlet": streamlet})  # a class named on the page
            assert inspect.isclass(cls), types[0]
            for name in names:
                found[name] = cls
    assert found, f"{PAGE} has no placeholder table"
    return found


def _python_spans() -> list[tuple[str, str]]:
    """(the row's Java text, a Python code span) for every name-map row."""
    spans = []
    for table in _tables():
        header = [text for text, _ in table[0]]
        if header[:2] != ["Kafka Streams (Java)", "streamlet (Python)"]:
            continue
        for row in table[1:]:
            spans += [(row[0][0], span) for span in row[1][1]]
    return spans


def _hints(obj: Any) -> dict[str, Any]:
    """`obj`'s annotations, evaluated; one that names what only type checkers import is looked up by its
    name on `streamlet` (a union or a generic is not followed)."""
    try:
        return typing.get_type_hints(obj)
    except Exception:
        raw = getattr(obj, "__annotations__", {})
        return {name: getattr(streamlet, hint, None) if isinstance(hint, str) else hint for name, hint in raw.items()}


def _as_result(annotation: Any) -> Instance | None:
    if inspect.isclass(annotation):
        return Instance(annotation)
    return None


def _instance_attribute(cls: type, attr: str) -> Any:
    """What `instance.attr` is, for an instance of `cls`; fails when instances have no such attribute."""
    for klass in cls.__mro__:
        if attr in vars(klass):
            member = inspect.getattr_static(cls, attr)
            if isinstance(member, property):
                return _as_result(_hints(member.fget).get("return"))
            if inspect.isfunction(member):
                return Bound(cls, attr)
            if isinstance(member, staticmethod | classmethod):
                return getattr(cls, attr)
            if isinstance(cls, enum.EnumMeta) or isinstance(member, enum.Enum):
                return member
            return _as_result(_hints(cls).get(attr))
        if attr in getattr(klass, "__annotations__", {}):
            return _as_result(_hints(cls).get(attr))
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{re.escape(attr)}\s*(:[^=]+)?=", source):
            return None  # set in __init__: exists, type not followed
    raise AssertionError(f"{cls.__name__} instances have no attribute {attr!r}")


class _Checker:
    def __init__(self, placeholders: dict[str, type], where: str) -> None:
        self.placeholders = placeholders
        self.where = where

    def resolve(self, node: ast.AST) -> Any:
        """What `node` denotes (an object, an `Instance`, a `Bound` method), None when not known."""
        if isinstance(node, ast.Name):
            if node.id in self.placeholders:
                return Instance(self.placeholders[node.id])
            if node.id == "streamlet":
                return streamlet
            if hasattr(streamlet, node.id):
                return getattr(streamlet, node.id)
            assert not node.id[:1].isupper(), f"{self.where}: streamlet has no {node.id}"
            return None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            if isinstance(base, Instance):
                return _instance_attribute(base.cls, node.attr)
            if isinstance(base, Bound):
                raise AssertionError(f"{self.where}: {base.owner.__name__}.{base.name} is a method, not an object")
            assert hasattr(base, node.attr), f"{self.where}: {getattr(base, '__name__', base)} has no {node.attr!r}"
            return getattr(base, node.attr)
        if isinstance(node, ast.Call):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                self.walk(arg)
            target = self.resolve(node.func)
            if target is None:
                return None
            if isinstance(target, Bound):
                func = getattr(target.owner, target.name)
                self._check_call(func, node, with_self=True)
                return _as_result(_hints(func).get("return"))
            if inspect.isclass(target):
                self._check_call(target, node, with_self=False)
                return Instance(target)
            assert callable(target), f"{self.where}: {ast.unparse(node.func)} is not callable"
            self._check_call(target, node, with_self=False)
            return _as_result(_hints(target).get("return"))
        self.walk(node)
        return None

    def walk(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name | ast.Attribute | ast.Call):
            self.resolve(node)
            return
        for child in ast.iter_child_nodes(node):
            self.walk(child)

    def _check_call(self, func: Any, call: ast.Call, with_self: bool) -> None:
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            return
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return
        args = [None] * (len(call.args) + with_self)
        try:
            signature.bind(*args, **{k.arg: None for k in call.keywords if k.arg})
        except TypeError as exc:
            raise AssertionError(f"{self.where}: {ast.unparse(call)} does not fit {signature}: {exc}") from None


def _check_setting(name: str, where: str) -> None:
    assert name in DEFAULTS or name.startswith(_CLIENT_PREFIXES), f"{where}: StreamsConfig has no setting {name!r}"


def _check(span: str, placeholders: dict[str, type], where: str) -> None:
    if span.startswith("streamlet ") or span.startswith("python "):
        return  # a command, not Python
    try:
        tree = ast.parse(span, mode="eval")
    except SyntaxError:
        raise AssertionError(f"{where}: `{span}` is neither Python nor a `streamlet` command") from None
    if isinstance(tree.body, ast.Constant) and isinstance(tree.body.value, str) and "." in tree.body.value:
        _check_setting(tree.body.value, where)
        return
    _Checker(placeholders, where).walk(tree.body)


_SPANS = _python_spans()


def test_the_page_maps_the_names_the_porters_asked_for() -> None:
    java = " ".join(java for java, _ in _SPANS)
    for name in ["Consumed.with", "withName", "withTimestampExtractor", "withOffsetResetPolicy", "Produced.with",
                 "Grouped.with", "Grouped.as", "Materialized.as", "Materialized.with", "withKeySerde",
                 "withValueSerde", "withRetention", "withCachingDisabled", "withLoggingDisabled", "Joined.with",
                 "StreamJoined.with", "TableJoined", "Repartitioned", "Printed", "Branched", "Named.as",
                 "Suppressed.untilWindowCloses", "Suppressed.untilTimeLimit", "BufferConfig.unbounded",
                 "TimeWindows.ofSizeWithNoGrace", "TimeWindows.ofSizeAndGrace", "SessionWindows", "SlidingWindows",
                 "JoinWindows", "Windowed", "key()", "window().start()", "KeyValue", "Stores.", "Serdes.",
                 "StreamsConfig.", "KafkaStreams", "toStream(Named", "count(Named"]:
        assert name in java, f"{PAGE}: no row for {name}"


@pytest.mark.parametrize(("java", "span"), _SPANS, ids=[f"{i}-{s[:40]}" for i, (_, s) in enumerate(_SPANS)])
def test_each_python_form_exists(java: str, span: str) -> None:
    _check(span, _placeholders(_tables()), f"{PAGE.name}: {java!r} -> `{span}`")


def test_the_checker_catches_a_wrong_name() -> None:
    placeholders = _placeholders(_tables())
    for wrong in ["Suppressed.BufferConfig.unbounded()", "Joined.with_name('n')", "Joined(name='n', serde=1)",
                  "windowed.key()", "stream.to_stream()", "\"application.idd\"", "Supressed"]:
        with pytest.raises(AssertionError):
            _check(wrong, placeholders, wrong)
