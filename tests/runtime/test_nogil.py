"""Numba CPU kernels release the GIL (issue 11: two CPU devices use two cores).

The proof does not time anything: two threads each run a kernel that raises its own flag and then spins until
it sees the other's. Under the GIL the first kernel to start holds it while it spins, so the second cannot begin
and the first gives up when its bounded spin runs out (the test fails, it does not hang); without the GIL both
run at once and each sees the other.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

import numpy as np

import flowlab.kernels.numba_cpu as numba_cpu
from tests.helpers.nogil import SPIN_LIMIT, _meet


def test_two_kernels_on_two_threads_run_at_the_same_time() -> None:
    flags = np.zeros(4, np.int64)
    _meet(np.ones(4, np.int64), 0, 1, 1)  # compile first: a compile holds the GIL
    seen: dict[int, bool] = {}

    def run(me: int) -> None:
        seen[me] = _meet(flags, me, 1 - me, SPIN_LIMIT)

    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert seen == {0: True, 1: True}, "a kernel spun out without seeing the other: they did not run at once"


def test_every_numba_cpu_kernel_is_compiled_without_the_gil() -> None:
    dispatchers = []
    for info in pkgutil.iter_modules(numba_cpu.__path__):
        module = importlib.import_module(f"{numba_cpu.__name__}.{info.name}")
        dispatchers += [v for v in vars(module).values() if hasattr(v, "targetoptions") and hasattr(v, "py_func")]
    assert len(dispatchers) > 50
    holding = [d.py_func.__qualname__ for d in dispatchers if not d.targetoptions.get("nogil")]
    assert not holding, f"kernels compiled holding the GIL: {holding}"
