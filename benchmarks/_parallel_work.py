"""The data-parallel benchmark's measures of work (benchmarks/parallel_runtime.py): every kernel of a step timed
alone through the protocol, per Plan thread, and the step's big GEMMs with BLAS alone at half and full batch."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

OPTIMIZER_OPS = ("momentum_update", "sgd_update", "adam_update")


def serial_work(call: Callable[[], object], calls: int = 5) -> dict[int, dict[str, float]]:
    """Per Plan thread, the thread CPU of its kernels per step (compute, boxing, optimizer updates), each kernel
    timed alone: the calls run through the protocol on one thread (fresh("0", replay="0") before building
    ``call``), so no other kernel runs beside it. Medians over ``calls`` calls."""
    import flowlab as flow  # here: parallel_runtime imports _util (which sets FLOWLAB_KERNELS) before flowlab

    rt = flow.default_session().runtime
    spent: dict[int, list[float]] = {}

    def timed_kernel(kernel: Callable[..., None], task_id: int) -> Callable[..., None]:
        def run(ins: object, outs: object) -> None:
            start = time.thread_time()
            kernel(ins, outs)
            spent[task_id][-1] += time.thread_time() - start
        return run

    for actor in rt.actors.values():
        if actor.kernel is not None:
            spent[actor.task.task_id] = []
            actor.kernel = actor.kernel.wrap(timed_kernel(actor.fn, actor.task.task_id))
    for _ in range(calls):
        for times in spent.values():
            times.append(0.0)
        call()
    work: dict[int, dict[str, float]] = {}
    for task_id, times in spent.items():
        task = rt.actors[task_id].task
        kind = ("boxing" if task.is_boxing else "optimizer" if task.exec_sequence
                and task.exec_sequence[0].op_type in OPTIMIZER_OPS else "compute")
        lane = work.setdefault(task.thrd_id, {"compute": 0.0, "boxing": 0.0, "optimizer": 0.0})
        lane[kind] += float(np.median(times))
    return work


def half_batch_gemms(rounds: int = 15, number: int = 5) -> list[tuple[str, str]]:
    """The step's two big GEMMs (BLAS, one thread, thread CPU, interleaved medians): two half-batch calls against
    one full-batch call, the floor of what splitting the batch costs; and the layouts a kernel could use for the
    half-batch calls (the forward with the weight transposed contiguous, as a transposing all-gather could give it;
    the K=100 weight gradient with dh transposed contiguous first, copy included)."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((512, 784)).astype(np.float32)
    wt = np.ascontiguousarray(w.T)
    calls: dict[str, Callable[[], object]] = {}
    for m in (100, 200):
        x = rng.standard_normal((m, 784)).astype(np.float32)
        dh = rng.standard_normal((m, 512)).astype(np.float32)
        h, g = np.empty((m, 512), np.float32), np.empty((512, 784), np.float32)
        calls[f"forward x.W^T, batch {m}"] = lambda x=x, h=h: np.dot(x, w.T, out=h)
        calls[f"weight gradient dh^T.x, batch {m}"] = lambda x=x, dh=dh, g=g: np.dot(dh.T, x, out=g)
        if m == 100:
            calls["forward x.(W^T contiguous), batch 100"] = lambda x=x, h=h: np.dot(x, wt, out=h)
            calls["weight gradient (dh^T copied).x, batch 100"] = (
                lambda x=x, dh=dh, g=g: np.dot(np.ascontiguousarray(dh.T), x, out=g))
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, fn in calls.items():
            fn()
            start = time.thread_time()
            for _ in range(number):
                fn()
            times[name].append((time.thread_time() - start) / number)
    t = {name: float(np.median(v)) for name, v in times.items()}
    rows = []
    for what in ("forward x.W^T", "weight gradient dh^T.x"):
        half, full = t[f"{what}, batch 100"], t[f"{what}, batch 200"]
        rows.append((f"{what}: 2 x batch 100 / 1 x batch 200 (BLAS alone)",
                     f"{2 * half / full:.2f}x ({half * 1e3:.2f} vs {full * 1e3:.2f} ms)"))
    for name, base in (("forward x.(W^T contiguous), batch 100", "forward x.W^T, batch 100"),
                       ("weight gradient (dh^T copied).x, batch 100", "weight gradient dh^T.x, batch 100")):
        rows.append((f"layout: {name} / as the kernel calls it", f"{t[name] / t[base]:.2f}x"))
    return rows


def median_work(runs: list[dict[int, dict[str, float]]]) -> dict[int, dict[str, float]]:
    return {thrd: {kind: float(np.median([r.get(thrd, {}).get(kind, 0.0) for r in runs])) for kind in kinds}
            for thrd, kinds in runs[0].items()}


def work_text(work: dict[int, dict[str, float]]) -> str:
    total = sum(sum(kinds.values()) for kinds in work.values())
    parts = [f"thread {thrd}: {sum(kinds.values()) * 1e3:.2f} ms = " + " + ".join(
        f"{kind} {v * 1e3:.2f}" for kind, v in kinds.items()) for thrd, kinds in sorted(work.items())
        if sum(kinds.values()) > 0.05 * total]
    return f"{total * 1e3:.2f} ms in all; " + "; ".join(parts)


def lane_budget(per_lane: list[float], work: dict[int, dict[str, float]], one: dict[int, dict[str, float]],
                t1: float, target: float = 1.6) -> list[tuple[str, str]]:
    """Why the lanes miss ``target``, measured: each lane may spend t1 / target (t1: the 1-device step's CPU);
    what each spends (its OS thread's CPU in the threaded run), as its half of the 1-device kernels (``one``:
    each kernel timed alone), its own kernels beyond that (timed alone: compute, boxing, optimizer), and what
    it spends beside them (its Python and hand-offs, and its kernels slowed by the other lane running beside
    them: memory traffic). Lane k is the k-th compute thread; lane 0 also runs the other threads' steps."""
    kinds = ("compute", "boxing", "optimizer")
    whole = {kind: sum(t.get(kind, 0.0) for t in one.values()) for kind in kinds}
    compute_threads = sorted(thrd for thrd, t in work.items() if t.get("compute", 0.0) > 0.05 * sum(whole.values()))
    n = len(per_lane)
    rows = []
    for k, spent in enumerate(per_lane):
        mine = [compute_threads[k]] if k else [t for t in work if t not in compute_threads[1:n]]
        own = {kind: sum(work[t].get(kind, 0.0) for t in mine) for kind in kinds}
        beyond = {kind: own[kind] - whole[kind] / n for kind in kinds}
        kernels = sum(own.values())
        rows.append((f"lane {k}", f"{spent * 1e3:.2f} ms = 1-device kernels / {n} {sum(whole.values()) / n * 1e3:.2f} "
                     f"+ its kernels beyond that {sum(beyond.values()) * 1e3:+.2f} ("
                     + ", ".join(f"{kind} {v * 1e3:+.2f}" for kind, v in beyond.items())
                     + f") + beside its kernels {(spent - kernels) * 1e3:+.2f} (Python, hand-offs, kernels slowed "
                     f"beside the other lane); budget for {target}x: {t1 / target * 1e3:.2f} ms"))
    return rows
