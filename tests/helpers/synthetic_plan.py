"""A synthetic Plan for the payload and view tests."""

from __future__ import annotations


def synthetic_plan(n: int):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "plan_svg.py"
    spec = importlib.util.spec_from_file_location("plan_svg_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic_plan(n, n_jobs=8, n_threads=4)
