"""Every CUDA kernel against the NumPy reference kernel, in Numba's CUDA simulator (or on a GPU with
NUMBA_ENABLE_CUDASIM=0): each op's sample (tests/ops/op_samples.py, which covers every op type) in every dtype the
op accepts among float32, float64, float16 and int32, with 8-thread blocks and 4x4 GEMM tiles (2x2 per thread), so
even the small samples span several blocks and the bounds guards cut partial ones."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from flowlab.kernels import registry
from flowlab.ops.registry import get_op_def
from tests.ops.op_samples import SAMPLES, data_args, sample

from .helpers import run

DTYPES = (np.float32, np.float64, np.float16, np.int32)
TOL = {np.float32: (2e-5, 2e-6), np.float64: (1e-12, 1e-13)}


def _cases():
    for op_type in sorted(SAMPLES):
        accepted = get_op_def(op_type).dtypes
        for dt in DTYPES:
            inputs, _ = sample(op_type, dt)
            args = data_args(op_type, inputs, dt)
            if dt is not np.float32 and (not args or any(np.dtype(dt) not in {d.np for d in accepted[a]}
                                                         for a in args)):
                continue
            yield pytest.param(op_type, dt, id=f"{op_type}-{np.dtype(dt).name}")


@pytest.fixture
def small_blocks():
    from flowlab.kernels.numba_cuda import launch_config

    with launch_config(threads=8, tile=4, tile_k=4, micro=2, max_blocks=64) as launch:
        yield launch


def assert_same(gpu: list[np.ndarray], cpu: list[np.ndarray], dt) -> None:
    assert len(gpu) == len(cpu)
    for i, (g, c) in enumerate(zip(gpu, cpu)):
        assert g.dtype == c.dtype and g.shape == c.shape, f"output {i}: {g.dtype}{g.shape} vs {c.dtype}{c.shape}"
        if g.dtype.kind in "iu" or dt in (np.int32, np.float16):
            # integers exactly; float16 computes in float32 on both sides and rounds the same way
            np.testing.assert_array_equal(g, c, err_msg=f"output {i}")
        else:
            rtol, atol = TOL[dt]
            np.testing.assert_allclose(g, c, rtol=rtol, atol=atol, err_msg=f"output {i}")


@pytest.mark.parametrize("op_type, dt", list(_cases()))
def test_cuda_kernel_matches_the_reference(op_type, dt, small_blocks):
    inputs, attrs = sample(op_type, dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the reference's own overflow/invalid warnings
        expected = run(op_type, inputs, attrs, "cpu")
        got = run(op_type, inputs, attrs, "gpu")
    assert_same(got, expected, dt)


def test_every_op_with_a_cpu_kernel_has_a_cuda_kernel():
    import flowlab.kernels.numba_cpu
    import flowlab.kernels.numba_cuda  # noqa: F401

    cpu = {t for (t, impl, device) in registry._KERNELS if device == "cpu"}
    gpu = {t for (t, impl, device) in registry._KERNELS if device == "gpu"}
    assert cpu, "no CPU kernels registered"
    assert sorted(cpu - gpu) == []
    assert sorted(SAMPLES) == sorted(cpu)  # and the sample table above tests every one of them


def test_cuda_available_in_the_simulator_or_on_a_gpu():
    from flowlab.kernels import cuda_available

    assert cuda_available()


def test_launch_config_is_validated_and_scoped():
    from flowlab.kernels.numba_cuda import Launch, current_launch, launch_config

    default = current_launch()
    with launch_config(threads=16, tile=8) as launch:
        assert (current_launch().threads, current_launch().tile) == (16, 8) == (launch.threads, launch.tile)
    assert current_launch() == default
    with pytest.raises(ValueError, match="power of two, got 12"):
        Launch(threads=12)
    with pytest.raises(ValueError, match="tile a multiple of micro"):
        Launch(tile=6, micro=4)


def test_cpu_njit_kernels_are_unaffected_by_the_simulator():
    """NUMBA_ENABLE_CUDASIM=1 leaves @njit alone: the Numba CPU kernels still compile natively and agree with the
    reference (numba-cuda.md A2)."""
    import numba

    from flowlab.kernels.numba_cpu.math import _add

    if not numba.config.ENABLE_CUDASIM:
        pytest.skip("the simulator is off here")
    a, b, out = np.arange(5.0), np.ones(5), np.zeros(5)
    _add(a, b, out)
    np.testing.assert_array_equal(out, a + 1)
    assert _add.signatures and _add.nopython_signatures  # compiled to machine code, not run as Python


def test_cpu_runs_never_import_numba_cuda():
    """numba.cuda (0.2-0.3 s, and numba-cuda's driver lookup) is imported only when a GPU kernel is asked for."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, flowlab as flow, flowlab.typing as tp\n"
            "@flow.global_function()\n"
            "def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:\n"
            "    return flow.math.relu(x)\n"
            "assert (job(np.ones((2, 3), np.float32)) == 1).all()\n"
            "print('numba' in sys.modules, 'numba.cuda' in sys.modules)\n")
    import os

    # Numba's CPU kernels from the first act (the tiered default's one call would not import Numba at all)
    env = dict(os.environ, FLOWLAB_KERNELS="numba")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["True", "False"]
