"""Reproducible by default (issue 25): in the default tiered kernel mode, which tier a call runs depends only on the
program and the call's index, never on when a background compile finished. A session's first call runs the NumPy
reference kernels; every later call runs Numba's, waiting for a compile that is not done yet (kernels/tiered.py).

The tests change only the timing: how long the background compiles take (a hook that runs them at once, late, or
never), how long the program sleeps between calls, and a second process; the bits must not change."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.kernels import tiered

STEPS = 12


def define_adam_mlp():
    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((16, 10)), y: tp.Numpy.Placeholder((16,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, 24, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                              name="hidden")
        logits = flow.layers.dense(h, 4, kernel_initializer=flow.truncated_normal(0.1), name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.01])).minimize(loss)
        return loss

    return train


def batch(k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(100 + k)
    return rng.standard_normal((16, 10)).astype(np.float32), rng.integers(0, 4, 16).astype(np.int32)


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def train_calls(steps: int, after: Callable[[int], None] | None = None) -> tuple[list[bytes], dict[str, bytes],
                                                                                list[set[str]]]:
    """``steps`` train calls in a fresh session: each call's loss, the final variables (as bytes), and the tiers
    each call's tiered kernels ran."""
    flow.clear_default_session()
    train = define_adam_mlp()
    losses, tiers = [], []
    for k in range(steps):
        losses.append(bits(train(*batch(k))))
        rt = flow.default_session().runtime
        tiers.append({s.ran for a in rt.actors.values() if a.kernel and (s := a.kernel.tiered)
                      and s.ran})
        if after is not None:
            after(k)
    variables = {name: bits(v) for name, v in flow.default_session().variable_arrays().items()}
    return losses, variables, tiers


def run_soon(job: Callable[[], None]) -> None:
    job()  # the Numba kernel is ready before the first act


def run_late(job: Callable[[], None]) -> None:
    def later() -> None:
        time.sleep(0.3)
        try:
            job()
        except Exception:  # recorded on the kernel: it stays on the reference
            pass

    threading.Thread(target=later, daemon=True).start()


def never(job: Callable[[], None]) -> None:
    pass  # nobody compiles in the background: the call that needs the kernel makes it


@pytest.mark.parametrize("threads", ["0", "1"])
def test_a_calls_tier_depends_on_its_index_not_on_when_numba_is_ready(monkeypatch, threads) -> None:
    """The first call runs the reference tier, every later call Numba's, whether the background compiles finish
    before the first act, some time later, or never; so every call gives the same bits in all three."""
    monkeypatch.setenv("FLOWLAB_KERNELS", "tiered")
    monkeypatch.setenv("FLOWLAB_FUSE_BACKGROUND", "1")  # the default: fused segments switch in at their own time
    monkeypatch.setenv("FLOWLAB_THREADS", threads)
    runs = {}
    for name, submit in (("soon", run_soon), ("late", run_late), ("never", never)):
        monkeypatch.setattr(tiered, "_submit", submit)
        runs[name] = train_calls(STEPS)
    for name, (losses, variables, tiers) in runs.items():
        assert tiers == [{"reference"}] + [{"numba"}] * (STEPS - 1), name
        assert losses == runs["soon"][0], f"{name}: a call's loss depends on when Numba was ready"
        assert variables == runs["soon"][1], f"{name}: the variables depend on when Numba was ready"


def test_the_tiered_mode_is_the_reference_then_the_numba_mode(monkeypatch) -> None:
    """The rule, against the pinned modes: call 1 is the reference mode's call 1 bit for bit, and a Numba call
    applied to the same state gives the Numba mode's bits (checked on call 2's loss, which reads the variables
    call 1 wrote)."""
    monkeypatch.setenv("FLOWLAB_KERNELS", "tiered")
    losses, _, _ = train_calls(3)
    monkeypatch.setenv("FLOWLAB_KERNELS", "reference")
    reference, _, _ = train_calls(3)
    assert losses[0] == reference[0]
    assert losses[1:] != reference[1:]  # Numba's kernels ran calls 2 and 3 (they round differently)


PROGRAM = """
import hashlib, sys, time
import numpy as np
import flowlab as flow
from tests.runtime.test_tiered_reproducible import batch, define_adam_mlp

pause = float(sys.argv[1])
train = define_adam_mlp()
digest = hashlib.sha256()
for k in range({steps}):
    digest.update(np.asarray(train(*batch(k))).tobytes())
    if k == 0:
        time.sleep(pause)  # timing only: the background thread has the time to load Numba, or not
for name, value in sorted(flow.default_session().variable_arrays().items()):
    digest.update(name.encode() + np.ascontiguousarray(value).tobytes())
print(digest.hexdigest())
"""


def test_two_fresh_processes_in_the_default_configuration_train_to_the_same_bits() -> None:
    """No FLOWLAB_* variable set: one process pauses after its first call (long enough for Numba to load in the
    background), the other runs straight on; their losses and weights must be bit-identical."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLAB_")}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    code = PROGRAM.format(steps=40)
    digests = []
    for pause in ("4", "0"):
        out = subprocess.run([sys.executable, "-c", code, pause], capture_output=True, text=True, env=env, cwd=root,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        digests.append(out.stdout.strip().splitlines()[-1])
    assert digests[0] == digests[1], "two processes running the same program trained to different weights"
