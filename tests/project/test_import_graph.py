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

import networkx as nx

from tests.helpers.imports import import_edges, module_graph, modules

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
        and modules()[e.imported][1]
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
