"""The PTX type-check (tests/cuda/ptx_probe.py): every CUDA kernel compiled for compute capability 9.0 with the
argument types of its real launches, in a process without the simulator (which would accept code the GPU compiler
rejects). Skipped, with the reason, where numba-cuda's toolkit wheels (NVVM, NVRTC: ``pip install flowlab[cuda]``)
are not importable."""

from __future__ import annotations

import json

import pytest

from tests.helpers.ptx import start_probe


def test_every_cuda_kernel_compiles_to_ptx_for_sm90(request):
    # started by conftest.py at collection, so it runs while the simulator tests do
    proc = getattr(request.config, "_flowlab_ptx_probe", None) or start_probe()
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    result = json.loads(stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(result["skip"])
    assert result["failures"] == []
    assert result["compiled"] >= 100  # every kernel, once per distinct argument types
