"""Differential fuzzing (issue 9): random job graphs through the whole runtime, against a NumPy interpreter.

Each example is a random well-typed program (generators.py) and two sets of inputs with special values (NaN,
+-inf, +-0, huge, denormal). flowlab runs it act by act (protocol), replayed (fused in one example of eight;
four in the long run), and with the reference kernels; every result must agree with the oracle (oracle.py).
The default run is 200 fixed examples (derandomized, so CI is reproducible); ``pytest -m long tests/fuzz`` runs
2,000 fresh ones.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .generators import programs
from .programs import input_arrays
from .runner import check_program

# The reference kernels follow NumPy's error model on NaN/Inf/huge inputs (x / 0 is inf): its warnings are expected.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SETTINGS = {"deadline": None, "suppress_health_check": list(HealthCheck), "database": None}


def _check(data: st.DataObject, fuse_one_in: int = 4) -> None:
    program = data.draw(programs(), label="program")
    inputs = [data.draw(input_arrays(program), label=f"inputs {k}") for k in range(2)]
    # fusing compiles one Numba function per program (runner.py's docstring): only some programs are fused
    fuse = data.draw(st.integers(0, fuse_one_in - 1), label="fuse (0) or replay only") == 0
    check_program(program, inputs, ("protocol", "fused" if fuse else "replayed", "reference"))


@settings(max_examples=200, derandomize=True, **SETTINGS)
@given(data=st.data())
def test_random_programs_match_the_numpy_oracle(data: st.DataObject) -> None:
    _check(data, fuse_one_in=8)  # 25 fused programs: a cold Numba cache compiles each in about a second


@pytest.mark.long
@settings(max_examples=2000, **SETTINGS)
@given(data=st.data())
def test_random_programs_match_the_numpy_oracle_long(data: st.DataObject) -> None:
    _check(data)
