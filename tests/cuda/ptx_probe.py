"""Type-check every CUDA kernel by compiling it to PTX for compute capability 9.0, without a GPU and without the
simulator (which runs kernels as Python and accepts code the GPU compiler rejects).

Run as ``python -m tests.cuda.ptx_probe`` with ``NUMBA_ENABLE_CUDASIM`` unset or 0 (test_ptx.py does). It drives
every op's sample through its GPU kernel with device memory replaced by host arrays and each kernel launch replaced
by ``cuda.compile_ptx(kernel, <the launch's argument types>, cc=(9, 0))``, so every kernel is compiled with the
types a real launch gives it. Prints one JSON line: {"skip": reason} where NVVM/NVRTC are not importable (numba-cuda's
[cu12] wheels), else {"compiled": n, "failures": [...]}.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from types import SimpleNamespace

import numpy as np

DTYPES = (np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8)


class HostArray(np.ndarray):
    """A device array stand-in: the copy methods of DeviceNDArray, on host memory."""

    def copy_to_device(self, ary, stream=0):
        self[...] = np.asarray(ary).reshape(self.shape)

    def copy_to_host(self, ary=None, stream=0):
        if ary is None:
            return np.array(self)
        ary[...] = self
        return ary


def _host(a) -> HostArray:
    return np.array(a).view(HostArray)


def main() -> dict:
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return {"skip": "NUMBA_ENABLE_CUDASIM is set: the PTX check must run without the simulator"}
    import numba
    from numba import cuda

    if cuda.implementation != "NVIDIA":
        return {"skip": f"numba.cuda is the {cuda.implementation} target, not numba-cuda (pip install flowlab[cuda])"}
    import numba.cuda.compiler as compiler
    import numba.cuda.dispatcher as dispatcher

    # compile_device asks the current device for its compute capability; there is none here (the reference's
    # workaround, shared/reference/numba-cuda.md A6.2)
    fake_device = SimpleNamespace(compute_capability=(9, 0))
    dispatcher.get_current_device = compiler.get_current_device = lambda: fake_device

    @cuda.jit
    def _probe(x):
        x[0] = 1.0

    try:
        cuda.compile_ptx(_probe.py_func, (numba.float32[::1],), cc=(9, 0))
    except Exception as e:  # whatever the toolkit lookup raises, the check cannot run
        return {"skip": f"cannot compile PTX here (NVVM/NVRTC not importable: pip install flowlab[cuda]): "
                        f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}

    compiled: dict[tuple, str | None] = {}
    current: list[str] = [""]

    def arg_type(a):
        if isinstance(a, np.ndarray):
            return numba.types.Array(numba.from_dtype(a.dtype), a.ndim, "C")
        return numba.typeof(a)

    class Launch:
        def __init__(self, kernel) -> None:
            self.kernel = kernel

        def __call__(self, *args):
            sig = tuple(arg_type(a) for a in args)
            key = (id(self.kernel), sig)
            if key not in compiled:
                try:
                    cuda.compile_ptx(self.kernel.py_func, sig, cc=(9, 0), opt=False)  # typing is the check
                    compiled[key] = None
                except Exception as e:  # reported, with the op and types that failed
                    compiled[key] = (f"{current[0]}: kernel {self.kernel.py_func.__qualname__}{sig}: "
                                     f"{type(e).__name__}: {str(e)[:600]}")

    dispatcher.CUDADispatcher.__getitem__ = lambda self, config: Launch(self)
    cuda.to_device = lambda a, stream=0: _host(a)
    cuda.device_array = lambda shape, dtype=np.float64, stream=0: np.zeros(shape, dtype).view(HostArray)
    cuda.stream = lambda: SimpleNamespace(synchronize=lambda: None)

    from flowlab.ops.registry import get_op_def
    from tests.cuda.helpers import run
    from tests.ops.op_samples import SAMPLES, data_args, sample

    errors = []
    for op_type in sorted(SAMPLES):
        accepted = get_op_def(op_type).dtypes
        for dt in DTYPES:
            inputs, attrs = sample(op_type, dt)
            args = data_args(op_type, inputs, dt)
            if dt is not np.float32 and (not args or any(np.dtype(dt) not in {d.np for d in accepted[a]}
                                                         for a in args)):
                continue  # a dtype the op refuses, or an op without data arguments (one float32 run is enough)
            current[0] = f"{op_type} ({np.dtype(dt).name})"
            try:
                run(op_type, inputs, attrs, "gpu")
            except Exception:  # reported with its op and dtype
                errors.append(f"{current[0]}: {traceback.format_exc(limit=3)[-600:]}")
    failures = [v for v in compiled.values() if v] + errors
    return {"compiled": len(compiled), "failures": failures}


if __name__ == "__main__":
    print(json.dumps(main()))
    sys.stdout.flush()
