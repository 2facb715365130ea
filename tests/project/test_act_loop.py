"""One act loop: no class in flowlab overrides ``Runtime``'s act loop (issue 26).

A backend (Ray machines, devices) is composed into the run path: an executor runs a call over it, a stepper
(``Runtime.stepper()``) steps it for flow.debug. A subclass of Runtime that overrides ``step``/``peek`` or a
``run_*`` method is a second loop that the replay proof and the debugger's tests no longer cover; this test reads
every module's classes (AST: no import of Ray or IPython) and fails on one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import flowlab

ROOT = Path(flowlab.__file__).parent
# Runtime's act loop: one act (step), what acts next (peek), the loop itself (acts) and what drives it to the end.
LOOP = frozenset({"step", "peek", "acts", "run_call", "run_protocol", "run_until", "_run_to_idle"})


def _classes() -> dict[str, tuple[str, list[str], set[str]]]:
    """Every class in flowlab: name -> (module, base names, method names)."""
    out: dict[str, tuple[str, list[str], set[str]]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                         for b in node.bases]
                methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
                methods |= {t.id for a in node.body if isinstance(a, ast.Assign) for t in a.targets
                            if isinstance(t, ast.Name)}  # ``step = other_step`` overrides too
                out[node.name] = (str(path.relative_to(ROOT.parent)), bases, methods)
    return out


def runtime_subclasses(classes: dict[str, tuple[str, list[str], set[str]]]) -> set[str]:
    """Names of the classes that derive from Runtime, directly or through another flowlab class."""
    found = {"Runtime"}
    while True:
        more = {name for name, (_, bases, _) in classes.items() if name not in found and found & set(bases)}
        if not more:
            return found - {"Runtime"}
        found |= more


def test_the_finder_sees_runtime_subclasses() -> None:
    classes = _classes()
    assert LOOP <= classes["Runtime"][2]  # every name checked is the act loop's
    assert "RayRuntime" in runtime_subclasses(classes)  # the Ray backend's machine 0: a Runtime, loop untouched
    fake = {**classes, "A": ("x.py", ["RayRuntime"], {"step"}), "B": ("y.py", ["A"], set())}
    assert {"A", "B"} <= runtime_subclasses(fake)


def test_no_class_overrides_the_act_loop() -> None:
    classes = _classes()
    overriding = sorted(f"{classes[name][0]}: {name} overrides {', '.join(sorted(LOOP & classes[name][2]))}"
                        for name in runtime_subclasses(classes) if LOOP & classes[name][2])
    assert not overriding, ("a Runtime subclass overrides the act loop; compose the backend instead (an executor "
                            "runs calls over it, Runtime.stepper() steps it for flow.debug):\n" + "\n".join(overriding))
