"""flow.debug.backend_diff(..., backends=("numba", "cuda")): the CPU Plan on Numba against the job traced on GPU 0
(Numba's CUDA simulator unless NUMBA_ENABLE_CUDASIM=0), checked against the two sessions run by hand."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import FlowlabError
from flowlab.kernels.numba_cuda import launch_config
from flowlab.runtime.variables import on_host

X = np.array([[0.3, 1.7, 2.9, 0.05], [4.1, 0.9, 3.3, 7.7]], np.float32)


@pytest.fixture(autouse=True)
def tiny_launches():
    with launch_config(threads=8, tile=4, tile_k=2, micro=2, max_blocks=4):
        yield


def define(gpu: bool):
    config = flow.FunctionConfig()
    if gpu:
        config.default_placement_scope(flow.scope.placement("gpu", "0:0"))

    @flow.global_function(function_config=config)
    def dense_job(x: tp.Numpy.Placeholder((2, 4))) -> tp.Numpy:
        y = flow.math.log(x) * 2.0
        init = flow.random_normal_initializer(stddev=0.5)
        return flow.layers.dense(y, 3, activation=flow.nn.relu, name="fc", kernel_initializer=init)

    return dense_job


def outputs(job, x) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every blob the job's own non-copy tasks write in one debugger call, by lbn; and each lbn's task label."""
    dbg = flow.debug(job, x)
    plan, out, where = dbg.plan, {}, {}
    tasks = {t.task_id: t for t in plan.tasks}
    while not dbg.finished:
        event = dbg.step()
        task = tasks[event.actor_id]
        if plan.job_names[task.job_id] != "dense_job" or task.task_type == "CopyHd":
            continue
        for regst, i in event.written:
            for lbn, a in dbg.runtime.regsts[regst][i].blobs.items():
                out[lbn] = np.array(on_host(a), copy=True)
                where[lbn] = f"t:{task.task_id}"
    return out, where


def test_numba_against_cuda_rows_are_a_direct_comparison_of_a_cpu_and_a_gpu_session():
    flow.clear_default_session()
    job = define(gpu=False)
    job(X)
    # values no initializer gives (a seeded initializer would give the GPU session the same ones): copied across
    flow.load_variables({"fc-weight": np.linspace(-1.1, 0.9, 12, dtype=np.float32).reshape(3, 4)})
    before = flow.get_all_variables()
    bd = flow.debug.backend_diff(job, X, backends=("numba", "cuda"))
    variables = flow.get_all_variables()
    assert all(np.array_equal(before[k], variables[k]) for k in before)  # copied out, never written back
    with flow.flags(kernels="numba"):
        cpu, where = outputs(job, X)
    flow.clear_default_session()
    gpu_job = define(gpu=True)
    flow.load_variables(variables)
    gpu, _ = outputs(gpu_job, X)
    assert {r.lbn for r in bd.rows} == set(cpu) == set(gpu)  # one job per session: the same op names
    for row in bd.rows:
        a, b = cpu[row.lbn].astype(np.float64), gpu[row.lbn].astype(np.float64)
        assert row.max_abs == float(np.abs(a - b).max()), row
        assert row.differing == int((a != b).sum()) and row.size == a.size
        assert row.node == where[row.lbn]
    ops = {r.lbn.split("/")[0] for r in bd.rows}
    assert {"fc-weight", "fc-bias"} <= ops and any(op.startswith("log") for op in ops)
    assert np.array_equal(bd.results[1], gpu[[r.lbn for r in bd.rows if r.lbn.startswith("Return")][0]])
    ov = bd.overlay()
    assert ov.values == {r.node: max(x.max_abs for x in bd.rows if x.node == r.node) for r in bd.rows}
    assert "numba vs cuda" in str(bd) and "numba − cuda" in ov.metric


def test_cuda_backends_without_cuda_name_the_simulator_switch(monkeypatch):
    import flowlab.kernels

    flow.clear_default_session()
    job = define(gpu=False)
    monkeypatch.setattr(flowlab.kernels, "cuda_available", lambda: False)
    with pytest.raises(FlowlabError, match="NUMBA_ENABLE_CUDASIM"):
        flow.debug.backend_diff(job, X, backends=("numba", "cuda"))
    with pytest.raises(ValueError, match="backends"):
        flow.debug.backend_diff(job, X, backends=("reference", "cuda"))
