"""streamlet's own imports form layers, with no cycle hidden inside a function.

The rule (docs: "No import upward, not even inside a function"): the API modules (`errors`, `config`,
`serdes`, `topology`, ...) sit at the bottom; `kafka/`, `dsl/`, the engines and the tools build on them,
never the reverse. A function-local import still runs, so it still closes a cycle; it only hides it from
whoever reads the top of the file. These tests read every module under `streamlet/` with `ast`, take
every `import` and `from ... import` anywhere in it (module top, inside functions and classes, and under
`if TYPE_CHECKING:`), and build the graph of who imports whom.

`if TYPE_CHECKING:` imports count too. They do not execute, but an annotation that names a type from an
upper layer is a dependency on that layer all the same, and counting them keeps the rule one sentence long.

Nodes: each subpackage of streamlet (`streamlet.kafka`, `streamlet.dsl`, `streamlet.stores`, ...) is one
node; each top-level module (`streamlet.errors`, `streamlet.config`, ...) is a node of its own, and so is
the package's `__init__` (`streamlet`), which re-exports the public API. Importing a submodule also runs
its parent packages' `__init__`; those implicit edges are left out (a child importing its half-built
parent package is harmless), only imports that are written down count.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "streamlet"

# The bottom layer: what an application imports to describe its topology, and what everything else builds on.
BOTTOM_MODULES = (
    "streamlet.errors",
    "streamlet.error_remedies",
    "streamlet.error_handling",
    "streamlet.config",
    "streamlet.serdes",
    "streamlet.windowed",
    "streamlet.windowed_serdes",
    "streamlet.record",
    "streamlet.processor",
    "streamlet.offset_reset",
    "streamlet.partitioner",
    "streamlet.topology",
    "streamlet.topology_description",
    "streamlet.topology_specs",
    "streamlet.durations",
    "streamlet.redaction",
    "streamlet.dsl_store_settings",
    "streamlet.typed_records",
)
# The layers above it, which no bottom module may import.
UPPER_PACKAGES = (
    "streamlet.kafka",
    "streamlet.dsl",
    "streamlet.actors",
    "streamlet.runtime",
    "streamlet.spark",
    "streamlet.testing",
    "streamlet.cli",
    "streamlet.http",
    "streamlet.schema_registry",
)

# Cycles inside one package that are known and accepted, each as the failure message's first line. The DSL's
# fluent classes return each other as Kafka Streams' interfaces do (`KStream.to_table()` is a `KTable`,
# `KTable.to_stream()` a `KStream`, a grouped table's aggregation a `KTable`): one module of each pair
# imports the other inside the method that builds it. The entry must match the cycle exactly, so that it
# is updated when the cycle grows or shrinks.
KNOWN_CYCLES_INSIDE_PACKAGES: tuple[str, ...] = (
    "streamlet.dsl: cycle among 9 nodes: streamlet.dsl.cogrouped_stream, streamlet.dsl.foreign_key_join, "
    "streamlet.dsl.grouped_stream, streamlet.dsl.grouped_table, streamlet.dsl.kstream, streamlet.dsl.ktable, "
    "streamlet.dsl.session_windowed_stream, streamlet.dsl.sliding_windowed_stream, streamlet.dsl.windowed_stream",
)


@dataclass(frozen=True)
class Edge:
    """One written import: `source` (a module) imports `target` (a module or package of streamlet)."""

    source: str
    target: str
    path: Path
    line: int
    how: str = ""
    """"" at the module's top; "in a function" or "TYPE_CHECKING" otherwise (said in the failure message)."""

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}" + (f" [{self.how}]" if self.how else "")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def is_package(name: str, modules: dict[str, Path]) -> bool:
    path = modules.get(name)
    return path is not None and path.name == "__init__.py"


def resolve_from(node: ast.ImportFrom, importer: str, modules: dict[str, Path]) -> str:
    """The absolute module named by `from <module> import ...`, relative levels resolved."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package(importer, modules):
        base.pop()  # a module's relative imports start from its package
    for _ in range(node.level - 1):
        base.pop()
    return ".".join(base + ([node.module] if node.module else []))


def targets(node: ast.Import | ast.ImportFrom, importer: str, modules: dict[str, Path]) -> Iterator[str]:
    """The streamlet modules an import statement runs (`from pkg import sub` names the submodule)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        source = resolve_from(node, importer, modules)
        submodules = [f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in modules]
        names = submodules if len(submodules) == len(node.names) else [source, *submodules]
    for name in names:
        while name and name not in modules:  # `import streamlet.kafka.x.attr`-style paths: the longest module
            name = name.rpartition(".")[0]
        if name.startswith("streamlet"):
            yield name


def import_statements(tree: ast.AST, how: str = "") -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement in `tree`, with where it sits: "", "in a function" or "TYPE_CHECKING"."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, how
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from import_statements(node, how or "in a function")
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                yield from import_statements(ast.Module(body=[child], type_ignores=[]), how or "TYPE_CHECKING")
            for child in node.orelse:
                yield from import_statements(ast.Module(body=[child], type_ignores=[]), how)
        else:
            yield from import_statements(node, how)


@functools.cache
def import_edges() -> list[Edge]:
    modules = all_modules()
    edges: list[Edge] = []
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, how in import_statements(tree):
            edges.extend(Edge(importer, target, path, node.lineno, how)
                         for target in targets(node, importer, modules) if target != importer)
    return edges


def package_node(module: str) -> str:
    """`streamlet.kafka.topic_manager` -> `streamlet.kafka`; a top-level module is its own node."""
    parts = module.split(".")
    if len(parts) == 1:
        return module
    head = ".".join(parts[:2])
    return head if (PACKAGE / parts[1]).is_dir() else module


def strongly_connected(nodes: Iterable[str], successors: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one node, each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(successors.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return sorted(found)


def shortest_cycle(component: list[str], successors: dict[str, set[str]]) -> list[str]:
    """One shortest cycle through the component's first node, as a closed path of nodes."""
    start = component[0]
    members = set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(successors.get(node, set()) & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if nxt not in previous:
                    previous[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def describe_cycles(edges: list[Edge], node_of: dict[str, str], scope: str) -> list[str]:
    by_pair: dict[tuple[str, str], list[Edge]] = defaultdict(list)
    for edge in edges:
        source, target = node_of[edge.source], node_of[edge.target]
        if source != target:
            by_pair[source, target].append(edge)
    successors: dict[str, set[str]] = defaultdict(set)
    for source, target in by_pair:
        successors[source].add(target)
    reports = []
    for component in strongly_connected(set(node_of.values()), successors):
        cycle = shortest_cycle(component, successors)
        lines = [f"{scope}: cycle among {len(component)} nodes: {', '.join(component)}",
                 f"  e.g. {' -> '.join(cycle)}"]
        members = set(component)
        for (source, target), sites in sorted(by_pair.items()):
            if source in members and target in members:
                lines.append(f"  {source} -> {target}:")
                lines.extend(f"      {edge.where()}  ({edge.source} imports {edge.target})" for edge in sites)
        reports.append("\n".join(lines))
    return reports


def test_no_cycle_between_packages() -> None:
    edges = import_edges()
    node_of = {name: package_node(name) for name in all_modules()}
    reports = describe_cycles(edges, node_of, "streamlet")
    assert not reports, "import cycles between streamlet's packages:\n" + "\n".join(reports)


def cycles_inside_packages() -> list[str]:
    """The reports of cycles among the modules of each package, from imports that run (TYPE_CHECKING left out)."""
    modules = all_modules()
    edges = [edge for edge in import_edges() if edge.how != "TYPE_CHECKING"]
    reports = []
    for package in sorted(name for name in modules if "." in name and is_package(name, modules)
                          and package_node(name) == name):
        inside = [edge for edge in edges if package_node(edge.source) == package == package_node(edge.target)]
        node_of = {name: name for name in modules if package_node(name) == package}
        reports.extend(describe_cycles(inside, node_of, package))
    return reports


def test_no_cycle_among_modules_inside_a_package() -> None:
    """Inside one package, imports that run (at the top or in a function) form no cycle either, except the
    DSL's fluent classes (`KNOWN_CYCLES_INSIDE_PACKAGES`). Here `if TYPE_CHECKING:` imports do not count:
    classes of one package may name each other in annotations (a task and the nodes it owns do), and
    naming them by a protocol instead would cost the compiled hot path its native attribute access."""
    reports = [report for report in cycles_inside_packages()
               if report.split("\n", 1)[0] not in KNOWN_CYCLES_INSIDE_PACKAGES]
    assert not reports, "import cycles between modules of one package:\n" + "\n".join(reports)


def test_known_cycles_are_still_there() -> None:
    """An entry of `KNOWN_CYCLES_INSIDE_PACKAGES` that no longer matches a cycle (it shrank or went) must go."""
    found = {report.split("\n", 1)[0] for report in cycles_inside_packages()}
    assert set(KNOWN_CYCLES_INSIDE_PACKAGES) <= found, set(KNOWN_CYCLES_INSIDE_PACKAGES) - found


def test_bottom_modules_import_no_upper_layer() -> None:
    upward = [edge for edge in import_edges()
              if edge.source in BOTTOM_MODULES and package_node(edge.target) in UPPER_PACKAGES]
    assert not upward, "the API modules import from the layers above them:\n" + "\n".join(
        f"  {edge.where()}  {edge.source} imports {edge.target}" for edge in upward)


def test_graph_sees_function_local_and_relative_imports() -> None:
    """The reader itself: an import inside a function counts, and a relative import resolves."""
    modules = all_modules()
    tree = ast.parse("import os\nif TYPE_CHECKING:\n    import a\nclass C:\n    def f(self):\n        import b\n")
    assert [(type(node).__name__, node.lineno, how) for node, how in import_statements(tree)] == [
        ("Import", 1, ""), ("Import", 3, "TYPE_CHECKING"), ("Import", 6, "in a function")]
    tree = ast.parse("def f():\n    from .errors import ConfigError\n    from . import serdes\n")
    nodes = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert list(targets(nodes[0], "streamlet.config", modules)) == ["streamlet.errors"]
    assert list(targets(nodes[1], "streamlet.config", modules)) == ["streamlet.serdes"]
    assert list(targets(nodes[0], "streamlet.kafka", modules)) == ["streamlet.kafka"]
    tree = ast.parse("from ..errors import ConfigError\nimport streamlet.kafka.topic_manager\n")
    first, second = (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))
    assert isinstance(first, ast.ImportFrom)
    assert list(targets(first, "streamlet.kafka.topic_manager", modules)) == ["streamlet.errors"]
    assert list(targets(second, "streamlet.x", modules)) == ["streamlet.kafka.topic_manager"]
