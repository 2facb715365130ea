"""OneFlow's distribute ops on a GPU placement: each device's task is a copy on that GPU's stream (as a return's),
and on two GPUs the tasks sit on each GPU's compute thread."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp


def test_split_and_concat_on_a_gpu_give_numpys_values():
    flow.clear_default_session()

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0"):
            (piece,) = flow.advanced.distribute_split(x)
            (copy,) = flow.advanced.distribute_clone(flow.math.square(piece))
            return flow.advanced.distribute_concat([flow.advanced.distribute_add([copy])])

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(job(x), x * x)
    plan = flow.default_session().plan
    split_task = next(t for t in plan.tasks if t.name == "DistributeSplit_0")
    assert split_task.task_type == "DistributeSplit" and split_task.gpu_device == 0


def test_on_two_gpus_each_devices_task_runs_on_its_gpus_compute_thread(monkeypatch):
    """Plan only (the simulator has one device)."""
    from flowlab.compiler import check_plan, compile_jobs
    from flowlab.frontend import scope
    from flowlab.frontend.function import InterfaceCounter, trace

    flow.clear_default_session()
    monkeypatch.setattr(scope, "cuda_device_count", lambda: 2)
    flow.config.gpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0-1"):
            outs = []
            for i, piece in enumerate(flow.advanced.distribute_split(x)):
                with flow.scope.placement("gpu", f"0:{i}"):
                    outs.append(flow.math.square(piece))
            return flow.advanced.distribute_concat(outs)

    counter = InterfaceCounter()
    jobs = [trace(desc, counter)[0] for desc in flow.default_session().function_descs.values()]
    compiled = compile_jobs(jobs, 1, 2)
    check_plan(compiled.plan, compiled.job_set)
    tasks = [t for t in compiled.plan.tasks if t.name in ("DistributeSplit_0", "DistributeConcat_0")]
    assert len(tasks) == 4
    for t in tasks:
        assert t.gpu_device == t.parallel_id and t.thrd_id == t.gpu_device, t  # compute threads 0-1
