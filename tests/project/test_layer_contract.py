"""ARCHITECTURE.md's package table as a test: which package may import which ("arrows point down the table only").

tests/project/test_import_graph.py checks that the import graph has no cycles; a graph without cycles can still point up
the table (the runtime asking the op registry, a printer asking the debugger). This test reads the same edges
(module level and inside functions: a deferred import is still a dependency) and fails on any edge the table does
not allow, except the few in ``KNOWN_BREAKS``, each with why it exists and where the seam should move. A break
that disappears must leave that list too, so the list never claims more than the code does.
"""

from __future__ import annotations

from tests.helpers.imports import Edge, import_edges

# Modules every layer may use: the error types, the flag table, the version string.
LEAVES = frozenset({"errors", "flags", "_version"})

# ARCHITECTURE.md's table, "may import" column. ``typing`` and ``local_blob`` are the user-facing value types of
# the front end (tp.Numpy, LocalBlob): they sit with it.
ALLOWED: dict[str, frozenset[str]] = {
    "ir": frozenset(),
    "kernels": frozenset({"ir"}),
    "frontend": frozenset({"ir", "ops", "typing", "local_blob"}),
    "ops": frozenset({"ir", "frontend", "typing", "local_blob"}),
    "typing": frozenset({"ir"}),
    "local_blob": frozenset({"ir"}),
    "compiler": frozenset({"ir", "ops", "frontend"}),
    "runtime": frozenset({"ir", "kernels"}),
    "viz": frozenset({"ir"}),
}
# Above these, the session layer (session, job_call, call_guard, replay, distributed, debug, notebook, the
# user-facing modules) may import what is below it; only one rule holds for all of them:
NOBODY_IMPORTS = frozenset({"notebook"})  # the runtime never knows a widget exists
NOTEBOOK_ENTRIES = frozenset({"_ipython"})  # the one way in: the magics, and flow.debug's views (debug/display.py)

# (importer package, imported package): why the edge exists and where the seam should go.
KNOWN_BREAKS = {
    ("frontend", "compiler"): "blob.batch_axis / split_axis run the SBP pass's inference on the job traced so far "
                              "(OneFlow infers both as each op is added; see test_import_graph.DELIBERATE)",
    ("frontend", "session"): "calling a job function reaches up for the default session "
                             "(see test_import_graph.DELIBERATE)",
}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "flowlab"


def _breaks(edges: list[Edge] | None = None) -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for edge in import_edges() if edges is None else edges:
        src, dst = _package(edge.importer), _package(edge.imported)
        if src == dst or dst in LEAVES or src == "flowlab":
            continue
        allowed = ALLOWED.get(src)
        bad = (allowed is not None and dst not in allowed) or (dst in NOBODY_IMPORTS and src not in NOTEBOOK_ENTRIES)
        if bad:
            found.setdefault((src, dst), []).append(f"{edge.importer}:{edge.line} imports {edge.imported}")
    return found


def test_imports_follow_the_package_table() -> None:
    unexplained = {pair: sites for pair, sites in _breaks().items() if pair not in KNOWN_BREAKS}
    assert not unexplained, "imports pointing up ARCHITECTURE.md's table:\n" + "\n".join(
        site for sites in unexplained.values() for site in sites)


def test_every_known_break_still_exists() -> None:
    stale = sorted(set(KNOWN_BREAKS) - set(_breaks()))
    assert not stale, f"fixed breaks still listed in KNOWN_BREAKS (remove them): {stale}"


def test_the_contract_sees_a_break() -> None:
    """The checker itself works: the runtime importing the op registry (as runtime/threads.py once did, to ask
    whether a task's op is a system op, which the Plan now says per task) is seen, with its site; the runtime
    importing the kernels is allowed."""
    edges = [Edge("flowlab.runtime.threads", "flowlab.ops.registry", 56, True, False),
             Edge("flowlab.runtime.binding", "flowlab.kernels.registry", 11, False, False)]
    assert _breaks(edges) == {("runtime", "ops"): ["flowlab.runtime.threads:56 imports flowlab.ops.registry"]}
