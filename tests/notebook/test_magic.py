"""%%flowjob through an IPython shell (no kernel): stages, options, errors."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import flowlab as flow
from flowlab.viz.payload_pack import unpack
from tests.helpers.deep_mlp import DEEP_MLP, DEEP_MLP_CALL
from tests.helpers.magic_cells import CELL, JOBSET, PLAN


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "flowlab")
    yield ip
    InteractiveShell.clear_instance()


def test_flowjob_runs_the_cell_and_shows_every_stage(shell):
    result = shell.run_cell_magic("flowjob", "-o res", CELL)
    assert shell.user_ns["res"] is result
    np.testing.assert_array_equal(shell.user_ns["y"][0, 0, 0], [4, 3, 4, 5, 4])
    assert result.calls and result.calls[0][0] == "pad_Job"
    text = str(result)
    assert text.startswith("flowjob: 4 jobs, 18 tasks, 10 memory blocks; calls: pad_Job")
    for stage in ("== user ==", "== push ==", "== pull ==", "== main ==", "== plan ==", "== passes =="):
        assert stage in text
    bundle = result._repr_mimebundle_()
    assert set(bundle) == {JOBSET, PLAN, "image/svg+xml", "text/plain"}
    assert "<svg" in bundle["image/svg+xml"] and "pad_Job" in bundle["image/svg+xml"]
    assert (bundle[JOBSET]["flowlab_payload"], bundle[PLAN]["flowlab_payload"]) == (2, 2)  # stored packed
    jobs, plan = unpack(bundle[JOBSET]), unpack(bundle[PLAN])
    assert (jobs["flowlab_payload"], jobs["kind"], plan["kind"]) == (1, "jobset", "plan")
    assert plan["summary"]["tasks"] == 18 and len(jobs["graph"]["groups"]) >= 4
    json.dumps(bundle)  # what the notebook stores
    pad = next(n for n in jobs["graph"]["nodes"] if n["label"] == "reflection_pad2d_0")
    source = dict(map(tuple, jobs["graph"]["details"][pad["detail"]]["sections"][0]["rows"]))["source"]
    assert re.fullmatch(r"cell \[\d+\], line \d+", source)  # not IPython's made-up file name


def test_each_cell_gets_a_fresh_session(shell):
    first = shell.run_cell_magic("flowjob", "", CELL)
    second = shell.run_cell_magic("flowjob", "", CELL)  # re-running the same cell just works
    assert first.session is not second.session and second.error is None


def test_show_and_no_run(shell):
    result = shell.run_cell_magic("flowjob", "--show user,plan --no-run", CELL)
    assert "y" not in shell.user_ns or shell.user_ns["y"] is None
    assert result.compiled and result.session.runtime.actor("reflection_pad2d_0").act_id == 0
    text = str(result)
    assert "== user ==" in text and "== plan ==" in text and "== push ==" not in text


def test_debug_prepares_a_debugger_for_the_last_call(shell):
    result = shell.run_cell_magic("flowjob", "--debug -o res", CELL)
    dbg = result.debugger
    dbg.run_to("pad_Job/reflection_pad2d_0")
    dbg.step()
    np.testing.assert_array_equal(dbg.value("reflection_pad2d_0/y_0"), shell.user_ns["y"])


def test_bad_lines_are_usage_errors(shell):
    with pytest.raises(UsageError, match="unknown stage"):
        shell.run_cell_magic("flowjob", "--show users", CELL)
    with pytest.raises(UsageError):
        shell.run_cell_magic("flowjob", "--nope", CELL)
    with pytest.raises(UsageError, match="usage: %flowlab"):
        shell.run_line_magic("flowlab", "frobnicate")


def test_an_error_in_the_cell_shows_the_partial_result(shell):
    broken = ("padding=1)\n\n@flow.global_function()\ndef broken(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:\n"
              "    return flow.reflection_pad2d(x, padding=1)\n")
    bad = CELL.lstrip("\n").replace("padding=1)", broken)  # IPython drops leading blank lines before compiling
    result = shell.run_cell_magic("flowjob", "", bad)
    assert result.error is not None and "4-D NCHW" in str(result.error)
    import re

    lines = bad.splitlines()
    line = next(i for i, text in enumerate(lines) if text.startswith("def broken")) + 2  # its return, 1-based
    # as JupyterLab numbers the cell's lines: the %%flowjob line is line 1, so the body's line k is line k + 1
    assert re.search(rf"cell \[\d+\], line {line + 1}: op 'reflection_pad2d_\d+' \(reflection_pad2d\)",
                     str(result.error))
    assert result.summary().startswith("flowjob: error: OpInferError")
    assert "pad_Job" in str(result)  # traced before the failing job
    bundle = result._repr_mimebundle_()
    assert bundle["text/plain"].startswith("flowjob: error") and PLAN not in bundle  # nothing compiled
    assert any(n["label"] == "pad_Job (user)" for n in unpack(bundle[JOBSET])["graph"]["groups"])  # the traced jobs


def test_names_render_inert():
    from flowlab.notebook.result import FlowjobResult

    flow.clear_default_session()

    @flow.global_function()
    def job(x: flow.typing.Numpy.Placeholder((2,))) -> flow.typing.Numpy:
        return flow.math.relu(x, name='<script>alert("x")</script>&')

    job(np.ones(2, np.float32))
    bundle = FlowjobResult(flow.default_session())._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert "<script>" not in svg and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in svg
    labels = [n["label"] for n in unpack(bundle[JOBSET])["graph"]["nodes"]]
    assert '<script>alert("x")</script>&' in labels  # payload strings are data, left as they are


def test_two_outputs_never_share_ids(shell):
    svgs = [shell.run_cell_magic("flowjob", "", CELL)._repr_mimebundle_()["image/svg+xml"] for _ in range(2)]
    ids = [set(re.findall(r'\bid="([^"]+)"', svg)) for svg in svgs]
    assert len(ids[0]) > 10 and not ids[0] & ids[1]


def test_a_30_layer_train_job_returns_a_bounded_bundle_quickly(shell):
    cell = DEEP_MLP + DEEP_MLP_CALL
    shell.run_cell_magic("flowjob", "", cell)  # warms the kernel cache (Numba, imports)
    start = time.perf_counter()
    result = shell.run_cell_magic("flowjob", "", cell)
    result.interactive = True  # as in a live kernel: the widget too
    bundle = result._repr_mimebundle_()
    elapsed = time.perf_counter() - start
    assert result.error is None and bundle[PLAN]["summary"]["tasks"] == 754
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["image/svg+xml"].count('class="node') <= 60  # bounded: collapsed groups only
    assert elapsed < 9.0, elapsed  # the budget is 3 s on a warm kernel; generous for a loaded CI box


def test_in_a_kernel_the_output_is_the_widget(shell):
    result = shell.run_cell_magic("flowjob", "--debug", CELL)
    assert "application/vnd.jupyter.widget-view+json" not in result._repr_mimebundle_()  # no kernel here
    result.interactive = True
    bundle = result._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "image/svg+xml" in bundle
