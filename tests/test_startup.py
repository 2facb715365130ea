"""Start-up costs (issue 13): what a fresh process compiles, and what it finds in the caches."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent.parent / "flowlab" / "kernels" / "numba_cpu"


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
