"""``--isa avx2``: rerun a benchmark in a subprocess whose libraries are all restricted to AVX2, to time an AVX2
machine on an AVX-512 one (issue 28 asks for both). The variables are read by the libraries as they load, so they
are set in a fresh process, never in this one:

- Numba: the Haswell target with Haswell's own features (NUMBA_CPU_NAME alone keeps the host's, AVX-512
  included; the empty NUMBA_CPU_FEATURES drops them), in a cache directory of its own (Numba keys its cache by
  target, but flowlab's conv and matmul autotune files key theirs by the host's CPU name): a fresh one, or with
  FLOWLAB_CACHE_DIR set, its subdirectory named by the ISA;
- OpenBLAS (NumPy's and SciPy's): the Haswell kernels (OPENBLAS_CORETYPE);
- torch: ATen's AVX2 kernels (ATEN_CPU_CAPABILITY), oneDNN's convolutions at most AVX2 (ONEDNN_MAX_CPU_ISA),
  MKL's SGEMM (torch's linear layers) at most AVX2 (MKL_ENABLE_INSTRUCTIONS).

The child checks that each took (``describe``) and prints it on the CPU line; a restriction that did not take stops
the run. Checked by hand once: ONEDNN_VERBOSE=1 names LeNet's conv "jit:avx2" and MKL_VERBOSE=1 "Intel(R) AVX2".
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

ISAS = {
    "avx2": {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": "", "OPENBLAS_CORETYPE": "Haswell",
             "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
}
CHILD = "BENCH_ISA"  # set in the child: the ISA it runs under


def rerun_restricted() -> None:
    """With ``--isa NAME`` on the command line (and not already the child), run this script again without it, in
    a subprocess with NAME's environment and a fresh flowlab cache, and exit with its status."""
    if "--isa" not in sys.argv or CHILD in os.environ:
        return
    at = sys.argv.index("--isa")
    isa = sys.argv[at + 1] if at + 1 < len(sys.argv) else ""
    if isa not in ISAS:
        raise SystemExit(f"--isa: expected one of {sorted(ISAS)}, got {isa!r}")
    argv = sys.argv[:at] + sys.argv[at + 2:]
    with tempfile.TemporaryDirectory(prefix=f"flowlab-{isa}-") as fresh:
        # a FLOWLAB_CACHE_DIR given: its subdirectory named by the ISA, kept for the next run (compiled once)
        cache = os.path.join(os.environ["FLOWLAB_CACHE_DIR"], isa) if os.environ.get("FLOWLAB_CACHE_DIR") else fresh
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # Numba's follows flowlab's
        env.update(ISAS[isa], FLOWLAB_CACHE_DIR=cache, **{CHILD: isa})
        raise SystemExit(subprocess.run([sys.executable, *argv], env=env).returncode)


def describe() -> str:
    """In the child: the restriction as each library reports it (empty outside one); SystemExit if one did not
    take."""
    isa = os.environ.get(CHILD)
    if not isa:
        return ""
    import torch
    from threadpoolctl import threadpool_info

    from flowlab.kernels.numba_cpu.microgemm import MR, target_vector_bytes

    blas = sorted({str(i.get("architecture")) for i in threadpool_info() if i.get("internal_api") == "openblas"})
    seen = {"Numba's vectors": target_vector_bytes(), "torch": torch.backends.cpu.get_cpu_capability(),
            "OpenBLAS": blas}
    if seen != {"Numba's vectors": 32, "torch": "AVX2", "OpenBLAS": ["Haswell"]}:
        raise SystemExit(f"--isa {isa}: a restriction did not take: {seen}")
    return (f"; restricted to {isa.upper()}: Numba target {os.environ['NUMBA_CPU_NAME']} (32-byte vectors, "
            f"micro-kernel {MR} rows), torch {seen['torch']}, oneDNN <= {os.environ['ONEDNN_MAX_CPU_ISA']}, MKL <= "
            f"{os.environ['MKL_ENABLE_INSTRUCTIONS']}, OpenBLAS {'/'.join(blas)}")
