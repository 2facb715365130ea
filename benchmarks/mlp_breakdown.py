"""Where the fused MLP step's time goes (benchmarks/mlp_vs_torch.py prints it): the train call's fused segment
alone, the Python outside it within the same calls, each kernel of the segment in its order against the GEMM floor,
and the traffic bound of the others."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np
from _util import median_time

import flowlab as flow


def general_path(step: Callable[[], object]) -> object:
    """One call of ``step`` by the replay layer's general path: the session's generated call (replay/callgen.py)
    set aside for it."""
    executor = flow.default_session().executor  # a CallgenExecutor: its entries are the generated calls
    entries = dict(executor.entries)
    executor.entries.clear()
    try:
        return step()
    finally:
        executor.entries.update(entries)


def fused_segment_alone(step: Callable[[], object]) -> Callable[[], object] | None:
    """The default session's steady-state train call as its fused segment alone, on the arrays of its last call
    (None if the call was not fused): the Python of the call taken away, the kernels left."""
    from flowlab.replay.fused import Segment, wait_compiled

    wait_compiled()  # compiled in the background: until then the replay runs act by act (and segment.fn is None)

    layer = flow.default_session().runtime.layer
    segments = [step for schedule in layer.schedules.values() if "train_job" in schedule.key
                for step in schedule.fused or () if isinstance(step, Segment)]
    if len(segments) != 1:
        return None
    segment, args = segments[0], []
    fn = segment.fn

    def recording(*a: object) -> int:
        args.extend(a)
        return fn(*a)

    segment.fn = recording
    try:
        general_path(step)  # the generated call holds the segment's own function: the layer's replay calls .fn
    finally:
        segment.fn = fn
    return lambda: fn(*args)


def python_around(step: Callable[[], object], calls: int) -> tuple[float, float] | None:
    """Median time of one call of ``step`` outside its Numba segments, both measured in the same calls: the
    generated call's segment functions are timed from inside it (thread CPU time; a wrapper adds ~0.2 us a
    segment). Subtracting the segment timed alone in other rounds is off by more than the Python is at load.
    Then the same Python on hot caches: the calls again with each segment skipped (its function returns at once),
    so nothing evicts the interpreter's objects between calls. Returns (in the step, hot); None where the call is
    not one generated call. The skipped calls run no kernel: call this last on its session."""
    generated = flow.default_session().generated_calls.get("train_job")
    if generated is None:
        return None
    namespace, clock = generated.namespace, time.thread_time
    names = [n for n in namespace if n.startswith("segment") and n[len("segment"):].isdigit()]
    inside = [0.0]

    def timed(fn: Callable[..., int]) -> Callable[..., int]:
        def call(*args: object) -> int:
            start = clock()
            failed = fn(*args)
            inside[0] += clock() - start
            return failed

        return call

    def outside() -> float:
        times = []
        for _ in range(calls):
            inside[0] = 0.0
            start = clock()
            step()
            times.append(clock() - start - inside[0])
        return float(np.median(times))

    originals = {n: namespace[n] for n in names}
    try:
        namespace.update({n: timed(fn) for n, fn in originals.items()})
        in_step = outside()
        namespace.update({n: timed(lambda *args: -1) for n in originals})
        return in_step, outside()
    finally:
        namespace.update(originals)


def train_segment() -> object | None:
    """The default session's fused train segment, compiled (None if the train call was not fused into one)."""
    from flowlab.replay.fused import Segment, wait_compiled

    wait_compiled()  # a segment compiles on a background thread (until then the replay runs its acts)
    layer = flow.default_session().runtime.layer
    segments = [step for schedule in layer.schedules.values() if "train_job" in schedule.key
                for step in schedule.fused or () if isinstance(step, Segment)]
    return segments[0] if len(segments) == 1 else None


def gemm_flops(fn: object, args: list[object]) -> int:
    """2 m n k for a 2-D product kernel's call (a, b, out, ...), 0 for any other kernel."""
    from flowlab.kernels.numba_cpu import nn

    if fn not in nn.PRODUCT_KERNELS:
        return 0
    a, out = args[0], args[2]
    return 2 * out.size * a.shape[1]  # type: ignore[union-attr]


BIG_GEMM = 50e6  # FLOPs: the step's two mandatory 100x784x512 GEMMs have 80 M each, the others 1 M


def segment_breakdown(repeat: int) -> tuple[list[tuple[str, float, int, int]], float] | None:
    """Each kernel of the fused train step, called in the segment's order on its own register arrays (so each
    meets the caches its predecessors left, as inside the segment), timed by thread CPU time, median of
    ``repeat`` rounds, the timer's own cost taken off: (op, seconds, GEMM FLOPs, bytes it must read or write: its
    arrays once, an update op's variable and state twice, the diff (input 1) once), and the
    GEMM floor in the same clock: the big GEMMs on the same arrays, back to back. Valid at one BLAS thread only
    (the CPU time of the calling thread). The rounds are steps: they move the variables."""
    from flowlab.kernels.registry import Owned
    from flowlab.replay.combine import segment_calls
    from flowlab.replay.fused import fused_call_of

    segment = train_segment()
    if segment is None:
        return None
    calls = []
    run = [(step, actor, fused_call_of(actor, step)) for actor, step in zip(segment.actors, segment.steps)]
    for index, call in segment_calls(run):  # as the segment calls them: acts done in one pass are one call
        actor = segment.actors[index]
        name = actor.name if call is run[index][2] else f"{segment.actors[index - 1].name} + {actor.name}"
        # an External: an array like the pushed / pulled one; an Owned: the kernel's own buffer, passed as it is
        args = [a.array if isinstance(a, Owned) else getattr(a, "like", a) for a in call.args]
        arrays = {id(a): a for a in args if isinstance(a, np.ndarray)}
        nbytes = sum(a.nbytes for a in arrays.values())
        op_type = actor.task.exec_sequence[0].op_type if actor.task.exec_sequence else ""
        if op_type.endswith("_update"):  # OneFlow's update ops write their variable (and its state) in place
            nbytes += sum(a.nbytes for k, a in enumerate(actor.in_arrays) if k != 1 and a.shape == args[0].shape)
        calls.append((name, call.fn, args, gemm_flops(call.fn, args), nbytes))
    clock = time.thread_time
    overhead = float(np.median([-clock() + clock() for _ in range(1000)]))
    rounds, floor = np.zeros((repeat, len(calls))), []
    big = [(fn, args) for _, fn, args, flops, _ in calls if flops >= BIG_GEMM]
    for r in range(repeat):
        for i, (_, fn, args, _, _) in enumerate(calls):
            start = clock()
            fn(*args)
            rounds[r, i] = clock() - start - overhead
        start = clock()  # the floor on the same arrays: each big GEMM 3 times back to back
        for fn, args in big:
            fn(*args), fn(*args), fn(*args)
        floor.append((clock() - start) / 3)
    med = np.median(rounds, axis=0)
    return [(name, max(float(t), 0.0), flops, nbytes) for (name, _, _, flops, nbytes), t in zip(calls, med)], \
        float(np.median(floor))


@functools.cache
def copy_rate(nbytes: int) -> float:
    """Bytes moved per second (read + write) by a hot copy of ``nbytes`` (thread CPU time)."""
    a, b = np.ones(max(nbytes // 4, 16), np.float32), np.empty(max(nbytes // 4, 16), np.float32)
    np.copyto(b, a)
    t = min(median_time(lambda: np.copyto(b, a), 5, 10) for _ in range(3))
    return 2 * nbytes / t


def breakdown_rows(label: str, per_kernel: list[tuple[str, float, int, int]], t_floor: float,
                   python: tuple[float, float] | None = None, target: float = 1.15) -> list[tuple[str, str]]:
    """The step's kernels, biggest first (those over 0.5 % of the sum), the GEMMs against the floor and the
    others against the memory-traffic bound of their arrays: each kernel's bytes moved at the rate of a hot copy
    of that size measured here (a kernel's small arrays stay in L1 or L2: one copy rate for all, W1's, set a
    "bound" the step beat); with ``python`` (the call's time outside its segment, in the step and on hot
    caches: python_around), the bound of the whole call and whether ``target`` lies below it."""
    total = sum(t for _, t, _, _ in per_kernel)
    gemms = [k for k in per_kernel if k[2] >= BIG_GEMM]  # the two mandatory GEMMs (the small ones are "others")
    others = [k for k in per_kernel if k[2] < BIG_GEMM]
    t_gemms, t_others = sum(k[1] for k in gemms), sum(k[1] for k in others)
    traffic = sum(k[3] for k in others)
    t_traffic = sum(k[3] / copy_rate(max(k[3] // 2, 64)) for k in others)  # a copy of n bytes moves 2n
    rows = [(f"{label}: kernels of the fused step, one by one in its order (thread CPU time)",
             f"{total * 1e6:.0f} us: the 2 big GEMMs {t_gemms * 1e6:.0f} us, the other {len(others)} kernels "
             f"{t_others * 1e6:.0f} us")]
    for name, t, flops, nbytes in sorted(per_kernel, key=lambda k: -k[1]):
        if t < 0.005 * total:
            continue
        what = f"{flops / 1e6:.1f} MFLOP, {flops / t / 1e9:.0f} GFLOP/s" if flops else f"{nbytes / 1e6:.2f} MB"
        rows.append((f"  {name}", f"{t * 1e6:.1f} us  ({what})"))
    rows.append((f"{label}: the 2 big GEMMs in the step / alone back to back (the floor, same arrays)",
                 f"{t_gemms * 1e6:.0f} / {t_floor * 1e6:.0f} us = {t_gemms / t_floor:.2f}: what the caches the "
                 "other kernels leave cost them"))
    rows.append((f"{label}: kernels in the step / the GEMM floor", f"{total / t_floor:.2f}  (target <= 1.15)"))
    bound = (t_floor + t_traffic) / t_floor
    rows.append((f"{label}: bound: the floor + the others' arrays each read or written once at a hot copy's rate",
                 f"{traffic / 1e6:.1f} MB in {t_traffic * 1e6:.0f} us (each kernel's at its size's rate): "
                 f"step / floor >= {bound:.2f}; the others take {t_others / t_traffic:.1f}x that"))
    if python is not None:  # the generated call's Python around its one Numba call (replay/callgen.py)
        in_step, hot = python
        call_bound = bound + in_step / t_floor
        verdict = (f"the target {target} is below it: every op's output is a register of the protocol state "
                   "(the replay proof compares them), so each kernel must write its arrays; only dropping "
                   "registers from the replayed state (SGD folded into the weight-gradient GEMM, the push's copy "
                   "aliased) moves this bound, and flowlab keeps them (docs/performance.md, \"The step / GEMM "
                   "floor target\")"
                   if call_bound > target else f"the target {target} is above it")
        rows.append((f"{label}: bound of this design: the above + the call's Python outside its segment",
                     f"{in_step * 1e6:.0f} us: step / floor >= {call_bound:.2f}; {verdict}"))
        rows.append((f"{label}: the call's Python outside its segment, in the step / the same with the segment "
                     "skipped (hot caches)", f"{in_step * 1e6:.1f} / {hot * 1e6:.1f} us: the rest is cache "
                     "misses, the interpreter's objects evicted by the step's arrays"))
    return rows
