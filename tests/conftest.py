"""Every test gets a fresh default session and default process config."""

from __future__ import annotations

import pytest

import flowlab as flow
from flowlab.frontend import scope


@pytest.fixture(autouse=True)
def fresh_session():
    flow.clear_default_session()
    scope.ENV.cpu_device_num, scope.ENV.debug_mode = 1, False
    yield
    flow.clear_default_session()
    scope.ENV.cpu_device_num, scope.ENV.debug_mode = 1, False


@pytest.fixture(params=["reference", "numba"])
def kernel_impl(request, monkeypatch):
    """Run a test under both kernel implementations (FLOWLAB_KERNELS)."""
    monkeypatch.setenv("FLOWLAB_KERNELS", request.param)
    return request.param
