"""Kernels per (op type, implementation, device); implementations load on first use, Numba included (in the default
tiered mode on a background thread: tiered.py)."""

from .registry import (
    IMPLS,
    Kernel,
    KernelCtx,
    KernelFn,
    default_impl,
    get_kernel_factory,
    make_kernel,
    quiet_float_warnings,
    register_kernel,
)

quiet_float_warnings()


def cuda_available() -> bool:
    """Whether GPU kernels can run here: a CUDA driver and device, or Numba's simulator (``NUMBA_ENABLE_CUDASIM=1``
    set before Numba is first imported). Imports ``numba.cuda`` (lazily: only this call and GPU kernels do)."""
    try:
        from .numba_cuda._cuda import cuda
    except ImportError:  # pragma: no cover - numba.cuda can fail to import where numba itself works
        return False
    return bool(cuda.is_available())


def cuda_device_count() -> int:
    """CUDA devices visible here (the simulator has one)."""
    from .numba_cuda._cuda import cuda

    return len(cuda.gpus)


__all__ = ["IMPLS", "Kernel", "KernelCtx", "KernelFn", "cuda_available", "cuda_device_count", "default_impl",
           "get_kernel_factory", "make_kernel", "quiet_float_warnings", "register_kernel"]
