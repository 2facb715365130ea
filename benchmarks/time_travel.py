"""Time travel in the debugger (issue 27 §1) on the 30-layer MLP train job (754 actors): one step back, and the
memory each act's undo record keeps.

- one step back: every act of one call undone one at a time (``dbg.back()`` from the last act to the first),
  median and max (target: median <= 50 ms);
- one step with and without the undo record (``history_limit`` 0): what keeping the history costs a step;
- extra memory per act recorded (``dbg.history``: the register bytes an act overwrites plus its records), median and
  max, and the whole call's.

The kernels are Numba's (``_util`` sets FLOWLAB_KERNELS=numba), the session warmed by one call first.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from _util import QUICK, clock, cpu_description, table

import flowlab as flow
from tests.helpers.deep_mlp import DEEP_MLP


def main() -> None:
    print(f"CPU: {cpu_description()}")
    flow.clear_default_session()
    namespace: dict = {}
    exec(compile(DEEP_MLP, "deep_mlp.py", "exec"), namespace)
    fn = namespace["deep_train"]
    x, y = np.random.default_rng(0).standard_normal((50, 64)).astype(np.float32), np.zeros(50, np.int32)
    fn(x, y)  # compile and warm the kernels

    rounds = 1 if QUICK else 3
    backs: list[float] = []
    with_history: list[float] = []
    without: list[float] = []
    for _ in range(rounds):
        dbg = flow.debug(fn, x, y)
        while not dbg.finished:
            start = clock()
            dbg.step()
            with_history.append(clock() - start)
        acts, stats = dbg.acts, dbg.history
        while dbg.acts:
            start = clock()
            dbg.back()
            backs.append(clock() - start)
        plain = flow.debug(fn, x, y)
        plain.history_limit = 0
        # all the way back: the weights are the fresh debugger's (a check that the figures time real undos)
        assert all(np.array_equal(dbg.value(f"fc{i}-weight"), plain.value(f"fc{i}-weight")) for i in range(30))
        while not plain.finished:
            start = clock()
            plain.step()
            without.append(clock() - start)

    ms = 1e3
    rows = [
        ("30-layer MLP train job: actors / acts per call", f"{len(dbg.runtime.actors)} / {acts}"),
        ("one step back, median over every act of the call", f"{statistics.median(backs) * ms:.3f} ms "
                                                              f"(target <= 50 ms)"),
        ("one step back, max", f"{max(backs) * ms:.3f} ms"),
        ("one step, keeping its undo record, median", f"{statistics.median(with_history) * ms:.3f} ms"),
        ("one step, history_limit = 0, median", f"{statistics.median(without) * ms:.3f} ms"),
        ("extra memory per act recorded, median / max", f"{stats.median_bytes:,.0f} B / {stats.max_bytes:,} B"),
        ("extra memory for the whole call", f"{stats.nbytes:,} B ({stats.nbytes / 2**20:.2f} MiB, {acts} acts)"),
        ("  of which register copies", f"{stats.register_bytes:,} B"),
    ]
    table(f"Time travel, {'wall clock' if clock.__name__ == 'perf_counter' else 'thread CPU time'}"
          f"{' (--quick: one round)' if QUICK else ''}", rows)


if __name__ == "__main__":
    main()
