"""One SGD train step of an MLP placed on the GPU, through flowlab's full runtime (push, train, pull and main jobs;
the protocol path: replay declines GPU plans), against torch eager on CUDA (autograd + torch.optim.SGD), in one
process. Targets (issue 12): 784-512-10 at batch 100 <= 1.0x torch; 64-32-10 at batch 8 <= 0.3x torch.

Both sides do the same work per step: upload the batch, forward, backward, update, and bring the loss back to
the host (flowlab's call returns it as NumPy; torch's step ends with ``loss.cpu()``). Each pair is checked first:
from the same initial weights the losses of the first steps agree to 1e-4 (float32 sums in another order).

Without a GPU it prints "no GPU: skipped" and exits 0. ``--quick``: fewer rounds on a GPU; in Numba's simulator
(NUMBA_ENABLE_CUDASIM=1, which runs each CUDA thread as a Python thread) each MLP shrinks to a stand-in (see SIM)
with small blocks, its first losses checked against NumPy's and the same rows printed (timings meaningless), so CI
proves the script runs. Without --quick the simulator is refused: the real sizes would take hours there.
"""

from __future__ import annotations

import time

import numpy as np
from _util import QUICK, median_time, table

import flowlab as flow
import flowlab.typing as tp

SHAPES = {"MLP 784-512-10, batch 100": (784, 512, 10, 100, 1.0), "MLP 64-32-10, batch 8": (64, 32, 10, 8, 0.3)}
LR = 0.1
# --quick in the simulator: each MLP's stand-in (d, h, c, b), a few blocks per kernel at launch_config(**SIM_LAUNCH)
SIM = {"MLP 784-512-10, batch 100": (12, 8, 4, 4), "MLP 64-32-10, batch 8": (6, 4, 3, 2)}
SIM_LAUNCH = {"threads": 32, "tile": 8, "tile_k": 4, "micro": 2, "max_blocks": 8}


def flowlab_step(d: int, h: int, c: int, b: int, weights: dict[str, np.ndarray]):
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((b, d)), y: tp.Numpy.Placeholder((b,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0"):
            hidden = flow.layers.dense(x, h, activation=flow.nn.relu, name="hidden")
            logits = flow.layers.dense(hidden, c, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=0).minimize(loss)
        return loss

    flow.load_variables(weights)
    return train


def torch_step(torch, weights: dict[str, np.ndarray]):
    dev = torch.device("cuda")
    w1, b1, w2, b2 = (torch.tensor(weights[k], device=dev, requires_grad=True)
                      for k in ("hidden-weight", "hidden-bias", "output-weight", "output-bias"))
    opt = torch.optim.SGD([w1, b1, w2, b2], lr=LR)

    def step(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        xt, yt = torch.from_numpy(x).to(dev), torch.from_numpy(y).long().to(dev)
        logits = torch.relu(xt @ w1.T + b1) @ w2.T + b2
        loss = torch.nn.functional.cross_entropy(logits, yt, reduction="none")
        opt.zero_grad()
        loss.sum().backward()  # flowlab's loss gradient is ones per example, as OneFlow's
        opt.step()
        return loss.detach().cpu().numpy()

    return step


def numpy_loss(w: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    logits = np.maximum(x @ w["hidden-weight"].T + w["hidden-bias"], 0) @ w["output-weight"].T + w["output-bias"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    return np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(len(y)), y]


def main() -> None:
    import contextlib

    import numba

    sim = bool(numba.config.ENABLE_CUDASIM)
    if sim and not QUICK:
        print("no GPU: skipped (NUMBA_ENABLE_CUDASIM=1: the simulator runs CUDA threads as Python threads; "
              "--quick runs stand-in sizes)")
        return
    from flowlab.kernels import cuda_available

    if not cuda_available():
        print("no GPU: skipped (numba.cuda.is_available() is False)")
        return
    try:
        import torch

        has_torch = torch.cuda.is_available()
    except ImportError:
        has_torch = False
    launch: contextlib.AbstractContextManager = contextlib.nullcontext()
    if sim:
        from flowlab.kernels.numba_cuda import launch_config

        launch = launch_config(**SIM_LAUNCH)
    rows: list[tuple[str, str]] = [("device", "the CUDA simulator (stand-in sizes, timings meaningless)" if sim
                                    else _device_name())]
    rng = np.random.default_rng(0)
    with launch:
        for label, (d, h, c, b, target) in SHAPES.items():
            if sim:
                d, h, c, b = SIM[label]
                rows.append((f"{label}: simulator stand-in", f"{d}-{h}-{c}, batch {b}"))
            rows += _measure(label, d, h, c, b, target, rng, torch if has_torch else None, sim)
    table("MLP SGD step on the GPU through the full runtime (issue 12)", rows)


def _device_name() -> str:
    from numba import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def _measure(label: str, d: int, h: int, c: int, b: int, target: float, rng: np.random.Generator, torch,
             sim: bool) -> list[tuple[str, str]]:
    weights = {"hidden-weight": rng.normal(0, 0.05, (h, d)).astype(np.float32),
               "hidden-bias": np.zeros(h, np.float32),
               "output-weight": rng.normal(0, 0.05, (c, h)).astype(np.float32),
               "output-bias": np.zeros(c, np.float32)}
    x, y = rng.random((b, d)).astype(np.float32), rng.integers(0, c, b).astype(np.int32)
    ours = flowlab_step(d, h, c, b, weights)
    rows = []
    if torch is not None:
        theirs = torch_step(torch, weights)
        for _ in range(3):
            np.testing.assert_allclose(ours(x, y), theirs(x, y), rtol=1e-4, atol=1e-5)
        rows.append((f"{label}: first 3 losses", "equal torch's (rtol 1e-4)"))
    else:  # the first step's loss is a function of the initial weights alone: NumPy's
        np.testing.assert_allclose(ours(x, y), numpy_loss(weights, x, y), rtol=1e-5, atol=1e-6)
        rows.append((f"{label}: first loss", "equals NumPy's (rtol 1e-5)"))
    repeat, number = (1, 2) if sim else (3, 10) if QUICK else (7, 50)
    time.sleep(0.1)
    flow_s = median_time(lambda f=ours, a=x, t=y: f(a, t), repeat, number)
    rows.append((f"{label}: flowlab step", f"{flow_s * 1e3:.3f} ms"))
    if torch is not None:
        torch_s = median_time(lambda f=theirs, a=x, t=y: f(a, t), repeat, number)
        rows.append((f"{label}: torch eager CUDA step", f"{torch_s * 1e3:.3f} ms"))
        rows.append((f"{label}: ratio flowlab / torch (target <= {target}x)", f"{flow_s / torch_s:.2f}x"))
    else:
        rows.append((f"{label}: torch", "torch with CUDA not installed"))
    return rows


if __name__ == "__main__":
    main()
