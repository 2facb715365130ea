"""The one place the CUDA kernels import ``numba.cuda``, plus what every CUDA kernel file shares: the launch
configuration, grids, flat views of device arrays, element strides for N-d indexing, and guarded math.

A CUDA kernel factory is called once per task, like a CPU one, and returns ``fn(ins, outs, stream)``: ``ins`` and
``outs`` are device arrays (``numba.cuda`` DeviceNDArrays, C-contiguous, the blob descs' shapes and dtypes) and
``stream`` a CUDA stream (or 0, the default stream). It only enqueues work on the stream, except where a kernel
must read data back to raise (out-of-range indices and labels, as kernels/checks.py requires).

Under ``NUMBA_ENABLE_CUDASIM=1`` kernels run as Python in Numba's simulator. Python's ``math`` raises where the GPU
returns inf or NaN (``math.exp(1000.0)``, ``math.log(0.0)``), so the kernels call the guarded ``exp``/``log``/``sqrt``
below, which give IEEE results on both.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from ..numba_cpu import _numba  # noqa: F401  (numba's cache directory is chosen before numba is imported)

cuda = importlib.import_module("numba.cuda")  # after _numba; numba-cuda's target when installed


@dataclass(frozen=True)
class Launch:
    """Launch configuration. ``threads``: the 1-D block size of elementwise, indexing and reduction kernels (a power
    of two: block reductions halve it); the GEMM's ``tile`` (a block computes tile x tile of the product),
    ``tile_k`` (the k-slice staged in shared memory per step) and ``micro`` (each thread computes micro x micro
    in registers: (tile / micro)^2 threads per block); ``max_blocks``: the most blocks a 1-D launch uses
    (kernels loop grid-stride past it)."""

    threads: int = 256
    tile: int = 64
    tile_k: int = 8
    micro: int = 4
    max_blocks: int = 4096

    def __post_init__(self) -> None:
        if self.threads < 1 or self.threads & (self.threads - 1):
            raise ValueError(f"Launch.threads must be a power of two, got {self.threads}")
        if min(self.tile, self.tile_k, self.micro, self.max_blocks) < 1 or self.tile % self.micro:
            raise ValueError(f"Launch: tile ({self.tile}), tile_k ({self.tile_k}), micro ({self.micro}) and "
                             f"max_blocks ({self.max_blocks}) must be positive, and tile a multiple of micro")


_LAUNCH = [Launch()]


def current_launch() -> Launch:
    """The configuration a factory binds when it is called (tests use tiny blocks: the simulator runs each CUDA
    thread as a Python thread)."""
    return _LAUNCH[-1]


@contextlib.contextmanager
def launch_config(**changes: int) -> Iterator[Launch]:
    """``with launch_config(threads=8, tile=4): make_kernel(..., device="gpu")``."""
    _LAUNCH.append(replace(_LAUNCH[-1], **changes))
    try:
        yield _LAUNCH[-1]
    finally:
        _LAUNCH.pop()


def blocks(n: int, threads: int, cap: int | None = None) -> int:
    """Ceil-div blocks for n items (at least 1), at most ``cap``."""
    b = max(1, -(-n // threads))
    return min(b, cap) if cap else b


def block_threads(n: int, threads: int, floor: int = 32) -> int:
    """Threads for a block that reduces n elements: the configured count, or the power of two that covers n when
    that is smaller (a 10-class softmax row needs no 256 threads), at least a warp (``floor``, 32) unless the
    configuration is smaller still."""
    fit = 1 << max(0, (n - 1).bit_length())
    return min(threads, max(fit, floor))


def flat(a):
    """A 1-D view of a C-contiguous device (or host) array."""
    return a.reshape(a.size)


def c_strides(shape: tuple[int, ...]) -> np.ndarray:
    """Element strides of a C-contiguous array of ``shape``."""
    strides = np.ones(max(len(shape), 1), np.int64)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides[:len(shape)] if shape else strides


def broadcast_strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> np.ndarray:
    """Element strides that read an array of ``shape`` broadcast (numpy's rules) to ``out_shape``: 0 along the
    axes it is broadcast over."""
    lead = len(out_shape) - len(shape)
    own = c_strides(shape)
    out = np.zeros(max(len(out_shape), 1), np.int64)
    for d in range(len(shape)):
        out[lead + d] = 0 if shape[d] == 1 and out_shape[lead + d] != 1 else own[d]
    return out


def shape_array(shape: tuple[int, ...]) -> np.ndarray:
    """A shape as an int64 array for kernels that unravel a flat index (a scalar's shape is (1,))."""
    return np.array(shape or (1,), np.int64)


def const(a: np.ndarray):
    """A small constant array (shapes, strides, tables) copied to the device once, when the factory runs."""
    return cuda.to_device(np.ascontiguousarray(a))


# Guarded math: the GPU's IEEE results, also in the simulator (see the module docstring).

@cuda.jit(device=True)
def exp(x):
    if x > 709.0:
        return math.inf
    return math.exp(x)


@cuda.jit(device=True)
def log(x):
    if x > 0 or x != x:
        return math.log(x)
    if x == 0:
        return -math.inf
    return math.nan


@cuda.jit(device=True)
def sqrt(x):
    if x >= 0 or x != x:
        return math.sqrt(x)
    return math.nan


@cuda.jit(device=True)
def gt_or_nan(a, b):
    """``a`` wins a max against ``b``: larger, or NaN (a NaN anywhere makes a max NaN, as in NumPy)."""
    return a > b or (a != a and b == b)


@cuda.jit(device=True)
def block_sum(shared, tid, value):
    """The sum of ``value`` over the block's threads (a shared-memory tree: no warp shuffles, which the simulator
    lacks). ``shared`` has one slot per thread; every thread gets the sum."""
    shared[tid] = value
    cuda.syncthreads()
    half = cuda.blockDim.x // 2
    while half > 0:
        if tid < half:
            shared[tid] += shared[tid + half]
        cuda.syncthreads()
        half //= 2
    total = shared[0]
    cuda.syncthreads()  # the slots are free again for the caller's next reduction
    return total


@cuda.jit(device=True)
def block_max(shared, tid, value):
    """The max (NaN-propagating) of ``value`` over the block's threads; every thread gets it."""
    shared[tid] = value
    cuda.syncthreads()
    half = cuda.blockDim.x // 2
    while half > 0:
        if tid < half and gt_or_nan(shared[tid + half], shared[tid]):
            shared[tid] = shared[tid + half]
        cuda.syncthreads()
        half //= 2
    total = shared[0]
    cuda.syncthreads()
    return total


@cuda.jit
def _first_out_of_range(ids, n, bad):
    # bad[0]: the smallest flat position holding an index outside [0, n) (ids.size when none)
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, ids.size, step):
        v = ids[i]
        if v < 0 or v >= n:
            cuda.atomic.min(bad, 0, i)


def first_out_of_range(ids, n: int, stream, threads: int, scratch) -> int:
    """checks.first_out_of_range on the device: the first bad flat position of device ``ids``, or -1. Reads one
    integer back (a sync on ``stream``), so the kernel can raise before it writes anything. ``scratch``: a 1-element
    int64 device array owned by the calling kernel."""
    if ids.size == 0:
        return -1
    flat_ids = flat(ids)
    scratch.copy_to_device(np.array([ids.size], np.int64), stream=stream)
    _first_out_of_range[blocks(ids.size, threads, current_launch().max_blocks), threads, stream](flat_ids, n, scratch)
    bad = int(read_back(scratch, stream)[0])
    return -1 if bad >= ids.size else bad


def read_back(a, stream) -> np.ndarray:
    """``a`` on the host, complete: a copy on a stream is asynchronous, so wait for the stream before reading."""
    host = a.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    return host


def launch1(kernel, n: int, threads: int, stream, *args) -> None:
    """A 1-D grid-stride launch over n items (nothing for n == 0: a zero-block grid is invalid)."""
    if n:
        kernel[blocks(n, threads, current_launch().max_blocks), threads, stream](*args)


__all__ = ["Launch", "block_max", "block_sum", "block_threads", "blocks", "broadcast_strides", "c_strides", "const",
           "cuda", "current_launch", "exp", "first_out_of_range", "flat", "gt_or_nan", "launch1", "launch_config",
           "log", "read_back", "shape_array", "sqrt"]
