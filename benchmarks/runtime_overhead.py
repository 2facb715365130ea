"""Runtime overhead per actor act in a normal run: (call time - kernel time) / acts. Targets: <= 2 us per act for
replayed calls (issue 3); <= 3 us per act by the protocol, the path the debugger steps through (issue 13).

Measured side by side in one process: a full pad_Job call, the same acts with the kernels timed alone, and a
plain Python loop making the same number of kernel calls (the floor any scheduler has to pay). Two modes:
steady-state calls replayed (the default: the flowlab.replay layer, kernels fused into generated segments) and every
act scheduled by the actor protocol (FLOWLAB_REPLAY=0, what the debugger steps through)."""

from __future__ import annotations

import os
import statistics
import time
from collections import defaultdict

import numpy as np
from _util import CPU, QUICK, median_time, table

import flowlab as flow
import flowlab.typing as tp
from flowlab.session import call_instances


def build_pad() -> tuple[object, np.ndarray]:
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return pad_Job, np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)


def build_chain(n: int) -> tuple[object, np.ndarray]:
    @flow.global_function()
    def chain_Job(x: tp.Numpy.Placeholder((4, 16))) -> tp.Numpy:
        y = x
        for _ in range(n):
            y = flow.math.relu(y * 0.5 + 1.0)
        return y

    return chain_Job, np.ones((4, 16), np.float32)


def stand_in(actor: object):
    """The actor's kernel, or for foreign I/O (which pops runtime buffers) the same copy it makes."""
    op_type = actor.task.exec_sequence[0].op_type
    if op_type == "foreign_input":
        return lambda ins, outs: np.copyto(outs[0], outs[0])
    if op_type == "foreign_output":
        return lambda ins, outs: ins[0].copy()
    if op_type == "callback_notify":
        return lambda ins, outs: int(ins[0][0])
    return actor.fn  # what an act calls


def measure(name: str, build: object, replay: bool) -> list[tuple[str, str]]:
    os.environ["FLOWLAB_REPLAY"] = "1" if replay else "0"  # read when the session attaches its layer
    name = f"{name}, {'replayed' if replay else 'protocol act by act'}"
    flow.clear_default_session()
    job, x = build()
    job(x)  # compile, start, and compile kernels
    runtime = flow.default_session().runtime
    before = runtime.seq
    job(x)
    acts = runtime.seq - before
    repeat, number = (3, 200) if QUICK else (9, 2000)
    for _ in range(20):  # past capture and fusion
        job(x)
    call = median_time(lambda: job(x), repeat, number)
    acting = [(stand_in(a), a.in_arrays, a.out_arrays) for a in runtime.actors.values()
              if a.kernel is not None and a.act_id > 0]

    def kernels_only() -> None:
        for kernel, ins, outs in acting:
            kernel(ins, outs)

    kernel_time = median_time(kernels_only, repeat, number)
    overhead = (call - kernel_time) / acts
    target = 2e-6 if replay else 3e-6
    rows = [
        (f"{name}: acts per call", f"{acts}"),
        (f"{name}: call (median)", f"{call * 1e6:.1f} us"),
        (f"{name}: kernels alone", f"{kernel_time * 1e6:.1f} us ({len(acting)} kernel calls)"),
        (f"{name}: overhead per act", f"{overhead * 1e6:.2f} us  (target <= {target * 1e6:.0f} us: ratio "
                                      f"{overhead / target:.2f}x)"),
    ]
    if not replay:
        rows += act_costs(name, job, x, call, 200 if QUICK else 2000)
    return rows


def act_costs(name: str, job: object, x: np.ndarray, call: float, calls: int) -> list[tuple[str, str]]:
    """Diagnostics: where a protocol call's time goes. The call's instances are launched as the session launches
    them and run by a copy of Runtime._run_to_idle that times each act (``Actor.act``, kernel included) alone;
    each task type's (a NormalForward's by its op type) act cost is the median of its acts, robust to an act
    that a busy machine preempted; a call's cost of a type is that times its acts per call. The rest of a call
    (the session's Python, launching, the loop itself) is the median call less those. Each timing's own clock
    read is subtracted; the timing still disturbs the acts a little, so read the split, not the total."""
    session = flow.default_session()
    runtime = session.runtime
    desc = session.function_descs[job.__name__]
    ns = time.thread_time_ns if CPU else time.perf_counter_ns
    spent: dict[str, list[int]] = defaultdict(list)
    label = {a: a.task.task_type if a.task.task_type != "NormalForward" else
             f"NormalForward {a.task.exec_sequence[0].op_type}" for a in runtime.actors.values()}
    ready, msgs = runtime.ready, runtime.msgs
    for _ in range(calls):
        for instance in call_instances(desc, [x]):
            runtime.launch(instance)
        while True:
            if msgs:
                runtime._drain()
            if not ready:
                break
            actor = ready.popleft()
            actor.queued = False
            start = ns()
            actor.act()
            spent[label[actor]].append(ns() - start)
            runtime._seq += 1
            if actor.is_ready():
                actor.queued = True
                ready.append(actor)
    start = ns()
    for _ in range(1000):
        ns()
    timer = (ns() - start) / 1000  # one clock read, which each act's figure includes once
    per_act = {key: statistics.median(times) - timer for key, times in spent.items()}
    per_call = {key: per_act[key] * len(spent[key]) / calls for key in spent}
    rows = [(f"{name}: acts by task type, per call", "acts  us/call  ns/act (median)")]
    for key in sorted(per_call, key=per_call.get, reverse=True):
        rows.append((f"  {key}", f"{len(spent[key]) / calls:4.0f}  {per_call[key] / 1e3:6.2f}  {per_act[key]:6.0f}"))
    acted = sum(per_call.values()) / 1e9
    rows.append((f"{name}: acts' sum / rest of a call (session, launch, loop)",
                 f"{acted * 1e6:.1f} us / {(call - acted) * 1e6:.1f} us"))
    return rows


def main() -> None:
    rows = []
    for replay in (False, True):
        rows += measure("pad_Job", build_pad, replay)
        rows += measure("50-op chain", lambda: build_chain(50 // 3), replay)
    os.environ.pop("FLOWLAB_REPLAY", None)
    clock = "CPU time of the calling thread" if CPU else "wall clock"
    table(f"runtime overhead per act (one scheduler thread, OPENBLAS_NUM_THREADS=1, medians, {clock})", rows)
    flow.clear_default_session()


if __name__ == "__main__":
    main()
