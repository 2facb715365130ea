"""Tests are laid out like the code, and a test module is never a library: what several test files share lives in
tests/helpers/ (or a folder's own non-test helper module, such as tests/ops/helpers.py), never in a ``test_*.py``
module or a conftest that another file imports. Importing a test module runs its module-level setup a second
time, ties the two files' fates together (a moved or deleted test breaks an unrelated one), and hides what is
shared."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.imports import Edge, import_edges

TESTS = Path(__file__).resolve().parents[1]


def _is_test_module(name: str) -> bool:
    last = name.rpartition(".")[2]
    return last.startswith("test_") or last == "conftest"


def imports_of_test_modules(edges: list[Edge]) -> list[str]:
    return [f"{e.importer.replace('.', '/')}.py:{e.line} imports {e.imported}" for e in edges
            if _is_test_module(e.imported) and e.imported != e.importer]


def test_no_file_imports_a_test_module() -> None:
    found = imports_of_test_modules(import_edges(TESTS))
    assert not found, "move what these share into tests/helpers/:\n" + "\n".join(found)


def test_the_check_sees_an_import_of_a_test_module() -> None:
    edges = [Edge("tests.ops.test_dot_gemm", "tests.ops.test_small_matmul", 12, False, True),
             Edge("tests.ops.test_winograd", "tests.ops.helpers", 20, False, True),
             Edge("tests.cuda.conftest", "tests.cuda.test_ptx", 23, True, True)]
    assert imports_of_test_modules(edges) == ["tests/ops/test_dot_gemm.py:12 imports tests.ops.test_small_matmul",
                                              "tests/cuda/conftest.py:23 imports tests.cuda.test_ptx"]
