"""The conv2d kernels' factories: Winograd's algorithm (winograd.py) or im2col and a GEMM (conv.py, the reference
algorithm), chosen per conv by measuring (``FLOWLAB_WINOGRAD=auto``, the default) or by a fixed rule (``=1``).

Auto (``choose``): a conv Winograd can run (``eligible``: stride 1, undilated, ungrouped, a square 3x3 or 5x5
filter, a float input, every pad below the filter's size) is timed once per machine on random inputs of its shapes
as im2col and as each of ``CANDIDATES`` (F(4x4) or F(2x2), the tiles a chunk), thread CPU time, the fastest of
``ROUNDS`` rounds that call each candidate once (on a loaded box a neighbour's cache traffic only adds to a call's
time; the median of 3 calls in a row picked near-random among candidates within 10 %). The fastest candidate is kept
in ``conv_autotune.json`` beside Numba's cache (the directory is named by the kernels' sources, so an edited kernel
measures again; the key holds the CPU Numba compiles for (``_numba.target_cpu``), the op, the shapes, the dtype
and the attributes) and read back by every later build, in this process or another: deterministic given the
cache, which a test or a user can edit to pin a choice. A conv under ``MIN_MEASURED`` im2col multiplications
stays on im2col unmeasured. Every candidate computes
the same convolution within the kernel modes' tolerance (tests/ops/test_winograd.py checks each against a float64
direct convolution). Measuring costs a few calls of each candidate the first time a shape is built (1.7-2.6 s for
each of LeNet's conv2 kernels at batch 100 on the loaded 2-core Xeon, the candidates' code loaded from Numba's
cache).

The fixed rule (``plan_for``, FLOWLAB_WINOGRAD=1): F(4x4) with 128-tile chunks where both channel counts are at
least ``MIN_CHANNELS`` and the tiles do at most ``MAX_PRODUCTS`` of im2col's products (a small output wastes most
of a 4x4 tile). Measured on the AMD EPYC before the GEMM micro-kernel (thread CPU, Winograd / im2col time of the
forward, data and filter gradients): 16 -> 16 channels, 3x3 on 9x9: 1.68, 1.09, 1.53; on 4x4: 0.98, 1.06, 0.88;
outputs of 1x1: 2.3-4.4; 16 -> 16, 5x5 on 14x14: 0.87, 0.63, 0.72; 32 -> 32, 3x3 on 28x28: 0.78, 0.73, 0.74;
64 -> 64, 3x3 on 8x8: 0.66, 0.58, 0.58, 5x5 on 6x6: 0.62, 0.60, 0.59; LeNet's conv2 (5x5, 32 -> 64, 14x14, batch
100): 0.55, 0.49, 0.56.

The conv chains (chains.py) match the im2col kernels only, so they yield to Winograd: conv2's bias, relu and
pool run as their own kernels (chaining them over Winograd's chunks was measured and not kept: docs/performance.md,
"Chains over Winograd's chunks"). The choice is made
once per task when its kernel is built; ``FLOWLAB_WINOGRAD=0`` keeps every conv on im2col. A Winograd kernel whose
result holds a NaN or an Inf runs the im2col kernel over it (winograd.py says why), so non-finite values reach the
outputs they reach there.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...flags import get
from ..registry import FusedCall, Kernel, KernelCtx, KernelFn, Owned, fusable, register_kernel
from . import conv
from ._numba import cache_dir, njit, target_cpu
from .winograd import Winograd, _filter_transform, tile_for, winograd_core, winograd_filter_core

MIN_CHANNELS = 32
MAX_PRODUCTS = 0.4  # Winograd's a*a products a tile against im2col's r*r an output: 0.21-0.25 on whole tiles
# what the autotune measures (FLOWLAB_WINOGRAD=auto): im2col, then Winograd as (output tile m, tiles a chunk)
CANDIDATES = ((4, 16), (4, 32), (4, 64), (4, 128), (2, 128))
ROUNDS = 7  # rounds of one timed call of each candidate (after a warm-up call): the fastest call of each decides
# below this many im2col multiplications (about 0.01 ms of GEMM here) auto takes im2col unmeasured: a call that
# short times mostly noise, and a test's tiny conv would compile the Winograd kernels for nothing
MIN_MEASURED = 1 << 20


def winograd_enabled() -> bool | None:
    """The flag: False every conv on im2col, True Winograd F(4x4) wherever ``plan_for``'s rule takes it, None
    (auto) the algorithm measured fastest for the conv's shapes on this machine (``choose``)."""
    return get("winograd")


def eligible(ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> bool:
    """Whether Winograd can run this conv at all: stride 1, undilated, ungrouped, a square 3x3 or 5x5 filter, a
    float input and every pad below the filter's size (the data gradient pads dy by r - 1 - pad)."""
    (sh, sw), (dh, dw) = ctx.attrs["strides"], ctx.attrs["dilations"]
    _, _, kh, kw = w_shape
    return ((sh, sw, dh, dw) == (1, 1, 1, 1) and ctx.attrs["groups"] == 1 and kh == kw and kh in (3, 5)
            and len(x_shape) == 4 and ctx.in_descs[0].dtype.np in (np.float32, np.float64)
            and all(0 <= p < kh for p in ctx.attrs["pads"]))


def plan_for(ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...], y_hw: tuple[int, ...]) -> bool:
    """The fixed rule (FLOWLAB_WINOGRAD=1): whether this conv (input x_shape, filter w_shape, output planes y_hw)
    runs Winograd F(4x4) with 128-tile chunks."""
    o, cg, kh, _ = w_shape
    if not (eligible(ctx, x_shape, w_shape) and min(o, cg) >= MIN_CHANNELS):
        return False
    m = tile_for(kh)
    a, tiles = m + kh - 1, -(-y_hw[0] // m) * -(-y_hw[1] // m)
    return a * a * tiles <= MAX_PRODUCTS * kh * kh * y_hw[0] * y_hw[1]


# Choices made in this process, by key: what benchmarks print (``chosen``) and what a second build of the same
# conv reads back without measuring. Persisted beside Numba's cache (whose directory is named by the kernels'
# sources, so an edited kernel measures again), keyed by the CPU Numba compiles for too.
_chosen: dict[str, dict[str, Any]] = {}


def _cache_file() -> Path:
    return cache_dir() / "conv_autotune.json"


def _key(op_type: str, ctx: KernelCtx, shapes: tuple[tuple[int, ...], ...]) -> str:
    attrs = {k: ctx.attrs[k] for k in ("strides", "dilations", "pads", "groups")}
    dtype = np.dtype(ctx.in_descs[0].dtype.np).name
    return f"{target_cpu()} {op_type} {[list(s) for s in shapes]} {dtype} {sorted(attrs.items())}"


def _load() -> dict[str, dict[str, Any]]:
    try:
        return json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return {}


def _store(key: str, record: dict[str, Any]) -> None:
    """Add the record to the cache file (read again first: another process may have added its own)."""
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        table = {**_load(), key: record}
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # one writer each
        tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: the choice holds for this process


def chosen() -> dict[str, dict[str, Any]]:
    """The choices made or read back in this process: key -> {"algorithm", "m", "chunk_tiles", "ms"}."""
    return dict(_chosen)


def _measure(make: Callable[[int, int], KernelFn], ctx: KernelCtx) -> dict[str, Any]:
    """Time each candidate's kernel on random inputs of the conv's shapes (thread CPU time, the fastest of ROUNDS
    calls after a warm-up) and return the fastest as a record; every candidate's time is kept in it. The rounds
    go round the candidates (one call of each a round), so that a burst of a neighbour's work slows one call of
    several candidates rather than every call of one: timed one candidate after another, the data gradient of
    LeNet's conv2 took 128-tile chunks in one run of three (13.8 against 15.0 ms for 16 tiles) and 16 in the
    others (14.0 against 17.4), and in the step the 128-tile choice cost about 5 ms. Each call also starts with the
    other candidates' buffers in cache, not its own, as in a step where other kernels ran in between."""
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal(d.shape).astype(d.dtype.np) for d in ctx.in_descs]
    outs = [np.empty(d.shape, d.dtype.np) for d in ctx.out_descs]
    kernels = {_name(m, chunk): make(m, chunk) for m, chunk in ((0, 0), *CANDIDATES)}
    for kernel in kernels.values():
        kernel(ins, outs)  # compiles or loads the Numba code, warms the buffers
    rounds: dict[str, list[float]] = {name: [] for name in kernels}
    for _ in range(ROUNDS):
        for name, kernel in kernels.items():
            start = time.thread_time()
            kernel(ins, outs)
            rounds[name].append(time.thread_time() - start)
    times = {name: min(r) * 1e3 for name, r in rounds.items()}
    best = min(times, key=times.__getitem__)
    m, chunk = next(((m, c) for m, c in ((0, 0), *CANDIDATES) if _name(m, c) == best))
    return {"algorithm": best, "m": m, "chunk_tiles": chunk, "ms": times}


def _name(m: int, chunk: int) -> str:
    return "im2col" if m == 0 else f"winograd F({m}x{m}) {chunk} tiles"


def choose(op_type: str, ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
           y_hw: tuple[int, ...], make: Callable[[int, int], KernelFn]) -> tuple[int, int]:
    """(m, chunk_tiles) for this conv's kernel, m = 0 for im2col: by the flag, else (auto) by measuring each
    candidate once per machine and kernel sources, the choice cached (and read back: deterministic given it)."""
    flag = winograd_enabled()
    if flag is False or not eligible(ctx, x_shape, w_shape):
        return 0, 0
    if flag is True:
        return (tile_for(w_shape[2]), 128) if plan_for(ctx, x_shape, w_shape, y_hw) else (0, 0)
    if x_shape[0] * w_shape[0] * w_shape[1] * w_shape[2] * w_shape[3] * y_hw[0] * y_hw[1] < MIN_MEASURED:
        return 0, 0
    key = _key(op_type, ctx, tuple(d.shape for d in (*ctx.in_descs, *ctx.out_descs)))
    record = _chosen.get(key) or _load().get(key)
    if record is None or record.get("algorithm") != _name(record.get("m", -1), record.get("chunk_tiles", -1)):
        record = _measure(make, ctx)
        _store(key, record)
    _chosen[key] = record
    return int(record["m"]), int(record["chunk_tiles"])


@njit
def _wino_fwd(x, w, y, g, bi, bc, ai, ac, gi, gc, src, xq, d, tmp, v, mm, yt, u, xp, cols, cg):
    _filter_transform(w, g, False, gi, gc, src, tmp, u)
    if winograd_core(x, u, y, g, bi, bc, ai, ac, xq, d, tmp, v, mm, yt):
        conv._conv_fwd(x, w, y, xp, cols, cg)  # a NaN or Inf: the im2col result stands


@njit
def _wino_data_grad(dy, w, dx, g, bi, bc, ai, ac, gi, gc, src, xq, d, tmp, v, mm, yt, u, xp, cols, cg):
    """dx: dy's full correlation with the flipped filter, channels swapped (g: dy is the core's input)."""
    _filter_transform(w, g, True, gi, gc, src, tmp, u)
    if winograd_core(dy, u, dx, g, bi, bc, ai, ac, xq, d, tmp, v, mm, yt):
        conv._conv_data_grad(dy, w, dx, xp, cols, cg)


@njit
def _wino_filter_grad(dy, x, dw, g, bi, bc, ami, amc, gti, gtc, xq, dq, d, tmp, v, e, p, src, xp, cols, cg):
    if winograd_filter_core(dy, x, dw, g, bi, bc, ami, amc, gti, gtc, xq, dq, d, tmp, v, e, p, src):
        conv._conv_filter_grad(dy, x, dw, xp, cols, cg)


def _kernel(fn: object, owned: tuple[np.ndarray, ...], plan: Winograd) -> Kernel:
    """fn(in0, in1, out0, *owned) on the flat registers, and its fused form (owned as Owned arrays); the kernel
    carries its plan (``Kernel.info``) for the benchmark."""
    def args(ins, outs) -> tuple:
        return ins[0].reshape(-1), ins[1].reshape(-1), outs[0].reshape(-1)

    def kernel(ins, outs):
        fn(*args(ins, outs), *owned)  # type: ignore[operator]

    return fusable(kernel, lambda ins, outs: FusedCall(fn, (*args(ins, outs), *(Owned(a) for a in owned))), plan)


def _im2col(c: conv._Conv) -> tuple[np.ndarray, ...]:
    return c.xp, c.cols, c.geo


def _build(op_type: str, ctx: KernelCtx, x_shape: tuple[int, ...], w_shape: tuple[int, ...], y_hw: tuple[int, ...],
           im2col_fn: object, make: Callable[[conv._Conv, int, int], KernelFn]) -> KernelFn:
    """The kernel of the algorithm ``choose`` picks: make(c, m, chunk_tiles) builds a Winograd one."""
    c = conv._Conv(ctx, x_shape, w_shape, y_hw)
    build = lambda m, chunk: conv._conv_kernel(im2col_fn, c) if m == 0 else make(c, m, chunk)
    return build(*choose(op_type, ctx, x_shape, w_shape, y_hw, build))


@register_kernel("conv2d", "numba")
def _conv(ctx: KernelCtx) -> KernelFn:
    x_shape, w_shape, y_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.out_descs[0].shape
    n, ci, h, w = x_shape
    pt, _, pl, _ = ctx.attrs["pads"]

    def make(c: conv._Conv, m: int, chunk: int) -> KernelFn:
        p = Winograd(n, ci, h, w, w_shape[0], y_shape[2], y_shape[3], pt, pl, w_shape[2], ctx.in_descs[0].dtype.np,
                     chunk, m)
        return _kernel(_wino_fwd, (p.geo, *p.b, *p.a, *p.g, p.src, p.xq, p.d, p.tmp, p.v, p.mm, p.yt, p.u,
                                   *_im2col(c)), p)

    return _build("conv2d", ctx, x_shape, w_shape, y_shape[2:], conv._conv_fwd, make)


@register_kernel("conv2d_data_grad", "numba")
def _data_grad(ctx: KernelCtx) -> KernelFn:
    dy_shape, w_shape, x_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.in_descs[2].shape
    n, ci, h, w = x_shape
    r = w_shape[2]
    pt, _, pl, _ = ctx.attrs["pads"]

    def make(c: conv._Conv, m: int, chunk: int) -> KernelFn:
        # the core's input is dy (O channels), its output dx: padded by r - 1 - pad, the filter flipped
        p = Winograd(n, w_shape[0], dy_shape[2], dy_shape[3], ci, h, w, r - 1 - pt, r - 1 - pl, r,
                     ctx.in_descs[0].dtype.np, chunk, m)
        return _kernel(_wino_data_grad, (p.geo, *p.b, *p.a, *p.g, p.src, p.xq, p.d, p.tmp, p.v, p.mm, p.yt, p.u,
                                         *_im2col(c)), p)

    return _build("conv2d_data_grad", ctx, x_shape, w_shape, dy_shape[2:], conv._conv_data_grad, make)


@register_kernel("conv2d_filter_grad", "numba")
def _filter_grad(ctx: KernelCtx) -> KernelFn:
    dy_shape, x_shape, w_shape = ctx.in_descs[0].shape, ctx.in_descs[1].shape, ctx.in_descs[2].shape
    n, ci, h, w = x_shape
    pt, _, pl, _ = ctx.attrs["pads"]

    def make(c: conv._Conv, m: int, chunk: int) -> KernelFn:
        p = Winograd(n, ci, h, w, w_shape[0], dy_shape[2], dy_shape[3], pt, pl, w_shape[2], ctx.in_descs[0].dtype.np,
                     chunk, m)
        return _kernel(_wino_filter_grad, (p.geo, *p.b, *p.am, *p.gt, p.xq, p.dq, p.d, p.tmp, p.v, p.mm, p.u, p.src,
                                           *_im2col(c)), p)

    return _build("conv2d_filter_grad", ctx, x_shape, w_shape, dy_shape[2:], conv._conv_filter_grad, make)
