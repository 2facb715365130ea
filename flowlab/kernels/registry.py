"""Kernels by (op type, implementation, device).

A kernel *factory* is called once per task when the runtime is built; it sees the op conf and the blob descs
and returns a plain function ``fn(ins, outs)`` that reads the input arrays and writes the output arrays in
place (flat lists in the op's argument order). Binding attrs once keeps the per-act cost to one call.

GPU kernels (device "gpu", implementation "numba", in kernels/numba_cuda/) return ``fn(ins, outs, stream)``: the
arrays are CUDA device arrays, and the function enqueues its launches on ``stream``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..flags import get
from ..ir import BlobDesc, OpConf
from ..ir.dtype import float16, float32
from .kernel import Kernel, KernelFn

IMPLS = ("reference", "numba")  # what a kernel is registered as
MODES = ("tiered", *IMPLS)  # what a runtime runs: tiered starts on the reference and switches to Numba (tiered.py)


@dataclass(frozen=True)
class KernelCtx:
    op: OpConf
    in_descs: tuple[BlobDesc, ...]
    out_descs: tuple[BlobDesc, ...]
    device: str = "cpu"
    # OneFlow's ctx->parallel_ctx(): which device of the op's placement the task runs on. Few kernels need it
    # (the model-parallel loss finds its slice of the class axis with it); the descs are already physical.
    parallel_id: int = 0
    parallel_num: int = 1

    @property
    def attrs(self) -> dict[str, Any]:
        return self.op.attrs


@dataclass(frozen=True)
class FusedCall:
    """A kernel act as one call of a module-level Numba function, for fusing a replayed schedule's kernels into
    one generated function (replay/fused.py). ``args`` are the act's register arrays (or views of them) and
    constants. A ``checked`` function returns -1, or >= 0 when the act must fail: the Python kernel then runs to
    raise its own error."""

    fn: Any
    args: tuple[Any, ...]
    checked: bool = False


class External:
    """A FusedCall argument that lives outside the memory blocks: an array pushed by the caller, or a fresh array
    for a pulled copy. A fused segment takes it as a parameter: ``fetch()`` gives the array each time the segment
    runs (before its kernels), and ``done(array)``, if given, hands it on after they all ran. ``like`` is an array
    of the type the segment is compiled for (another type still works, at the cost of a compile). ``launch``: the
    launch buffer (a ForeignInput or ForeignOutput queue) whose job instance ``fetch`` or ``done`` takes, so that
    a generated call (replay/callgen.py), which launches no instances, passes the caller's array in or takes the
    pulled one directly; None for an array that is no launch's (a watched copy)."""

    def __init__(self, fetch: Callable[[], np.ndarray], like: np.ndarray,
                 done: Callable[[np.ndarray], None] | None = None, launch: Any = None) -> None:
        self.fetch, self.like, self.done, self.launch = fetch, like, done, launch

    def __repr__(self) -> str:
        return f"External({self.like.dtype}{list(self.like.shape)})"


class Owned:
    """A FusedCall argument that no register holds: an array the kernel owns for the runtime's life (its scratch
    buffers, its geometry). A fused segment takes it as a parameter, the same array on every call. Its bytes are
    no protocol state: a kernel rewrites them before reading them on every act."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __repr__(self) -> str:
        return f"Owned({self.array.dtype}[{self.array.size}])"


# A chain: consecutive fused calls that one kernel can run together, sample by sample while each sample's data is
# in cache (kernels/numba_cpu/chains.py: a conv with its bias_add, relu and max pool; their gradients). A matcher,
# keyed by the Numba function of the chain's first call, takes the run's calls and an index and returns the one
# call standing for calls[index:index + count] and count, or None. The merged call must write every register the
# calls write, with the same bits: a fused segment runs it in their place (replay/fused.py).
ChainMatch = Callable[[Sequence[FusedCall], int], "tuple[FusedCall, int] | None"]
_CHAINS: dict[Any, ChainMatch] = {}


def register_chain(first: Any, match: ChainMatch) -> None:
    _CHAINS[first] = match


def chain_at(calls: Sequence[FusedCall], index: int) -> tuple[FusedCall, int]:
    """The call a fused segment makes for calls[index] and how many calls it stands for (1: no chain)."""
    match = _CHAINS.get(calls[index].fn)
    found = match(calls, index) if match is not None else None
    if found is None or found[0].checked:  # a segment returns a failing call's own index: chains never fail
        return calls[index], 1
    return found


def fusable(kernel: KernelFn, build: Callable[..., FusedCall | None], info: Any = None) -> Kernel:
    """A kernel with its fused form, ``build(ins, outs) -> FusedCall | None`` (None: this act cannot be fused)."""
    return Kernel(kernel, fused=build, info=info)


def as_kernel(made: KernelFn | Kernel, **fields: Any) -> Kernel:
    """What a factory made (a plain function, or a Kernel when it says more) as a Kernel with ``fields``."""
    return dataclasses.replace(made, **fields) if isinstance(made, Kernel) else Kernel(made, **fields)


KernelFactory = Callable[[KernelCtx], "KernelFn | Kernel"]
_KERNELS: dict[tuple[str, str, str], KernelFactory] = {}
_PACKAGES = {"reference": "flowlab.kernels.reference", "numba": "flowlab.kernels.numba_cpu"}
_GPU_PACKAGE = "flowlab.kernels.numba_cuda"  # imported (numba.cuda with it) only when a gpu kernel is asked for


def register_kernel(op_type: str, impl: str, device: str = "cpu") -> Callable[[KernelFactory], KernelFactory]:
    if impl not in IMPLS:
        raise ValueError(f"kernel impl {impl!r} is not one of {IMPLS}")

    def wrap(factory: KernelFactory) -> KernelFactory:
        _KERNELS[(op_type, impl, device)] = factory
        return factory

    return wrap


def default_impl() -> str:
    """``FLOWLAB_KERNELS``: ``tiered`` (the default) runs a session's first call on the NumPy reference kernels
    and every later call on Numba's (kernels/tiered.py); ``numba`` runs Numba's only (every kernel compiled
    before its first act, the first call included: what benchmarks use); ``reference`` the NumPy ones only."""
    return get("kernels")


def get_kernel_factory(op_type: str, impl: str | None = None, device: str = "cpu") -> KernelFactory:
    """The factory registered for ``impl`` (default: FLOWLAB_KERNELS; the tiered mode's final tier is Numba)."""
    if device == "gpu":
        impl = impl or "numba"  # the GPU kernels are Numba's; FLOWLAB_KERNELS picks between the CPU modes
        importlib.import_module(_GPU_PACKAGE)
    impl = impl or default_impl()
    if impl == "tiered":
        impl = "numba"
    importlib.import_module(_PACKAGES["reference"])  # some kernels serve both implementations from there
    importlib.import_module(_PACKAGES[impl])
    try:
        return _KERNELS[(op_type, impl, device)]
    except KeyError:
        have = sorted(i for (t, i, d) in _KERNELS if t == op_type and d == device)
        raise KeyError(
            f"op {op_type!r} has no {impl} kernel for device {device!r}" + (f" (it has: {have})" if have else "")
        ) from None


_FLOAT_MESSAGE = r"(overflow|invalid value|divide by zero|underflow) encountered"
_KERNEL_MODULES = r"flowlab\.kernels(\.|$)"
_QUIET = ("ignore", re.compile(_FLOAT_MESSAGE, re.I), RuntimeWarning, re.compile(_KERNEL_MODULES), 0)


def quiet_float_warnings() -> None:
    """Silence NumPy's floating-point RuntimeWarnings raised on kernel lines. A kernel's 0/0 or overflow makes
    NaN and Inf values silently, as OneFlow's kernels and flowlab's Numba kernels do; NumPy's reference kernels
    would also warn, from flowlab's own lines, naming no op, and only in the tiers that run NumPy (the tiered mode's
    first call). NaN/Inf breakpoints and ``flow.debug.catch_nan`` name the op. The filter is appended,
    so a user's own (``-W error::RuntimeWarning``) wins; it is put back whenever kernels are made, because a
    ``warnings.catch_warnings()`` block around ``import flowlab`` (pytest's collection is one) drops it."""
    if _QUIET not in warnings.filters:
        warnings.filterwarnings("ignore", _FLOAT_MESSAGE, RuntimeWarning, _KERNEL_MODULES, append=True)


def make_kernel(op: OpConf, in_descs: Sequence[BlobDesc], out_descs: Sequence[BlobDesc],
                impl: str | None = None, device: str = "cpu", parallel: tuple[int, int] = (0, 1),
                phase: Any = None) -> Kernel:
    """One task's kernel; ``parallel`` is its (parallel_id, parallel_num). In the tiered mode (CPU only) a tiered
    Kernel: the reference kernel in the first call, Numba's (made on a background thread) in the calls after, as
    ``phase`` (the runtime's ``tiered.TierPhase``) says (kernels/tiered.py); nothing here imports Numba."""
    quiet_float_warnings()
    if device == "cpu" and (impl or default_impl()) == "tiered":
        from .tiered import tiered

        return tiered(op, in_descs, out_descs, functools.partial(make_kernel, parallel=parallel), phase)
    factory = get_kernel_factory(op.op_type, impl, device)
    tier = "reference" if device == "cpu" and (impl or default_impl()) == "reference" else "numba"
    ctx = KernelCtx(op, tuple(in_descs), tuple(out_descs), device, *parallel)
    if any(d.dtype == float16 for d in (*in_descs, *out_descs)):
        widen = _FLOAT16_WRAPPERS.get(device, _in_float32)  # no fused form: its calls would run float32 buffers
        return Kernel(widen(lambda c: as_kernel(factory(c)).fn, ctx), op.op_type, tier, device)
    return as_kernel(factory(ctx), op=op.op_type, tier=tier, device=device)


_FLOAT16_WRAPPERS: dict[str, Callable[[KernelFactory, KernelCtx], Any]] = {}


def register_float16_wrapper(device: str, wrap: Callable[[KernelFactory, KernelCtx], Any]) -> None:
    """How a device runs float16 acts through its float32 kernels (the GPU's casts run on the device; the CPU's
    is ``_in_float32``). The device's kernel package registers it when it is imported."""
    _FLOAT16_WRAPPERS[device] = wrap


def _in_float32(factory: Callable[[KernelCtx], KernelFn], ctx: KernelCtx) -> KernelFn:
    """A float16 act computed by the op's float32 kernel, in both modes: Numba has no float16 arithmetic, and
    NumPy's would round every intermediate to 11 bits (and differ from the Numba mode). float16 inputs are widened into
    buffers made once, outputs narrowed back; an input the kernel updates in place (an optimizer's variable and
    state, batch norm's moving statistics) is written back when it changed. Only float16 acts pay for this."""

    def widen(d: BlobDesc) -> BlobDesc:
        return BlobDesc(d.shape, float32) if d.dtype == float16 else d

    kernel = factory(dataclasses.replace(ctx, in_descs=tuple(map(widen, ctx.in_descs)),
                                         out_descs=tuple(map(widen, ctx.out_descs))))
    half_in = [i for i, d in enumerate(ctx.in_descs) if d.dtype == float16]
    half_out = [i for i, d in enumerate(ctx.out_descs) if d.dtype == float16]
    wide_in = {i: np.empty(ctx.in_descs[i].shape, np.float32) for i in half_in}
    wide_out = {i: np.empty(ctx.out_descs[i].shape, np.float32) for i in half_out}
    before = {i: np.empty(ctx.in_descs[i].shape, np.float32) for i in half_in}

    def half(ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]) -> None:
        for i in half_in:
            np.copyto(wide_in[i], ins[i])
            np.copyto(before[i], wide_in[i])
        kernel([wide_in.get(i, x) for i, x in enumerate(ins)], [wide_out.get(i, y) for i, y in enumerate(outs)])
        for i in half_out:
            np.copyto(outs[i], wide_out[i], casting="unsafe")
        for i in half_in:
            if not np.array_equal(wide_in[i], before[i], equal_nan=True):
                np.copyto(ins[i], wide_in[i], casting="unsafe")

    return half
