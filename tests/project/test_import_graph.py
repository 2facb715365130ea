"""flowlab's module import graph, read from the source with ``ast`` (nothing is imported).

Three rules, each about a way a cycle hides:

1. Module-level imports form a DAG. (``if TYPE_CHECKING:`` blocks are for the type checker and do not count.)
2. No module imports, at module level, a name that an *ancestor* package's ``__init__`` defines (such as
   ``from ... import __version__``): the ancestor is still half-initialized when it imports its children, which
   forces the ancestor to define the name before its own imports.
3. A function-level import across packages must not close a cycle, i.e. the imported module must not reach the
   importer back through module-level imports. Such an import only defers the cycle to the first call. The few
   that exist on purpose are listed in ``DELIBERATE`` with the reason.

Edges are resolved as Python resolves them: ``from pkg import name`` is an edge to the submodule ``pkg.name``
when there is one, otherwise to ``pkg`` itself.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2] / "flowlab"

# (importer, imported): why the function-level import that closes a cycle is deliberate.
DELIBERATE = {
    ("flowlab.frontend.function", "flowlab.session"):
        "the session sits above the front end; calling a job function reaches up for the default session",
    ("flowlab.frontend.blob", "flowlab.ops.math_ops"):
        "a LazyBlob's operators (+, *, ...) call the math ops, whose results are LazyBlobs",
    ("flowlab.frontend.blob", "flowlab.ops.compare_ops"):
        "a LazyBlob's comparisons and % (==, <, ..., %) call the comparison ops, whose results are LazyBlobs",
    ("flowlab.frontend.blob", "flowlab.compiler.blob_view"):
        "blob.batch_axis / split_axis run the SBP pass's inference on the job traced so far (OneFlow infers both "
        "as each op is added)",
}


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    deferred: bool  # inside a function body
    names_attr: bool  # `from pkg import name` where name is not a submodule of pkg


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
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


def import_edges() -> list[Edge]:
    mods = _modules()

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
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    full = ".".join(base) + (f".{node.module}" if node.module else "")
                else:
                    full = node.module or ""
                for alias in node.names:
                    sub = f"{full}.{alias.name}"
                    targets.append((sub, False) if sub in mods else (full, True))
            for target, names_attr in targets:
                resolved = owner(target)
                if resolved and resolved != mod and resolved.split(".")[0] == "flowlab":
                    edges.append(Edge(mod, resolved, node.lineno, deferred, names_attr))
    return edges


def module_graph(edges: list[Edge]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(_modules())
    graph.add_edges_from((e.importer, e.imported) for e in edges if not e.deferred)
    return graph


def test_the_graph_sees_known_edges() -> None:
    """The reader works: a few imports that certainly exist are found, with the right kind."""
    edges = {(e.importer, e.imported, e.deferred) for e in import_edges()}
    assert ("flowlab.compiler.passes", "flowlab.ir", False) in edges  # from ..ir import Job, OpConf
    assert ("flowlab.ir.serialize", "flowlab.ir.job", False) in edges  # from . import job (a submodule)
    assert ("flowlab._ipython", "flowlab.notebook.magics", True) in edges  # inside load_ipython_extension
    assert not any(e.importer == "flowlab.runtime.actor" and e.imported.endswith(".runtime") and not e.deferred
                   for e in import_edges())  # actor imports Runtime under TYPE_CHECKING only


def test_module_level_imports_are_acyclic() -> None:
    graph = module_graph(import_edges())
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "module-level import cycles:\n" + "\n".join(" -> ".join([*c, c[0]]) for c in cycles)


def test_no_module_imports_a_name_from_its_half_initialized_ancestor() -> None:
    bad = [
        f"{e.importer}:{e.line} imports a name defined in {e.imported}/__init__.py"
        for e in import_edges()
        if not e.deferred and e.names_attr and e.importer.startswith(e.imported + ".")
        and _modules()[e.imported][1]
    ]
    assert not bad, "\n".join(bad)


def test_no_function_level_import_hides_a_cycle() -> None:
    edges = import_edges()
    graph = module_graph(edges)
    hidden = {}
    for e in edges:
        if e.deferred and nx.has_path(graph, e.imported, e.importer):
            path = " -> ".join(nx.shortest_path(graph, e.imported, e.importer))
            hidden[(e.importer, e.imported)] = f"{e.importer}:{e.line} imports {e.imported}, which imports back: {path}"
    unexplained = {k: v for k, v in hidden.items() if k not in DELIBERATE}
    assert not unexplained, "\n".join(unexplained.values())
