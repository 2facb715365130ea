"""Run a fuzz Program through flowlab's three paths and compare every result with the NumPy oracle.

The paths: ``protocol`` (Numba kernels, actor protocol act by act, replay off), ``fused`` (Numba kernels, the
call repeated past the fusion threshold with alternating inputs, so capture, replay and fused segments all run),
``replayed`` (the same calls with FLOWLAB_FUSE=0: capture and replay only) and ``reference``
(FLOWLAB_KERNELS=reference, replay off); ``default`` is the configuration a user runs (no FLOWLAB_* variable:
the tiered kernels, replay, fusion compiled in the background) over the fused path's calls. Fusing compiles one
Numba function per program (about a second the first time; cached on disk by its source), so the default run
fuses an eighth of its programs (the long run a quarter) and replays the rest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import flowlab as flow

from .oracle import interpret, mismatches
from .programs import Program, build_job

MODES = ("protocol", "fused", "reference")
REPLAYED = ("fused", "replayed", "default")
DEFAULT_UNSET = ("FLOWLAB_KERNELS", "FLOWLAB_REPLAY", "FLOWLAB_FUSE", "FLOWLAB_FUSE_BACKGROUND")
# The fusion threshold is FUSE_AFTER replays of a schedule (replay/fused.py, 8): call 1 captures, calls 2-9
# replay and the 9th replay runs the fused segments; 12 calls leave three fused calls on both input sets.
FUSED_CALLS = 12


@contextmanager
def switched(mode: str) -> Iterator[None]:
    """Select a path through the environment variables read when a session builds its runtime: the kernels, and
    whether the replay layer is attached (flowlab/replay/) and fuses."""
    env = {"FLOWLAB_KERNELS": "reference" if mode == "reference" else "numba",
           "FLOWLAB_REPLAY": "1" if mode in REPLAYED else "0", "FLOWLAB_FUSE": "1" if mode == "fused" else "0"}
    saved_env = {k: os.environ.get(k) for k in (*env, *DEFAULT_UNSET)}
    if mode == "default":
        for k in DEFAULT_UNSET:
            os.environ.pop(k, None)
    else:
        os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _replay_counts(session: Any) -> tuple[int, int]:
    """(replayed calls, fused schedules) of the session's runtime (0, 0 when no replay layer is attached)."""
    layer = session.runtime.layer
    if layer is None:
        return 0, 0
    fused = sum(s.fused is not None for s in layer.schedules.values())
    return layer.replays, fused


def run_mode(program: Program, inputs: list[list[np.ndarray]], mode: str) -> tuple[list[tuple[int, list[Any]]], Any]:
    """Call the program's job in ``mode``; returns [(input set, results)] per call, and the session."""
    flow.clear_default_session()
    calls = [k % len(inputs) for k in range(FUSED_CALLS)] if mode in REPLAYED else list(range(len(inputs)))
    out = []
    with switched(mode):
        job = build_job(program)
        for k in calls:
            result = job(*inputs[k])
            out.append((k, [np.array(r, copy=True) for r in (result if isinstance(result, tuple) else (result,))]))
    return out, flow.default_session()


def check_program(program: Program, inputs: list[list[np.ndarray]], modes: tuple[str, ...] = MODES
                  ) -> dict[str, list[tuple[int, list[Any]]]]:
    """Assert every mode's results agree with the oracle; the message shows the program and its inputs. Returns
    each mode's results ([(input set, results)] per call)."""
    by_mode: dict[str, list[tuple[int, list[Any]]]] = {}
    failures: list[str] = []
    expected: list[dict[str, Any]] | None = None
    returns: tuple[str, ...] = ()
    try:
        for mode in modes:
            results, session = run_mode(program, inputs, mode)
            by_mode[mode] = results
            if expected is None:
                job = session.traced_jobs["fuzz_job"]
                returns = job.return_op_names
                for name, value in zip(returns, (program.values[i] for i in program.returns)):
                    desc = job.blob_descs[job.op(name).input_lbns[0]]
                    if tuple(desc.shape) != value.shape or desc.dtype.name != value.dtype:
                        failures.append(f"{name}: flowlab inferred {desc}, the op rules give "
                                        f"{value.dtype}{list(value.shape)}")
                expected = [interpret(job, dict(zip(job.input_op_names, arrays))) for arrays in inputs]
            if mode in REPLAYED:
                replays, fused = _replay_counts(session)
                if replays < FUSED_CALLS - 2 or bool(fused) != (mode != "replayed"):
                    failures.append(f"fused: {replays} of {FUSED_CALLS} calls replayed, {fused} schedules fused; "
                                    "the replay/fusion switch did not take effect")
            for call, (k, outs) in enumerate(results):
                for name, actual in zip(returns, outs):
                    problem = mismatches(actual, expected[k][name])
                    if problem:
                        failures.append(f"{mode}, call {call} (inputs {k}), {name}: {problem}")
    finally:
        flow.clear_default_session()
    if failures:
        shown = "\n".join(f"x{i} = np.array({a.tolist()!r}, dtype=np.{a.dtype})"
                          for k, arrays in enumerate(inputs[:1]) for i, a in enumerate(arrays))
        raise AssertionError(f"{len(failures)} mismatches\n{program!r}\ninputs[0]:\n{shown}\n" +
                             "\n".join(failures[:12]))
    return by_mode
