"""Parallel run mode (flowlab/runtime/threads.py, issue 11): one OS thread per Plan thread id.

1. Per-act overhead of the protocol act by act (FLOWLAB_REPLAY=0), one scheduler thread (FLOWLAB_THREADS=0) vs
   one OS thread per Plan thread (FLOWLAB_THREADS=1), on tiny kernels: what a hand-off between threads costs.
   Wall clock per call and the process's CPU time (all threads) per call.
2. Two compute threads today: two jobs, one per CPU device (matmul chains over their own variables), launched
   together, so the reentrant lock grants their disjoint sections at once: one thread vs a thread per Plan thread.
   (Within one job today's Plans order all compute along one chain, so two devices of one job take turns.)
3. The issue's target: a data-parallel MLP 784-512-10, global batch 200, on 2 CPU devices vs 1 (>= 1.6x), and
   compile time and task count for 1, 2 and 4 devices; interleaved rounds (a fresh session each), medians. And the
   bound: each device's act CPU time per step (stepped one act at a time, so kernels plus the act protocol), split
   into compute, boxing and optimizer updates: on 2 cores the best ratio is t1 / max(t2 per device).

BLAS runs one thread (OPENBLAS_NUM_THREADS=1, set by _util before NumPy loads): one core per device thread.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np
from _util import QUICK, median_time, table

import flowlab as flow
import flowlab.typing as tp

os.environ.setdefault("FLOWLAB_FUSE_BACKGROUND", "0")  # a background compile would take a core from the timing


def fresh(threads: str, replay: str = "1") -> None:
    os.environ["FLOWLAB_THREADS"], os.environ["FLOWLAB_REPLAY"] = threads, replay
    flow.clear_default_session()


def timed(job: Callable[[], object], repeat: int, number: int) -> tuple[float, float]:
    """(median wall seconds per call, process CPU seconds per call over all rounds)."""
    cpu = time.process_time()
    wall = median_time(job, repeat, number)
    return wall, (time.process_time() - cpu) / (repeat * number)


# -- 1. per-act overhead ---------------------------------------------------------------------------------
def pad_job() -> Callable[[], object]:
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    x = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
    return lambda: pad_Job(x)


def chain_job(n: int = 16) -> Callable[[], object]:
    @flow.global_function()
    def chain_Job(x: tp.Numpy.Placeholder((4, 16))) -> tp.Numpy:
        y = x
        for _ in range(n):
            y = flow.math.relu(y * 0.5 + 1.0)
        return y

    x = np.ones((4, 16), np.float32)
    return lambda: chain_Job(x)


def overhead_rows() -> list[tuple[str, str]]:
    rows = []
    repeat, number = (3, 50) if QUICK else (7, 300)
    for name, build in (("pad_Job", pad_job), ("50-op chain", chain_job)):
        for threads, label in (("0", "one scheduler thread"), ("1", "a thread per Plan thread")):
            fresh(threads, replay="0")
            call = build()
            call()
            rt = flow.default_session().runtime
            before = rt.seq
            call()
            acts = rt.seq - before
            for _ in range(20):
                call()
            wall, cpu = timed(call, repeat, number)
            n_threads = len(rt.threads.loops) if rt.threads is not None else 1
            rows.append((f"{name}, {label} ({n_threads} OS threads): per act",
                         f"{wall / acts * 1e6:6.2f} us wall, {cpu / acts * 1e6:6.2f} us CPU  ({acts} acts a call)"))
    return rows


# -- 2. two jobs on two device threads -----------------------------------------------------------------
def two_jobs(size: int = 384, depth: int = 6) -> None:
    """Two predict jobs, one on each CPU device, each a chain of ``depth`` size x size matmuls over its own
    variables: their critical sections are disjoint, so the lock grants both at once."""
    flow.config.cpu_device_num(2)

    def body(device: int) -> object:
        with flow.scope.placement("cpu", f"0:{device}"):
            init = flow.random_uniform_initializer(-0.05, 0.05)
            w = flow.get_variable(f"w{device}", shape=(size, size), initializer=init)
            y = flow.get_variable(f"x{device}", shape=(size, size), initializer=init)
            for _ in range(depth):
                y = flow.math.tanh(flow.matmul(y, w))
            return y

    @flow.global_function()
    def job0() -> tp.Numpy:
        return body(0)

    @flow.global_function()
    def job1() -> tp.Numpy:
        return body(1)

    job0()  # compile, start, initialize the variables


def two_job_rows() -> list[tuple[str, str]]:
    from flowlab.runtime import JobInstance

    repeat, number = (3, 3) if QUICK else (7, 10)
    times = {}
    for threads in ("0", ""):
        fresh(threads)
        two_jobs()
        rt = flow.default_session().runtime

        def both(rt: object = rt) -> None:
            rt.run_protocol([JobInstance("job0"), JobInstance("job1")])  # type: ignore[attr-defined]

        for _ in range(3):
            both()
        mode = f"a thread per Plan thread ({len(rt.threads.loops)})" if rt.threads is not None else "one thread"
        times[threads] = (timed(both, repeat, number), mode)
    (w1, c1), m1 = times["0"]
    (w2, c2), m2 = times[""]
    return [
        (f"job0 + job1 launched together, {m1}", f"{w1 * 1e3:.2f} ms wall, {c1 * 1e3:.2f} ms CPU"),
        (f"job0 + job1 launched together, {m2}", f"{w2 * 1e3:.2f} ms wall, {c2 * 1e3:.2f} ms CPU"),
        ("two jobs on two devices: throughput, parallel / one thread", f"{w1 / w2:.2f}x (at most 2x on 2 cores)"),
    ]


# -- 3. data parallel ------------------------------------------------------------------------------------
def data_parallel(devices: int, batch: int = 200) -> Callable[[], object]:
    flow.config.cpu_device_num(devices)
    placement = "0:0" if devices == 1 else f"0:0-{devices - 1}"

    @flow.global_function(type="train")
    def mlp_job(x: tp.Numpy.Placeholder((batch, 784)),
                y: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", placement):
            init = flow.truncated_normal(0.1)
            hidden = flow.layers.dense(x, 512, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
            logits = flow.layers.dense(hidden, 10, kernel_initializer=init, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)

    def call() -> object:
        return mlp_job(x, y)

    call.job, call.args = mlp_job, (x, y)  # type: ignore[attr-defined]  # for kernel_cpu_by_device's debugger
    return call


OPTIMIZER_OPS = ("momentum_update", "sgd_update", "adam_update")


def kernel_cpu_by_device(call: Callable[[], object], steps: int = 3) -> dict[str, dict[str, float]]:
    """Per device, the thread CPU seconds per step of its acts (kernel plus the act protocol, one act at a time
    through the debugger, statistics off), split into compute, boxing and optimizer updates."""
    job, args = call.job, call.args  # type: ignore[attr-defined]
    out: dict[str, dict[str, float]] = {}
    for _ in range(steps):
        dbg = flow.debug(job, *args)
        dbg.record_stats = False
        while not dbg.finished:
            t0 = time.thread_time()
            event = dbg.step()
            spent = time.thread_time() - t0
            task = dbg.runtime.actors[event.actor_id].task
            if not task.exec_sequence:
                continue
            op = task.exec_sequence[0]
            devices = op.parallel_conf.devices
            device = devices[task.parallel_id] if task.parallel_id < len(devices) else devices[0]
            kind = "boxing" if task.is_boxing else "optimizer" if op.op_type in OPTIMIZER_OPS else "compute"
            per = out.setdefault(f"device {device[1]}", {"compute": 0.0, "boxing": 0.0, "optimizer": 0.0})
            per[kind] += spent / steps
    return out


def data_parallel_rows() -> list[tuple[str, str]]:
    rows = []
    calls: dict[int, Callable[[], object]] = {}
    bound: dict[int, dict[str, dict[str, float]]] = {}
    for devices in (1, 2, 4):
        fresh("")
        call = data_parallel(devices)
        start = time.perf_counter()
        call()
        session = flow.default_session()
        rows.append((f"data-parallel MLP on {devices} devices: first call / compile / tasks",
                     f"{(time.perf_counter() - start) * 1e3:.0f} ms / {session.compile_seconds * 1e3:.0f} ms / "
                     f"{len(session.plan.tasks)} tasks"))
        if devices <= 2:
            bound[devices] = kernel_cpu_by_device(call)
    # interleaved rounds: a fresh session per round (compile and warm-up untimed), 1 and 2 devices alternating,
    # so a load change on the shared machine hits both
    rounds: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(2 if QUICK else 5):
        for devices in (1, 2):
            fresh("")
            call = calls[devices] = data_parallel(devices)
            for _ in range(5):
                call()
            rounds[devices].append(timed(call, 1, 5 if QUICK else 10)[0])
    wall = {d: float(np.median(r)) for d, r in rounds.items()}
    for devices in (1, 2):
        rows.append((f"data-parallel MLP on {devices} devices: step (median of {len(rounds[devices])} rounds)",
                     f"{wall[devices] * 1e3:.2f} ms wall"))
    rows.append(("data-parallel MLP 784-512-10, batch 200: throughput 2 devices / 1",
                 f"{wall[1] / wall[2]:.2f}x (target >= 1.6x)"))
    t1 = sum(bound[1]["device 0"].values())
    per_dev = {dev: sum(parts.values()) for dev, parts in bound[2].items()}
    for devices in (1, 2):
        for dev, parts in sorted(bound[devices].items()):
            rows.append((f"act CPU per step, {devices} device(s), {dev}",
                         f"{sum(parts.values()) * 1e3:.2f} ms = " + " + ".join(
                             f"{kind} {v * 1e3:.2f}" for kind, v in parts.items())))
    rows.append(("bound on 2 cores: t1 / max(t2 per device)", f"{t1 / max(per_dev.values()):.2f}x"))
    return rows


def main() -> None:
    clock = f"medians, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, {os.cpu_count()} cores"
    table(f"parallel run mode: per-act overhead, protocol act by act ({clock})", overhead_rows())
    table("two compute threads today: two jobs, one per CPU device, disjoint critical sections", two_job_rows())
    table("data parallel: MLP 784-512-10, global batch 200", data_parallel_rows())
    for name in ("FLOWLAB_THREADS", "FLOWLAB_REPLAY"):
        os.environ.pop(name, None)
    flow.clear_default_session()


if __name__ == "__main__":
    main()
