"""One SGD train step of an MLP through flowlab's full runtime (push, train, pull and main jobs) against torch
eager (autograd + torch.optim.SGD), measured side by side with the same thread count (--threads N, default 1).
Targets (issue 3): 784-512-10 at batch 100: <= 0.75x torch; 64-32-10 at batch 8: <= 0.15x torch.

flowlab's steady-state calls are replayed (runtime/replay.py: the schedule the actor protocol decided, with
runs of kernels fused into generated Numba segments); the "protocol act by act" row is the same step with
replay off (FLOWLAB_REPLAY=0), every act scheduled by the protocol."""

from __future__ import annotations

import os
import sys
import time

THREADS = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
os.environ["OPENBLAS_NUM_THREADS"] = str(THREADS)  # before numpy/numba load BLAS

import numpy as np  # noqa: E402
from _util import QUICK, median_time, table  # noqa: E402

import flowlab as flow  # noqa: E402
import flowlab.typing as tp  # noqa: E402
from flowlab.runtime import runtime as runtime_module  # noqa: E402


def flowlab_step(d_in: int, hidden: int, batch: int) -> tuple[object, dict[str, float]]:
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((batch, d_in)),
                  y: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, hidden, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                              name="hidden")
        logits = flow.layers.dense(h, 10, kernel_initializer=flow.truncated_normal(0.1), name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    x = rng.random((batch, d_in), dtype=np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)
    start = time.perf_counter()
    train_job(x, y)
    first = time.perf_counter() - start
    session = flow.default_session()
    before = session.runtime.seq
    train_job(x, y)
    info = {"first call (compile + kernels)": first, "compile_jobs": session.compile_seconds,
            "actors": len(session.plan.tasks), "acts per step": session.runtime.seq - before}
    return lambda: train_job(x, y), info


def torch_step(d_in: int, hidden: int, batch: int):  # noqa: ANN201
    import torch

    torch.set_num_threads(THREADS)
    model = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0)
    loss_fn = torch.nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.random((batch, d_in), dtype=np.float32))
    y = torch.from_numpy(rng.integers(0, 10, batch))

    def step() -> None:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def compare(label: str, d_in: int, hidden: int, batch: int, target: float) -> list[tuple[str, str]]:
    flowlab, info = flowlab_step(d_in, hidden, batch)
    number = 20 if batch >= 100 else 200
    repeat = 3 if QUICK else 9
    rows = [(f"{label}: actors / acts per step", f"{info['actors']} / {info['acts per step']}"),
            (f"{label}: compile (trace..Plan..runtime)", f"{info['compile_jobs'] * 1e3:.0f} ms")]
    try:
        torch = torch_step(d_in, hidden, batch)
    except ImportError:
        t_flowlab = median_time(flowlab, repeat, number)
        return rows + [(f"{label}: flowlab step", f"{t_flowlab * 1e6:.0f} us (torch not installed: "
                                                   "pip install 'flowlab[bench]' for the ratio)")]
    for _ in range(3):
        torch()
    for _ in range(20):  # past capture and fusion (FUSE_AFTER replays)
        flowlab()
    flowlab_times, torch_times, protocol_times = [], [], []
    for _ in range(repeat):  # alternate whole rounds: neither library's BLAS pool runs inside the other's
        flowlab_times.append(median_time(flowlab, 1, number))
        torch_times.append(median_time(torch, 1, number))
        runtime_module.REPLAY = False
        protocol_times.append(median_time(flowlab, 1, number))
        runtime_module.REPLAY = True
        flowlab()  # the protocol left the state unknown: this call finds it again (a fingerprint)
    t_flowlab, t_torch = float(np.median(flowlab_times)), float(np.median(torch_times))
    t_protocol = float(np.median(protocol_times))
    return rows + [
        (f"{label}: flowlab step, replayed + fused (median)", f"{t_flowlab * 1e6:.0f} us"),
        (f"{label}: flowlab step, protocol act by act", f"{t_protocol * 1e6:.0f} us"),
        (f"{label}: torch eager step (median)", f"{t_torch * 1e6:.0f} us"),
        (f"{label}: ratio flowlab / torch", f"{t_flowlab / t_torch:.2f}  (target <= {target}); act by act "
                                            f"{t_protocol / t_torch:.2f}"),
    ]


def main() -> None:
    rows = compare("MLP 784-512-10, batch 100", 784, 512, 100, 0.75)
    rows += compare("tiny MLP 64-32-10, batch 8", 64, 32, 8, 0.15)
    table(f"MLP SGD train step through the full runtime vs torch eager ({THREADS} thread(s) each)", rows)
    flow.clear_default_session()


if __name__ == "__main__":
    main()
