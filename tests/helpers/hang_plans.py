"""Purpose-built hanging Plans (issue 27 §4): the pad job's Plan edited into a register cycle, and an actor patched
never to return a register. Used by the runtime's hang tests and by the views that draw a hang."""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from flowlab.runtime import JobInstance, Runtime

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


def pad_plan():
    flow.clear_default_session()

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    pad_Job(X)
    return flow.default_session().plan


def call(out: list) -> list[JobInstance]:
    return [JobInstance("System-Push-Input_0", push_array=X), JobInstance("pad_Job"),
            JobInstance("System-Pull-Return_0", on_pull=out.append)]


def task(plan, job: str, name: str):
    job_id = plan.job_names.index(job)
    return next(t for t in plan.tasks if t.name == name and t.job_id == job_id)


def cycle_plan():
    """The pad job's plan with one edit: reflection_pad2d_0 also consumes Return_0's out_ctrl register, while
    Return_0 consumes reflection_pad2d_0's output: each waits for the other, a register cycle."""
    return cycle_of(pad_plan(), "pad_Job", "reflection_pad2d_0")


def cycle_of(plan, job: str, producer: str, ret_name: str = "Return_0"):
    """``plan`` with one edit: ``producer`` (whose output ``ret_name`` returns) also consumes ``ret_name``'s
    out_ctrl register: a register cycle of the two. Returns the edited plan and that register's id."""
    pad, ret = task(plan, job, producer), task(plan, job, ret_name)
    ctrl = ret.produced_regst_desc["out_ctrl"]
    new_ctrl = dataclasses.replace(ctrl, consumer_task_ids=(*ctrl.consumer_task_ids, pad.task_id))
    new_ret = dataclasses.replace(ret, produced_regst_desc={**ret.produced_regst_desc, "out_ctrl": new_ctrl})
    new_pad = dataclasses.replace(pad, consumed_regst_desc_id={**pad.consumed_regst_desc_id,
                                                                "in_ctrl": (ctrl.regst_desc_id,)})
    edited = {pad.task_id: new_pad, ret.task_id: new_ret}
    return dataclasses.replace(plan, tasks=tuple(edited.get(t.task_id, t) for t in plan.tasks)), ctrl.regst_desc_id


class _Sink:
    """Stands in for a producer in one consumer's in-edge: what that consumer gives back goes nowhere."""
    total_reading_cnt = 0
    state = "normal"
    queued = True


def leak(rt: Runtime, name: str, job: str) -> int:
    """Patch one actor so it takes its input register and never returns it to the producer."""
    actor = rt.actors[task(rt.plan, job, name).task_id]
    (rid, slot, _producer, _home, _ready), = actor.in_edges
    actor.in_edges = ((rid, slot, _Sink(), deque(), None),)
    return rid
