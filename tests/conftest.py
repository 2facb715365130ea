"""Every test gets a fresh default session and default process config."""

from __future__ import annotations

import os

import pytest

# The suite runs the configuration users run (issue 25): the tiered kernels (a session's first call on the NumPy
# reference kernels, every later call on Numba's: kernels/tiered.py) and fused segments compiled in the background.
# Neither depends on timing for its bits (tests/runtime/test_tiered_reproducible.py,
# tests/runtime/test_default_configuration.py).
# A test that must see a compiled segment at a given call asks for ``fuse_in_call``; one about a pinned kernel
# mode sets FLOWLAB_KERNELS itself (``kernel_impl``).
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


@pytest.fixture
def fuse_in_call(monkeypatch):
    """Fused segments compiled in the call that fuses (FLOWLAB_FUSE_BACKGROUND=0), for a test that asserts the
    compiled segment or the generated call ran by a given call: in the background, which call first runs it
    depends on timing (its results do not: tests/replay/test_fused_background.py)."""
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "0")
