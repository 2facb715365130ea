"""runtime/regst.py's blob views on numba-cuda's own DeviceNDArray, not the simulator's stand-in.

A register in device memory is ``arena[start:start + nbytes].view(dtype).reshape(shape)`` over the block's one
uint8 device array (regst.blob_view). Run as ``python -m tests.cuda.device_view_probe`` with
``NUMBA_ENABLE_CUDASIM=0`` (test_device_views.py does). On a GPU it allocates a real arena, writes each view
through ``copy_to_device`` and reads the arena's bytes back. Without one it builds the same DeviceNDArray over a
made-up device address (numba-cuda's MemoryPointer, no allocation) with the context check switched off, and checks
what a launch and a copy read off the array: the device address, shape, strides, dtype and the byte count copies
use (``alloc_size``). Prints one JSON line: {"checked": n, "failures": [...], "gpu": bool} or {"skip": why}.
"""

from __future__ import annotations

import contextlib
import json
import os

import numpy as np

CASES = [  # (start, dtype, shape): blob offsets are 64-byte aligned (compiler/memory.py)
    (0, np.float32, (3, 4)),
    (64, np.float64, (2, 3, 5)),
    (384, np.int32, (7,)),
    (448, np.float16, (2, 5)),
    (512, np.float32, (1,)),
    (576, np.float32, ()),
    (640, np.int8, (3, 1, 2)),
]
SIZE = 1024


def main() -> dict:
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return {"skip": "NUMBA_ENABLE_CUDASIM is set: this probe is about numba-cuda's real device arrays"}
    from flowlab.kernels.numba_cuda._cuda import cuda
    from flowlab.runtime.regst import blob_view

    if getattr(cuda, "implementation", "") != "NVIDIA":
        return {"skip": f"numba.cuda is the {getattr(cuda, 'implementation', '?')} target, not numba-cuda"}
    from numba.cuda.cudadrv import devices, driver
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    gpu = bool(cuda.is_available())
    if gpu:
        arena = cuda.to_device(np.zeros(SIZE, np.uint8))
    else:  # no driver: no context to ask for, and a device address no one dereferences
        devices._runtime.ensure_context = contextlib.nullcontext
        pointer = driver.binding.CUdeviceptr(0x7F00_0000_0000)
        arena = DeviceNDArray((SIZE,), (1,), np.uint8, gpu_data=driver.MemoryPointer(None, pointer, SIZE))
    base = arena.device_ctypes_pointer.value
    failures = []
    rng = np.random.default_rng(0)
    for start, dtype, shape in CASES:
        dtype = np.dtype(dtype)
        want = np.empty(shape, dtype)
        nbytes = want.nbytes
        view = blob_view(arena, start, nbytes, dtype, shape)
        got = (type(view).__name__, view.shape, view.strides, view.dtype, view.device_ctypes_pointer.value - base,
               view.alloc_size, view.is_c_contiguous())
        expect = ("DeviceNDArray", shape, want.strides, dtype, start, nbytes, True)
        if got != expect:
            failures.append(f"{dtype}{list(shape)} at {start}: got {got}, expected {expect}")
            continue
        if gpu:
            values = np.asarray(rng.integers(-100, 100, shape), dtype=dtype)
            view.copy_to_device(values)
            back = arena.copy_to_host()[start:start + nbytes]
            if back.tobytes() != values.tobytes() or not np.array_equal(view.copy_to_host(), values):
                failures.append(f"{dtype}{list(shape)} at {start}: the arena's bytes are not the values written")
    return {"checked": len(CASES), "failures": failures, "gpu": gpu}


if __name__ == "__main__":
    try:
        result = main()
    except Exception as err:  # reported as a failure with its type, not a traceback the test cannot read
        result = {"checked": 0, "failures": [f"{type(err).__name__}: {err}"], "gpu": None}
    print(json.dumps(result))
