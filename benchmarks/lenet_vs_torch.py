"""One SGD train step of OneFlow's docs LeNet through flowlab's full runtime against torch eager, at one thread,
measured side by side in one process, alternating whole rounds (as mlp_vs_torch.py). Target (issue 13):
batch 100, 1 thread: flowlab / torch <= 0.80.

The model is the one of OneFlow's "Recognition of MNIST handwritten digits" docs program (lenet_train.py):
conv2d 5x5, 32 filters, SAME, relu; max_pool2d 2x2 stride 2 SAME; conv2d 5x5, 64 filters, SAME, relu; max_pool2d;
reshape; dense 512 relu; dense 10; sparse softmax cross entropy; SGD lr 0.1, no momentum; 28x28x1 images. The
docs' dropout after dense1 is left out: torch could not draw the same mask, and it costs no GEMM.

Before timing, one flowlab step is checked against torch's (same initial values, same batch): the loss and every
updated variable, to rtol 1e-4. Printed beside the ratio:
- the floor: the step's GEMM FLOPs (convolutions as im2col GEMMs, their data and filter gradients, the dense
  layers) at the single-thread SGEMM rate measured in this run on conv-shaped GEMMs (the fastest of scipy's and
  numpy's OpenBLAS, whole-batch and per-sample shapes), and the bound it sets: what 0.80 x torch's step leaves for
  everything but the GEMMs, beside what flowlab's and torch's steps spend beyond the floor;
- a per-op breakdown of flowlab's step: each kernel of the train job timed alone on its own register arrays (thread
  CPU time), the GEMM ones (convolutions, their gradients, dense) with their FLOPs, FLOP rate and time at the
  SGEMM rate, so the distance of each kernel from its own floor shows;
- the conv kernels that run Winograd's algorithm (kernels/numba_cpu/winograd.py) with their multiplications
  against im2col's, and the floor recomputed with the FLOPs the chosen algorithms do (Winograd's GEMMs in place of
  those kernels' im2col GEMMs; its transforms are not counted, as im2col's copies are not).
"""

from __future__ import annotations

import os
import sys

if "--isa" in sys.argv:  # --isa avx2: the run happens in a subprocess restricted to AVX2 (benchmarks/_isa.py)
    from _isa import rerun_restricted

    rerun_restricted()

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy/numba load BLAS

import time

import numpy as np
from _util import CPU, QUICK, cpu_description, median_time, table

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels.numba_cpu._numba import njit
from flowlab.kernels.numba_cpu.blas import blas_ready, gemm
from flowlab.kernels.numba_cpu.nn import _dot

PARK = 0.3  # see mlp_vs_torch.py: each timed block starts after a pause
LR = 0.1


def set_one_thread() -> None:
    """One BLAS thread (the process starts with OPENBLAS_NUM_THREADS=1 from `make bench` when threadpoolctl is
    missing) and one torch thread."""
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
    except ImportError:
        pass
    import torch

    torch.set_num_threads(1)


def torch_installed() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def flowlab_only(batch: int, x: np.ndarray, y: np.ndarray) -> None:
    """Without torch (the test extra has none): flowlab's step, the GEMM floor and the kernels, no ratio."""
    train_job = flowlab_job(batch)
    for _ in range(3 if QUICK else 12):  # past capture and fusion
        train_job(x, y)
    step = median_time(lambda: train_job(x, y), 3 if QUICK else 9, 2 if QUICK else 5)
    flops = sum(2 * count * m * k * n for count, m, k, n in step_gemms(batch))
    rate = gemm_rate()
    per_op = breakdown(1 if QUICK else 5)
    rows = [(f"LeNet batch {batch}, 1 thread: flowlab step", f"{step * 1e3:.1f} ms (torch not installed: pip "
                                                              "install 'flowlab[bench]' for the ratio)"),
            (f"GEMM floor: {flops / 1e9:.2f} GFLOP at {rate / 1e9:.0f} GFLOP/s", f"{flops / rate * 1e3:.1f} ms"),
            *breakdown_rows(per_op, rate)]
    rows += winograd_rows(per_op, rate, flops, None)[0]
    rows += [(f"  chain {names}", f"{a * 1e3:.2f} ms one by one, {b * 1e3:.2f} ms chained")
             for names, a, b in chain_times(1)]
    table("LeNet SGD train step through the full runtime (1 thread)", rows)
    flow.clear_default_session()


def lenet(data):
    initializer = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(data, 32, 5, padding="SAME", activation=flow.nn.relu, name="conv1",
                               kernel_initializer=initializer)
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1", data_format="NCHW")
    conv2 = flow.layers.conv2d(pool1, 64, 5, padding="SAME", activation=flow.nn.relu, name="conv2",
                               kernel_initializer=initializer)
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2", data_format="NCHW")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer, name="dense1")
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="dense2")


def batch_data(batch: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((batch, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, batch).astype(np.int32)


def flowlab_job(batch: int):
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((batch, 1, 28, 28)),
                  labels: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, lenet(images), name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=0).minimize(loss)
        return loss

    return train_job


# flowlab variable -> torch parameter (same layouts: conv (O, I, kh, kw), dense (out, in))
NAMES = {"conv1-weight": "0.weight", "conv1-bias": "0.bias", "conv2-weight": "3.weight", "conv2-bias": "3.bias",
         "dense1-weight": "7.weight", "dense1-bias": "7.bias", "dense2-weight": "9.weight", "dense2-bias": "9.bias"}


def torch_model(init: dict[str, np.ndarray]):
    import torch

    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2, 2),
        torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2, 2),
        torch.nn.Flatten(), torch.nn.Linear(3136, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for ours, theirs in NAMES.items():
            params[theirs].copy_(torch.from_numpy(init[ours]))
    return model, params


def torch_step(model, x: np.ndarray, y: np.ndarray):
    import torch

    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0)
    # flowlab's loss is per example; minimizing it descends their mean (checked by check_equal)
    loss_fn = torch.nn.CrossEntropyLoss()
    tx, ty = torch.from_numpy(x), torch.from_numpy(y).long()

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(tx), ty)
        loss.backward()
        optimizer.step()
        return loss

    return step


def check_equal(train_job, x: np.ndarray, y: np.ndarray) -> str:
    """One flowlab step against one torch step from the same values: the loss and every updated variable."""
    init = flow.get_all_variables()
    model, params = torch_model(init)
    loss = float(train_job(x, y).mean())
    t_loss = float(torch_step(model, x, y)().item())
    np.testing.assert_allclose(loss, t_loss, rtol=1e-4)
    after = flow.get_all_variables()
    worst = 0.0
    for ours, theirs in NAMES.items():
        want = params[theirs].detach().numpy()
        np.testing.assert_allclose(after[ours], want, rtol=1e-4, atol=1e-5, err_msg=ours)
        worst = max(worst, float(np.max(np.abs(after[ours] - want))))
    return f"loss {loss:.4f} = torch {t_loss:.4f}; updated variables within {worst:.1e}"


def step_gemms(batch: int) -> list[tuple[int, int, int, int]]:
    """(count, m, k, n) of each GEMM a LeNet step runs as im2col + GEMM: forward, data and filter gradients."""
    p1, p2 = 28 * 28, 14 * 14
    return [
        (2, 32, 25, batch * p1),          # conv1 forward; its filter gradient (no data gradient: the input)
        (3, 64, 32 * 25, batch * p2),     # conv2 forward, data gradient, filter gradient
        (3, batch, 3136, 512),            # dense1 forward, data and weight gradients
        (3, batch, 512, 10),              # dense2
    ]


def gemm_rate() -> float:
    """Single-thread SGEMM FLOP/s here on conv2's GEMM: as one im2col GEMM over the batch (64 x 800 x 19600) via
    Numba's np.dot (scipy's OpenBLAS) and numpy's matmul (numpy's OpenBLAS), and per sample (64 x 800 x 196, 100
    calls) via the conv kernels' own gemm (blas.py); the fastest of the three, so the floor is the lowest."""
    rng = np.random.default_rng(0)
    a = rng.random((64, 800), dtype=np.float32)
    b = rng.random((800, 19600), dtype=np.float32)
    c = np.empty((64, 19600), np.float32)
    _dot(a, b, c)
    blas_ready()
    _per_sample_gemms(a.reshape(-1), b.reshape(-1), c.reshape(-1))
    flops = 2 * 64 * 800 * 19600
    numba = median_time(lambda: _dot(a, b, c), 3 if QUICK else 5)
    time.sleep(PARK)
    numpy = median_time(lambda: np.matmul(a, b, out=c), 3 if QUICK else 5)
    time.sleep(PARK)
    kernel = median_time(lambda: _per_sample_gemms(a.reshape(-1), b.reshape(-1), c.reshape(-1)), 3 if QUICK else 5)
    return flops / min(numba, numpy, kernel)


@njit
def _per_sample_gemms(a, b, c):
    """conv2's forward GEMMs as its kernel runs them: one (64 x 800) @ (800 x 196) per sample of 100 (the samples'
    columns read from one 800 x 19600 buffer, so they are not all in cache)."""
    for s in range(100):
        gemm(False, False, 64, 196, 800, a, 0, 800, b, s * 196, 19600, 0.0, c, s * 196, 19600)


def kernel_flops(op_type: str, ins: list[np.ndarray], outs: list[np.ndarray]) -> int:
    """The GEMM FLOPs of one act of a conv or matmul kernel (0 for the others): per output (conv2d), per dy value
    (its gradients) or per product element (matmul), 2 x the reduction length."""
    if op_type == "conv2d":
        return 2 * outs[0].size * (ins[1].size // ins[1].shape[0])
    if op_type in ("conv2d_data_grad", "conv2d_filter_grad"):
        w = ins[1] if op_type == "conv2d_data_grad" else outs[0]
        return 2 * ins[0].size * (w.size // w.shape[0])
    if op_type == "matmul" and outs[0].ndim == 2:
        return 2 * outs[0].size * round((ins[0].size * ins[1].size / outs[0].size) ** 0.5)
    return 0


def breakdown(number: int) -> list[tuple[str, float, int]]:
    """Each kernel of the train job timed alone on its register arrays, in thread CPU time (the kernel runs on the
    calling thread; a loaded box does not inflate it as it does wall time), with its GEMM FLOPs (after the timed
    rounds: the in-place optimizer kernels move the variables)."""
    runtime = flow.default_session().runtime
    times = []
    for actor in runtime.actors.values():
        if actor.kernel is None or actor.io_lbns is not None or "System-" in actor.name:
            continue
        op_type = actor.task.exec_sequence[0].op_type if actor.task.exec_sequence else ""
        actor.fn(actor.in_arrays, actor.out_arrays)
        rounds = []
        for _ in range(3):
            start = time.thread_time()
            for _ in range(number):
                actor.fn(actor.in_arrays, actor.out_arrays)
            rounds.append((time.thread_time() - start) / number)
        plan = actor.kernel.info if actor.kernel else None  # a Winograd conv kernel: its own GEMMs' FLOPs
        flops = 2 * plan.products() if plan is not None else kernel_flops(op_type, actor.in_arrays, actor.out_arrays)
        times.append((f"{actor.name} ({op_type}{', Winograd ' + plan.algorithm if plan is not None else ''})",
                      float(np.median(rounds)), flops))
    return sorted(times, key=lambda t: -t[1])


def winograd_kernels() -> list[tuple[str, object, int]]:
    """(actor, Winograd plan, the im2col GEMM FLOPs it replaces) of each conv kernel that runs Winograd."""
    out = []
    for actor in flow.default_session().runtime.actors.values():
        plan = actor.kernel.info if actor.kernel is not None else None
        if plan is not None:
            op_type = actor.task.exec_sequence[0].op_type
            out.append((actor.name, plan, kernel_flops(op_type, actor.in_arrays, actor.out_arrays)))
    return out


def autotune_rows() -> list[tuple[str, str]]:
    """Each conv kernel's algorithm as FLOWLAB_WINOGRAD=auto chose it (kernels/numba_cpu/winograd_conv.py: measured
    once per machine and kernel sources, cached) and every candidate's time in that measurement."""
    from flowlab.flags import get
    from flowlab.kernels.numba_cpu.winograd_conv import chosen

    if get("winograd") is not None:
        return [(f"conv algorithms: fixed (FLOWLAB_WINOGRAD={get('winograd')}), not measured", "")]
    rows = [("conv algorithms chosen by measuring (FLOWLAB_WINOGRAD=auto; ms at the choice, cached)", "")]
    for key, record in chosen().items():
        op, shapes = key.split(" ")[1], key[key.find("[["):key.find("]]") + 2]
        cands = ", ".join(f"{name.replace('winograd ', '')} {ms:.1f}" for name, ms in record["ms"].items())
        rows.append((f"  {op} {shapes}: {record['algorithm']}", cands))
    return rows


def winograd_rows(per_op: list[tuple[str, float, int]], rate: float, flops: int, torch: float | None,
                  ) -> tuple[list[tuple[str, str]], float]:
    """The Winograd kernels (multiplications, time alone) and the floor with the chosen algorithms' FLOPs."""
    kernels = winograd_kernels()
    times = {name[:name.find(" (")]: t for name, t, _ in per_op}
    chosen = flops - sum(im2col - 2 * plan.products() for _, plan, im2col in kernels)
    floor = chosen / rate
    rows = autotune_rows()
    rows.append((f"conv kernels on Winograd's algorithm (FLOWLAB_WINOGRAD=0: all im2col): {len(kernels)}", ""))
    for name, plan, im2col in kernels:
        rows.append((f"  {name}: {plan.algorithm}, {plan.products() / 1e6:.0f} M multiplications (im2col "
                     f"{im2col / 2e6:.0f} M, {im2col / 2 / plan.products():.1f}x)",
                     f"{times.get(name, float('nan')) * 1e3:.2f} ms alone; its GEMMs at the SGEMM rate "
                     f"{2 * plan.products() / rate * 1e3:.1f} ms"))
    of_torch = f" = {floor / torch:.2f} of torch's step" if torch else ""
    rows.append((f"GEMM floor with the chosen algorithms: {chosen / 1e9:.2f} GFLOP (Winograd's GEMMs, transforms "
                 "not counted)", f"{floor * 1e3:.1f} ms{of_torch}"))
    return rows, floor


def chain_times(number: int) -> list[tuple[str, float, float]]:
    """Each chain of the fused step (kernels/numba_cpu/chains.py: a conv with its bias_add, relu and pool, sample
    by sample; the gradients likewise) against its ops one by one, on the step's own registers, thread CPU time,
    alternating rounds: (ops, one by one, chained)."""
    from flowlab.kernels.registry import Owned, chain_at
    from flowlab.replay.fused import fused_call_of

    schedule = flow.default_session().runtime.layer.last
    calls = [fused_call_of(actor, step) for step, actor in zip(schedule.steps, schedule.step_actors)
             if actor is not None]
    calls = [call for call in calls if call is not None]
    run = lambda call: call.fn(*(a.array if isinstance(a, Owned) else a for a in call.args))
    out, i = [], 0
    while i < len(calls):
        merged, count = chain_at(calls, i)
        if count > 1:
            parts = calls[i:i + count]
            times: tuple[list[float], list[float]] = ([], [])
            for _ in range(3 * number):
                for k, chain in enumerate((parts, [merged])):
                    start = time.thread_time()
                    for call in chain:
                        run(call)
                    times[k].append(time.thread_time() - start)
            names = " + ".join(c.fn.py_func.__name__.lstrip("_") for c in parts)
            out.append((names, float(np.median(times[0])), float(np.median(times[1]))))
        i += count
    return out


def where_rows(step: float, floor: float, torch: float, rate: float, per_op: list[tuple[str, float, int]],
               chained: list[tuple[str, float, float]]) -> list[tuple[str, str]]:
    """The bound, by kernel class: flowlab's step beyond its GEMM floor, as the kernels' time beyond their GEMMs,
    the pools, the elementwise ops, the optimizer, less what the chains save, and the rest (runtime, pushes)."""
    classes: dict[str, float] = {}
    for name, t, flops in per_op:
        op = name[name.rfind("(") + 1:-1]
        key = ("GEMM kernels beyond their GEMMs at the SGEMM rate" if flops else
               "max pools and their gradients" if "pool" in op else
               "optimizer updates" if op.endswith("_update") else "bias, relu, their gradients and the rest")
        classes[key] = classes.get(key, 0.0) + (t - flops / rate if flops else t)
    saved = sum(a - b for _, a, b in chained)
    rows = [(f"where flowlab's {(step - floor) * 1e3:.1f} ms beyond the floor go (kernels alone, thread CPU)", ""),
            *((f"  {k}", f"{v * 1e3:.1f} ms") for k, v in classes.items()),
            ("  the chains' saving (their ops one by one - chained)", f"-{saved * 1e3:.1f} ms"),
            ("  the rest: runtime, pushes and pulls, caches (step - floor - the above)",
             f"{(step - floor - sum(classes.values()) + saved) * 1e3:.1f} ms"),
            ("the bound: torch's step / floor; the target <= 0.80 x torch leaves beside the floor",
             f"{floor / torch:.2f}; {(0.8 * torch - floor) * 1e3:.1f} ms")]
    rows += [(f"  chain {names}", f"{a * 1e3:.2f} ms one by one, {b * 1e3:.2f} ms chained ({b / a:.2f}x)")
             for names, a, b in chained]
    return rows


def breakdown_rows(per_op: list[tuple[str, float, int]], rate: float) -> list[tuple[str, str]]:
    """Every kernel over 1 % of the sum; the GEMM ones with their FLOP rate and their time at the SGEMM rate."""
    total = sum(t for _, t, _ in per_op)
    rows = [("flowlab kernels alone, summed (thread CPU time)", f"{total * 1e3:.1f} ms")]
    for name, t, flops in per_op:
        if t < 0.01 * total:
            continue
        gemm = (f"  {flops / 1e9:.2f} GFLOP, {flops / t / 1e9:.0f} GFLOP/s; at the SGEMM rate "
                f"{flops / rate * 1e3:.1f} ms") if flops else ""
        rows.append((f"  {name}", f"{t * 1e3:.2f} ms{gemm}"))
    return rows


def main() -> None:
    print(f"CPU: {cpu_description()}")  # first: figures from different machines are not one series
    batch = 10 if QUICK else 100
    x, y = batch_data(batch)
    if not torch_installed():
        flowlab_only(batch, x, y)
        return
    set_one_thread()
    train_job = flowlab_job(batch)
    rows = [("one step against torch's (rtol 1e-4)", check_equal(train_job, x, y))]
    flowlab = lambda: train_job(x, y)
    model, _ = torch_model(flow.get_all_variables())
    torch = torch_step(model, x, y)
    number, repeat = (2, 3) if QUICK else (5, 9)
    for _ in range(3 if QUICK else 12):  # past capture and fusion, torch's first steps
        flowlab()
        torch()
    times: dict[str, list[float]] = {"flowlab": [], "torch": []}
    for _ in range(repeat):  # alternate whole rounds
        for key, step in (("flowlab", flowlab), ("torch", torch)):
            time.sleep(PARK)
            step()
            times[key].append(median_time(step, 1, number))
    med = {k: float(np.median(v)) for k, v in times.items()}
    time.sleep(PARK)
    rate = gemm_rate()
    flops = sum(2 * count * m * k * n for count, m, k, n in step_gemms(batch))
    floor = flops / rate
    rows += [
        (f"LeNet batch {batch}, 1 thread: flowlab step", f"{med['flowlab'] * 1e3:.1f} ms"),
        (f"LeNet batch {batch}, 1 thread: torch eager step", f"{med['torch'] * 1e3:.1f} ms"),
        (f"LeNet batch {batch}, 1 thread: ratio flowlab / torch", f"{med['flowlab'] / med['torch']:.2f}  "
                                                                  "(target <= 0.80)"),
        ("single-thread SGEMM rate (conv2 GEMM, fastest BLAS and shape)", f"{rate / 1e9:.0f} GFLOP/s"),
        (f"GEMM floor: {flops / 1e9:.2f} GFLOP at that rate (every conv as im2col GEMMs)",
         f"{floor * 1e3:.1f} ms = {floor / med['torch']:.2f} of torch's step"),
        ("bound: the target leaves for all but the GEMMs (0.80 x torch - floor)",
         f"{(0.8 * med['torch'] - floor) * 1e3:.1f} ms"),
        ("flowlab's step beyond its GEMM floor (step - floor)", f"{(med['flowlab'] - floor) * 1e3:.1f} ms"
                                                                  f" (torch's step - floor: "
                                                                  f"{(med['torch'] - floor) * 1e3:.1f} ms)"),
        ("load average (1 min) after timing", f"{os.getloadavg()[0]:.2f} (clock: "
                                              f"{'thread CPU time, --cpu' if CPU else 'wall; --cpu for CPU time'})"),
    ]
    per_op = breakdown(1 if QUICK else 5)
    wino, chosen_floor = winograd_rows(per_op, rate, flops, med["torch"])
    rows += wino
    rows.append(("bound with the chosen algorithms: 0.80 x torch - that floor",
                 f"{(0.8 * med['torch'] - chosen_floor) * 1e3:.1f} ms"))
    # the kernels' classes below count each kernel's own algorithm's FLOPs: beside the chosen algorithms' floor
    rows += where_rows(med["flowlab"], chosen_floor, med["torch"], rate, per_op, chain_times(1 if QUICK else 5))
    rows += breakdown_rows(per_op, rate)
    table(f"LeNet SGD train step through the full runtime vs torch eager (1 thread, medians of {repeat} rounds)",
          rows)
    flow.clear_default_session()


if __name__ == "__main__":
    sys.exit(main())
