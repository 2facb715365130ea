"""flowlab's module import graph, read from the source with ``ast`` (nothing is imported): the edges the import
tests (tests/project/test_import_graph.py, test_layer_contract.py) and the test layout check read. Edges are
resolved as Python resolves them: ``from pkg import name`` is an edge to the submodule ``pkg.name`` when there is
one, otherwise to ``pkg`` itself."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2] / "flowlab"


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    deferred: bool  # inside a function body
    names_attr: bool  # `from pkg import name` where name is not a submodule of pkg


def modules(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root`` (a package folder): its dotted name -> (path, whether it is a package)."""
    mods = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit_stmt(sub, deferred)
                continue
            visit_stmt(child, deferred)

    def visit_stmt(child: ast.AST, deferred: bool) -> None:
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            found.append((child, deferred))
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            visit(child, True)
        else:
            visit(child, deferred)

    visit(tree, False)
    return found


def import_edges(root: Path = ROOT) -> list[Edge]:
    """The import statements of the modules under ``root`` that name a module under it."""
    mods = modules(root)
    top = root.name

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges = []
    for mod, (path, is_pkg) in mods.items():
        package = mod if is_pkg else mod.rpartition(".")[0]
        for node, deferred in _imports(ast.parse(path.read_text(), str(path))):
            targets: list[tuple[str, bool]] = []
            if isinstance(node, ast.Import):
                targets = [(alias.name, False) for alias in node.names]
            else:
                full = _absolute(package, node)
                for alias in node.names:
                    sub = f"{full}.{alias.name}"
                    targets.append((sub, False) if sub in mods else (full, True))
            for target, names_attr in targets:
                resolved = owner(target)
                if resolved and resolved != mod and resolved.split(".")[0] == top:
                    edges.append(Edge(mod, resolved, node.lineno, deferred, names_attr))
    return edges


def _absolute(package: str, node: ast.ImportFrom) -> str:
    """The module ``from <node.module> import ...`` names, resolved against ``package`` when relative."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(base) + (f".{node.module}" if node.module else "")


def module_graph(edges: list[Edge]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(modules())
    graph.add_edges_from((e.importer, e.imported) for e in edges if not e.deferred)
    return graph


@dataclass(frozen=True)
class PrivateImport:
    importer: str
    module: str  # the module the name is imported from (or read from, as ``module._name``)
    name: str
    line: int


def private_imports(root: Path = ROOT) -> list[PrivateImport]:
    """Every private name one module takes from another under ``root``: ``from X import _name`` (module level or in
    a function; ``_name`` not a submodule: ``from . import _version`` is a module) and ``alias._name`` where
    ``alias`` names an imported module (``from . import compile as c`` ... ``c._helper``)."""
    mods = modules(root)
    found = []
    for mod, (path, is_pkg) in mods.items():
        package = mod if is_pkg else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        aliases: dict[str, str] = {}  # local name -> the module it is bound to
        for node, _ in _imports(tree):
            if isinstance(node, ast.Import):
                aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in mods})
                continue
            full = _absolute(package, node)
            for alias in node.names:
                sub = f"{full}.{alias.name}"
                if sub in mods:
                    aliases[alias.asname or alias.name] = sub
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(PrivateImport(mod, full, alias.name, node.lineno))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append(PrivateImport(mod, aliases[node.value.id], node.attr, node.lineno))
    return found
