"""flowlab's tiled CUDA GEMM (kernels/numba_cuda/gemm.py, the matmul op's GPU kernel) at 4096^2 float32, in
TFLOP/s, next to torch's cuBLAS in the same run where torch with CUDA is installed (issue 12: report both); then
conv2d's implicit GEMM (kernels/numba_cuda/conv_gemm.py) on a ResNet 3x3 layer next to cuDNN's.

On a machine without a GPU it prints "no GPU: skipped" and exits 0. ``--quick``: 1024^2 on a GPU; in Numba's
simulator (NUMBA_ENABLE_CUDASIM=1, which runs each CUDA thread as a Python thread) 20^2 with small tiles, the same
checks and rows at a size the simulator runs in seconds (its timings meaningless), so CI proves the script runs.
``--n N``: N^2. It times the launch default (tile 64, tile_k 8, micro 4) and two
other configurations (the register blocking's effect: micro 1 is the textbook 16 x 16 tiled GEMM);
``--config T/K/M`` times tile T, tile_k K, micro M alone.

Each variant is checked first: flowlab's product against cuBLAS's (torch) or, without torch, against NumPy's on
a 256-row slice, to rtol 1e-3 (float32 sums of 4096 terms in another order). Timings are CUDA events around
``repeat`` launches on one stream, median of rounds.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
from _util import QUICK, table


def _arg(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main() -> None:
    import numba

    sim = bool(numba.config.ENABLE_CUDASIM)
    if sim and not QUICK and "--n" not in sys.argv:
        print("no GPU: skipped (NUMBA_ENABLE_CUDASIM=1: the simulator would take hours at this size; "
              "--quick runs a tiny size)")
        return
    from numba import cuda

    if not cuda.is_available():
        print("no GPU: skipped (numba.cuda.is_available() is False)")
        return

    from flowlab.kernels.numba_cuda.gemm import gemm

    n = _arg("--n", (20 if sim else 1024) if QUICK else 4096)
    configs = [(64, 8, 4), (128, 8, 8), (16, 16, 1)]  # (tile, tile_k, micro); the first is the default
    if sim:  # the simulator runs a thread per Python thread: blocks of 16 threads, partial tiles, same code
        configs = [(16, 8, 4), (8, 4, 2)]
    if "--config" in sys.argv:  # e.g. --config 128/16/8: time that one instead
        configs = [tuple(int(v) for v in sys.argv[sys.argv.index("--config") + 1].split("/"))]
    rounds, repeat = (1, 1) if sim else (3, 3) if QUICK else (5, 10)
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((n, n)).astype(np.float32)
    b_host = rng.standard_normal((n, n)).astype(np.float32)
    stream = cuda.stream()
    a, b = cuda.to_device(a_host, stream=stream), cuda.to_device(b_host, stream=stream)
    c = cuda.device_array((n, n), np.float32, stream=stream)
    flops = 2.0 * n**3

    try:
        import torch

        has_torch = torch.cuda.is_available()
    except ImportError:
        has_torch = False

    def timed(launch) -> float:
        """Median seconds per launch."""
        launch()  # warm: compile, caches
        stream.synchronize()
        times = []
        for _ in range(rounds):
            if sim:  # the simulator's events time nothing (elapsed_time is -1): its launches are synchronous
                begin = time.perf_counter()
                launch()
                times.append(time.perf_counter() - begin)
                continue
            start, end = cuda.event(), cuda.event()
            start.record(stream)
            for _ in range(repeat):
                launch()
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / repeat)
        return statistics.median(times)

    name = getattr(cuda.get_current_device(), "name", "the CUDA simulator")
    device = name.decode() if isinstance(name, bytes) else str(name)
    rows = [("device", device + (" (timings meaningless)" if sim else "")),
            ("shape", f"{n} x {n} @ {n} x {n}, float32")]
    if has_torch:
        ta, tb = torch.from_numpy(a_host).cuda(), torch.from_numpy(b_host).cuda()
        torch.backends.cuda.matmul.allow_tf32 = False  # plain FP32 on both sides

    for label, transpose_b in (("a @ b", False), ("a @ b^T", True)):
        if has_torch:
            ref = (ta @ (tb.T if transpose_b else tb)).cpu().numpy()
        else:  # NumPy on a slice: the full product would take a CPU minutes
            ref = a_host[:256] @ (b_host.T if transpose_b else b_host)
        for tile, tile_k, micro in configs:
            run = gemm((n, n), (n, n), False, transpose_b, 1.0, np.dtype(np.float32), tile, tile_k, micro)

            def launch(run=run) -> None:
                run(a, b, c, stream)

            launch()
            stream.synchronize()
            got = c.copy_to_host()[:ref.shape[0]]
            np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-2)
            seconds = timed(launch)
            rows.append((f"flowlab tiled GEMM, {label}, tile {tile}/{tile_k}/{micro}",
                         f"{flops / seconds / 1e12:6.2f} TFLOP/s  ({seconds * 1e3:.2f} ms)"))
            if (tile, tile_k, micro) == configs[0]:
                default_seconds = seconds
        if has_torch:
            tb_op = tb.T if transpose_b else tb
            stream.synchronize()
            torch_seconds = _torch_timed(torch, lambda tb_op=tb_op: torch.matmul(ta, tb_op), rounds, repeat)
            rows.append((f"torch (cuBLAS), {label}",
                         f"{flops / torch_seconds / 1e12:6.2f} TFLOP/s  ({torch_seconds * 1e3:.2f} ms)"))
            rows.append((f"ratio flowlab (default tiles) / cuBLAS time, {label}",
                         f"{default_seconds / torch_seconds:.2f}x"))
    if not has_torch:
        rows.append(("torch (cuBLAS)", "torch with CUDA not installed"))
    table("Tiled GEMM on the GPU (issue 12)", rows)
    table("conv2d as an implicit GEMM on the GPU", _conv_rows(cuda, stream, timed, sim, has_torch))


def _conv_rows(cuda, stream, timed, sim: bool, has_torch: bool) -> list[tuple[str, str]]:
    """A ResNet 3x3 layer (64 -> 64 channels, 56 x 56, pad 1; batch 32, 8 with --quick, a tiny stand-in in the
    simulator) through kernels/numba_cuda/conv_gemm.py at the default tiles, checked on image 0 against NumPy,
    beside torch's (cuDNN, TF32 off) where torch has CUDA."""
    from flowlab.kernels.numba_cuda.conv_gemm import conv2d_gemm

    b, c, hw, oc = (1, 2, 5, 3) if sim else (8 if QUICK else 32, 64, 56, 64)
    attrs = {"strides": (1, 1), "dilations": (1, 1), "pads": (1, 1, 1, 1), "groups": 1}
    rng = np.random.default_rng(1)
    x_host = rng.standard_normal((b, c, hw, hw)).astype(np.float32)
    w_host = rng.standard_normal((oc, c, 3, 3)).astype(np.float32)
    x, w = cuda.to_device(x_host, stream=stream), cuda.to_device(w_host, stream=stream)
    y = cuda.device_array((b, oc, hw, hw), np.float32, stream=stream)
    tiles = (16, 8, 4) if sim else (None, None, None)
    run = conv2d_gemm(w_host.shape, y.shape, attrs, np.dtype(np.float32), *tiles)

    def launch() -> None:
        run(x, w, y, stream)

    launch()
    stream.synchronize()
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(x_host[0], ((0, 0), (1, 1), (1, 1))), (3, 3), (1, 2))
    np.testing.assert_allclose(y.copy_to_host()[0], np.einsum("chwij,ocij->ohw", windows, w_host), rtol=1e-3,
                               atol=1e-3)
    flops = 2.0 * b * oc * hw * hw * c * 9
    seconds = timed(launch)
    rows = [("shape", f"x {b}x{c}x{hw}x{hw}, w {oc}x{c}x3x3, pad 1, float32"),
            ("flowlab implicit-GEMM conv2d (image 0 equals NumPy's)",
             f"{flops / seconds / 1e12:6.2f} TFLOP/s  ({seconds * 1e3:.3f} ms)")]
    if has_torch:
        import torch

        torch.backends.cudnn.allow_tf32 = False
        tx, tw = torch.from_numpy(x_host).cuda(), torch.from_numpy(w_host).cuda()
        torch_seconds = _torch_timed(torch, lambda: torch.nn.functional.conv2d(tx, tw, padding=1), 5, 10)
        rows.append(("torch conv2d (cuDNN)", f"{flops / torch_seconds / 1e12:6.2f} TFLOP/s  "
                                              f"({torch_seconds * 1e3:.3f} ms)"))
        rows.append(("ratio flowlab / cuDNN time", f"{seconds / torch_seconds:.2f}x"))
    else:
        rows.append(("torch conv2d (cuDNN)", "torch with CUDA not installed"))
    return rows


def _torch_timed(torch, launch, rounds: int, repeat: int) -> float:
    launch()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / repeat)
    return statistics.median(times)


if __name__ == "__main__":
    main()
