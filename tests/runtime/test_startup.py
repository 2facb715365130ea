"""Start-up costs (issue 13): what a fresh process compiles, and what it finds in the caches."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "flowlab" / "kernels" / "numba_cpu"


def _is_njit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
    return name == "njit"


def _slice_assignments(tree: ast.AST) -> list[int]:
    """Lines of `a[...:...] = <not a constant>` inside @njit functions."""
    lines = []
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and any(_is_njit(d) for d in fn.decorator_list)):
            continue
        for node in ast.walk(fn):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AugAssign) else []
            for target in targets:
                if not isinstance(target, ast.Subscript) or isinstance(node.value, ast.Constant):
                    continue
                index = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
                if any(isinstance(i, ast.Slice) for i in index):
                    lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.py")), ids=lambda p: p.name)
def test_no_kernel_assigns_an_array_into_a_slice(path: Path) -> None:
    """Numba compiles a formatted shape-mismatch error for each such assignment (5-14 s on a fresh process)."""
    lines = _slice_assignments(ast.parse(path.read_text()))
    assert not lines, (f"{path.name}: lines {lines} assign an array into a slice inside a Numba kernel; write the "
                       "loop or use a ufunc's out argument (see njit in kernels/numba_cpu/_numba.py)")


def test_the_check_finds_a_slice_assignment() -> None:
    code = "@njit\ndef f(x, out):\n    out[:] = x[0]\n    out[1:] = 0\n\ndef g(x, out):\n    out[:] = x\n"
    assert _slice_assignments(ast.parse(code)) == [3]


def test_find_cycle_finds_a_cycle_and_only_a_cycle() -> None:
    import networkx as nx

    from flowlab.compiler.verify import find_cycle

    assert find_cycle({1: [2], 2: [3], 3: []}) == []
    assert find_cycle({1: [2, 3], 2: [4], 3: [4], 4: []}) == []  # a diamond is no cycle
    assert find_cycle({1: [1]}) == [1]
    cycle = find_cycle({0: [1], 1: [2], 2: [3], 3: [1], 4: [0]})
    assert cycle == [1, 2, 3]
    rng = __import__("random").Random(0)
    for _ in range(200):  # against networkx on random graphs
        n = rng.randint(1, 8)
        succ = {i: [j for j in range(n) if rng.random() < 0.2] for i in range(n)}
        found = find_cycle(succ)
        graph = nx.DiGraph([(a, b) for a, bs in succ.items() for b in bs])
        graph.add_nodes_from(succ)
        assert bool(found) == (not nx.is_directed_acyclic_graph(graph))
        assert all(found[(k + 1) % len(found)] in succ[a] for k, a in enumerate(found))


def test_a_first_call_imports_no_networkx() -> None:
    import subprocess
    import sys

    code = ("import sys, numpy as np, flowlab as flow, flowlab.typing as tp\n"
            "@flow.global_function()\n"
            "def f(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:\n    return flow.math.relu(x)\n"
            "f(np.ones(2, np.float32))\nprint('networkx' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(__import__("os").environ, FLOWLAB_KERNELS="reference")).stdout
    assert out.strip().splitlines()[-1] == "False"
