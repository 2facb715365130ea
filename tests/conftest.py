"""Every test gets a fresh default session and default process config."""

from __future__ import annotations

import os

import pytest

# Fused segments compile in the calling thread, so that a test's calls past fusion run the compiled segment (the
# replay proof is about it); tests/test_fused_background.py tests the background compile the default uses.
os.environ.setdefault("FLOWLAB_FUSE_BACKGROUND", "0")
# One kernel tier per run: the default tiered mode switches each task from the reference kernel to Numba's when a
# background compile finishes, so results would depend on timing; tests/test_tiered.py tests that mode.
os.environ.setdefault("FLOWLAB_KERNELS", "numba")
# tests/cuda runs the CUDA kernels in Numba's simulator unless NUMBA_ENABLE_CUDASIM=0 (a GPU machine); Numba reads
# the flag on its first import, and it leaves the CPU @njit kernels as they are.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import flowlab as flow
from flowlab.frontend import scope


@pytest.fixture(autouse=True)
def fresh_session():
    flow.clear_default_session()
    scope.ENV.reset()
    yield
    flow.clear_default_session()
    scope.ENV.reset()


@pytest.fixture(params=["reference", "numba"])
def kernel_impl(request, monkeypatch):
    """Run a test under both kernel implementations (FLOWLAB_KERNELS)."""
    monkeypatch.setenv("FLOWLAB_KERNELS", request.param)
    return request.param
