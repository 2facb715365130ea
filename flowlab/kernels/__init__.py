"""Kernels per (op type, implementation, device); implementations load on first use, Numba included."""

from .registry import IMPLS, KernelCtx, KernelFn, default_impl, get_kernel_factory, make_kernel, register_kernel

__all__ = ["IMPLS", "KernelCtx", "KernelFn", "default_impl", "get_kernel_factory", "make_kernel", "register_kernel"]
