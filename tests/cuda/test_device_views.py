"""Registers in device memory are views of their block's device array (runtime/regst.py blob_view): checked on
numba-cuda's own DeviceNDArray in a process without the simulator (tests/cuda/device_view_probe.py), on a GPU by
writing through each view and reading the block's bytes, elsewhere by the address, shape, strides and byte count
that a launch and a copy read off the view."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_a_blob_view_of_a_device_arena_is_numba_cudas_device_array_at_the_blobs_byte_offset():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tests.cuda.device_view_probe"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(result["skip"])
    assert result["failures"] == []
    assert result["checked"] == 7
