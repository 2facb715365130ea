"""The text/plain of a %%flowjob output is a bounded summary (a saved .ipynb carries it beside the payloads): the
jobs, their op counts, the Plan's size, the stages shown and how to print everything; the full prints stay
reachable from Python (``print(res)``, ``res.stage_text``)."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

from tests.helpers.deep_mlp import DEEP_MLP, DEEP_MLP_CALL

BOUND = 4096  # bytes of text/plain, whatever the model's size


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "flowlab")
    yield ip
    InteractiveShell.clear_instance()


def test_the_30_layer_jobs_text_is_a_bounded_summary_and_the_full_prints_stay(shell):
    result = shell.run_cell_magic("flowjob", "-o res", DEEP_MLP + "_ = " + DEEP_MLP_CALL)
    text = result._repr_mimebundle_()["text/plain"]
    assert len(text.encode()) <= BOUND, len(text.encode())
    job_set, plan = result.session.job_set, result.session.plan
    assert text.startswith(f"flowjob: {len(job_set)} jobs, {len(plan.tasks)} tasks, {len(plan.mem_blocks)} memory "
                           "blocks; calls: deep_train")
    for job in job_set:  # every job by kind, name and op count
        assert f"{job.kind:<9} {job.name}: {len(job.ops)} ops" in text, job.name
    assert f"plan: {len(plan.tasks)} tasks, {len(plan.regst_descs)} registers, {len(plan.mem_blocks)} memory blocks" \
        in text
    assert "shown: user, push, pull, model_io, main, plan" in text
    assert "print(res)" in text and 'print(res.stage_text("plan"))' in text  # named as the cell named it
    full = str(result)  # everything the old text/plain had, from Python
    assert len(full) > 50 * len(text) and "== plan ==" in full and "== passes ==" in full
    assert str(plan) in full and all(str(job) in full for job in job_set)


def test_an_unnamed_result_says_how_to_keep_it_and_an_error_comes_first(shell):
    cell = DEEP_MLP.replace("h = x\n", "h = x\n    flow.reflection_pad2d(x, padding=1)\n") + DEEP_MLP_CALL
    result = shell.run_cell_magic("flowjob", "--show user,plan", cell)
    text = result._repr_mimebundle_()["text/plain"]
    assert text.startswith("flowjob: error: OpInferError") and len(text.encode()) <= BOUND
    assert "%%flowjob -o res" in text and "print(res)" in text
    assert "shown: user, plan" in text


def test_many_jobs_are_listed_up_to_a_bound(shell, monkeypatch):
    from flowlab.notebook import result as result_module

    monkeypatch.setattr(result_module, "MAX_JOB_LINES", 2)  # a cell of many job functions, made small
    cell = ("import numpy as np\nimport flowlab as flow\nimport flowlab.typing as tp\n@flow.global_function()\n"
            "def j(x: tp.Numpy.Placeholder((2,))) -> tp.Numpy:\n    return flow.math.relu(x)\n"
            "j(np.ones(2, np.float32))\n")
    result = shell.run_cell_magic("flowjob", "-o many", cell)
    text = result._repr_mimebundle_()["text/plain"]
    jobs = list(result.session.job_set)
    assert len(jobs) > 2 and f"… and {len(jobs) - 2} more jobs (print(many.session.job_set))" in text
    assert f"{jobs[1].name}: " in text and f"{jobs[2].name}: " not in text
