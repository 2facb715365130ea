"""Every test gets a fresh default session and default process config."""

from __future__ import annotations

import os

import pytest

# Fused segments compile in the calling thread, so that a test's calls past fusion run the compiled segment (the
# replay proof is about it); tests/test_fused_background.py tests the background compile the default uses.
os.environ.setdefault("FLOWLAB_FUSE_BACKGROUND", "0")

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
