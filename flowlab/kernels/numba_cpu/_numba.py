"""The one place flowlab imports Numba: the cache directory is chosen before the import.

Numba keys a cached kernel on its own file only, so an edit to a callee in another file, or to the compile
options here, would reuse a stale kernel (a pitfall measured in shared/reference/numba-performance.md). The
directory is therefore named by flowlab's version and a digest of every Numba kernel source file.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from ..._version import __version__
from ...flags import get


@functools.cache  # read once a process: cache_dir() is asked per conv kernel build and per fused segment
def kernel_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def cache_dir() -> Path:
    base = get("cache_dir") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "flowlab"
    )
    return Path(base) / f"numba-{__version__}-{kernel_digest()}"


os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir()))

import numba  # noqa: E402

if numba.config.CACHE_DIR != os.environ["NUMBA_CACHE_DIR"]:  # numba was imported before flowlab
    numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]


def compile_target() -> tuple[str, str]:
    """The CPU name and features Numba compiles for, as its codegen takes them (NUMBA_CPU_NAME / NUMBA_CPU_FEATURES,
    else the host's)."""
    import llvmlite.binding as llvm
    from numba.core.codegen import get_host_cpu_features

    features = numba.config.CPU_FEATURES
    return (numba.config.CPU_NAME or llvm.get_host_cpu_name(),
            features if features is not None else get_host_cpu_features())


@functools.cache
def target_cpu() -> str:
    """The CPU Numba compiles for (``compile_target``) as a key. The choices flowlab measures per machine
    (conv_autotune.json, matmul_choice.json) are keyed by it: a process compiling for AVX2 on an AVX-512 host
    measures its own instead of reading the host's. The host's own target is its bare name, the key those files
    have always used."""
    import llvmlite.binding as llvm

    host = llvm.get_host_cpu_name()
    if numba.config.CPU_NAME in (None, host) and numba.config.CPU_FEATURES is None:
        return host
    name, features = compile_target()
    return f"{name}[{hashlib.sha256(f'{name} {features}'.encode()).hexdigest()[:8]}]"


def njit(fn=None, **kwargs):
    """``numba.njit(cache=True, error_model="numpy", nogil=True)``; every flowlab kernel goes through here.

    error_model="numpy": x / 0 gives inf or nan as in NumPy and OneFlow (Numba's default raises).

    nogil=True: a kernel runs without the GIL, so the actors of two Plan threads (two CPU devices) compute on
    two cores at once (runtime/threads.py); tests/runtime/test_nogil.py proves two kernels overlap.

    A kernel must not assign an array into a slice (``out[:] = x[0]``, ``y.ravel()[:] = np.exp(x)``): Numba
    compiles its formatted shape-mismatch error for that, string formatting included, which took 5-14 s of a
    fresh process's first compile (and is never cached on its own). Write the loop, or use a ufunc's ``out``
    argument (``np.exp(x, y)``). tests/runtime/test_startup.py checks every kernel file for it.
    """
    kwargs.setdefault("cache", True)
    kwargs.setdefault("error_model", "numpy")
    kwargs.setdefault("nogil", True)
    if fn is None:
        return lambda f: numba.njit(**kwargs)(f)
    return numba.njit(**kwargs)(fn)
