"""``make demo``: run the seed programs and write each stage's text, JSON and DOT dumps to build/demo/.

Each program runs in its own session, exactly as its user would write it with ``import flowlab as flow``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Tuple  # OneFlow programs write typing.Tuple

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from flowlab.ir import to_json

OUT = Path("build/demo")


def pad_program() -> None:
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    x = np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32)
    out = pad_Job(x)
    print(out)
    _check(out, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


def define_two_jobs() -> tuple[object, object]:
    """The seed's two-job program: zero_pad_Job (also building an unused reflection pad) and reflection_pad_Job."""

    @flow.global_function()
    def zero_pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            flow.reflection_pad2d(x, padding=1)
            return flow.zero_pad2d(x, padding=2)

    @flow.global_function()
    def reflection_pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.reflection_pad2d(x, padding=1)

    return zero_pad_Job, reflection_pad_Job


def two_job_program() -> None:
    zero_pad_Job, reflection_pad_Job = define_two_jobs()
    x = np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32)
    for _ in range(2):
        out = zero_pad_Job(x)
        print(out)
        _check(out, np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2))))
    out = reflection_pad_Job(x)
    print(out)
    _check(out, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


def tuple_program() -> None:
    @flow.global_function()
    def both_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> Tuple[tp.Numpy, tp.Numpy]:
        return flow.reflection_pad2d(x, padding=1), flow.zero_pad2d(x, padding=1)

    x = np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32)
    reflected, zeroed = both_Job(x)
    print(reflected[0, 0], zeroed[0, 0], sep="\n")
    _check(reflected, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))
    _check(zeroed, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))))


def callback_program() -> None:
    @flow.global_function()
    def pad_cb_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Callback[tp.Numpy]:
        return flow.reflection_pad2d(x, padding=1)

    x = np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32)
    order: list[int] = []
    for k in range(3):
        pad_cb_Job(x + k)(lambda out, k=k: (order.append(k), print(f"callback {k}: y[0,0,0] = {out[0, 0, 0]}")))
    flow.sync_default_session()
    assert order == [0, 1, 2], order


PROGRAMS = {"pad": pad_program, "two_jobs": two_job_program, "tuple": tuple_program, "callback": callback_program}


def _check(got: np.ndarray, want: np.ndarray) -> None:
    if not np.array_equal(got, want):
        raise SystemExit(f"wrong result:\n{got}\nexpected (numpy.pad):\n{want}")


def dump(session: flow.session.Session, directory: Path) -> list[Path]:
    """Every stage of one session: traced jobs, passes, the job set, the Plan (text, JSON, DOT)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "traced_jobs.txt": "\n\n".join(str(job) for job in session.traced_jobs.values()),
        "passes.txt": "\n".join(str(record) for record in session.passes),
        "job_set.txt": str(session.job_set),
        "plan.txt": str(session.plan),
        "job_set.json": to_json(session.job_set, indent=1),
        "plan.json": to_json(session.plan, indent=1),
    }
    from flowlab.viz import render_svg, to_dot

    files["job_set.dot"] = to_dot(session.job_set)
    files["plan.dot"] = to_dot(session.plan)
    files["job_set.svg"] = render_svg(files["job_set.dot"])
    files["plan.svg"] = render_svg(files["plan.dot"])
    written = []
    for name, text in files.items():
        (directory / name).write_text(text + "\n")
        written.append(directory / name)
    return written


def quickstart_html() -> list[Path]:
    """Execute notebooks/01_quickstart.ipynb headlessly; write it as HTML and the debugged run's HTML record."""
    import nbformat
    from nbclient import NotebookClient

    source = Path(__file__).resolve().parent.parent / "notebooks" / "01_quickstart.ipynb"
    if not source.is_file():  # an installed flowlab without the repository's notebooks
        return []
    nb = nbformat.read(source, as_version=4)
    # no widget state: with it, nbconvert's HTML loads the widget manager from unpkg and is blank offline; without
    # it, each widget shows its static SVG
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(OUT)}},
                   store_widget_state=False).execute()
    written = []
    try:
        from nbconvert import HTMLExporter

        body, _ = HTMLExporter().from_notebook_node(nb)
        (OUT / "quickstart.html").write_text(body, encoding="utf-8")
        written.append(OUT / "quickstart.html")
    except ImportError:
        nbformat.write(nb, OUT / "quickstart.ipynb")
        written.append(OUT / "quickstart.ipynb")
    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    dbg = flow.debug(pad_Job, np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32))
    dbg.continue_()
    written.append(dbg.export_html(OUT / "pad_Job_run.html"))
    dbg.export_trace(OUT / "pad_Job_trace.json")
    return written


def main() -> None:
    for name, program in PROGRAMS.items():
        print(f"=== {name} ===")
        flow.clear_default_session()
        program()
        session = flow.default_session()
        files = dump(session, OUT / name)
        print(f"compiled {len(session.job_set)} jobs into {len(session.plan.tasks)} tasks "
              f"in {session.compile_seconds * 1000:.1f} ms; wrote {len(files)} files to {OUT / name}/")
    flow.clear_default_session()
    print(f"\nall seed programs printed correct results; dumps are in {OUT.resolve()}")
    for path in quickstart_html():
        print(f"wrote {path.resolve()}")


if __name__ == "__main__":
    sys.exit(main())
