"""Differential fuzzing (issue 9): random job graphs through the whole runtime, against a NumPy interpreter.

Each example is a random well-typed program (generators.py) and two sets of inputs with special values (NaN,
+-inf, +-0, huge, denormal). flowlab runs it act by act (protocol), replayed (fused in one example of eight;
four in the long run), and with the reference kernels; every result must agree with the oracle (oracle.py).
The default run is 200 fixed examples (derandomized, so CI is reproducible); ``pytest -m long tests/fuzz`` runs
2,000 fresh ones. The default configuration (no FLOWLAB_* variable: tiered kernels, fusion compiled in the
background) runs 25 more, each call bit for bit the reference run's (call 0) or the Numba run's (every later call).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .generators import programs
from .programs import input_arrays
from .runner import FUSED_CALLS, check_program

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


def _bits(results: list) -> list[list[bytes]]:
    return [[np.ascontiguousarray(a).tobytes() for a in outs] for _, outs in results]


@settings(max_examples=25, derandomize=True, **SETTINGS)
@given(data=st.data())
def test_random_programs_in_the_default_configuration(data: st.DataObject) -> None:
    """The configuration a user runs, against the oracle and, bit for bit, against the pinned kernel modes: which
    tier a call runs depends only on its index (kernels/tiered.py), and a segment switching in when its background
    compile ends changes no bit."""
    program = data.draw(programs(), label="program")
    inputs = [data.draw(input_arrays(program), label=f"inputs {k}") for k in range(2)]
    results = check_program(program, inputs, ("default", "fused", "reference"))
    default, numba, reference = (_bits(results[mode]) for mode in ("default", "fused", "reference"))
    assert len(default) == len(numba) == FUSED_CALLS
    assert default[0] == reference[0], "the default configuration's first call is not the reference kernels'"
    for call in range(1, FUSED_CALLS):
        assert default[call] == numba[call], f"call {call} is not the Numba kernels' bit for bit"
