"""CUDA kernel tests run in Numba's CUDA simulator unless told otherwise: ``NUMBA_ENABLE_CUDASIM`` must be set
before Numba is first imported (tests/conftest.py sets the same default for a whole-suite run). On a GPU machine:
``NUMBA_ENABLE_CUDASIM=0 pytest tests/cuda``."""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest

from flowlab.kernels import cuda_available


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device and the simulator is off (Numba was imported before "
                                   "NUMBA_ENABLE_CUDASIM=1 was set, or it was set to 0)")
    for item in items:
        if "tests/cuda/" in str(item.fspath).replace(os.sep, "/") and "ptx" not in item.name:
            item.add_marker(skip)
