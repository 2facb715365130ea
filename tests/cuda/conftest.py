"""CUDA kernel tests run in Numba's CUDA simulator unless told otherwise: ``NUMBA_ENABLE_CUDASIM`` must be set
before Numba is first imported (tests/conftest.py sets the same default for a whole-suite run). On a GPU machine:
``NUMBA_ENABLE_CUDASIM=0 pytest tests/cuda``."""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest

from flowlab.kernels import cuda_available

PTX_TEST = "test_every_cuda_kernel_compiles_to_ptx_for_sm90"


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: start the probe only when its test runs
def pytest_collection_modifyitems(config, items):
    # not in a pytest-xdist worker: each would start its own; the test starts one where it runs instead
    if any(item.name == PTX_TEST for item in items) and not os.environ.get("PYTEST_XDIST_WORKER"):
        # the PTX check is a separate process (~150 compiles): start it now, so it runs beside the simulator tests
        from tests.helpers.ptx import start_probe

        config._flowlab_ptx_probe = start_probe()
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device and the simulator is off (Numba was imported before "
                                   "NUMBA_ENABLE_CUDASIM=1 was set, or it was set to 0)")
    for item in items:
        if "tests/cuda/" in str(item.fspath).replace(os.sep, "/") and "ptx" not in item.name \
                and "device_views" not in str(item.fspath):
            item.add_marker(skip)


def pytest_unconfigure(config):
    proc = getattr(config, "_flowlab_ptx_probe", None)
    if proc is not None and proc.poll() is None:  # the run stopped before the PTX test collected it
        proc.kill()
        proc.wait()
