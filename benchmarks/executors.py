"""Does every executor earn its place (issue 26)? Each rung of the run path's ladder (docs/run-path.md) timed against
the next simpler one, on the same call, in one process, rounds alternating between the rungs:

    protocol   protocol stepping, one scheduler thread                 (the semantics: every call can run here)
    threads    protocol stepping, one OS thread per Plan thread         vs protocol   (a Plan with 2+ compute threads)
    replay     the captured Schedule's kernels, one by one              vs protocol
    fused      replay with runs of kernels as Numba segments            vs replay
    lanes      the fused replay as one lane per Plan thread, OS threads vs fused      (a Plan with 2+ compute threads)
    callgen    the fused replayed call as one generated function        vs fused

Workloads: the tiny MLP train step (64-32-10, B=8), the MLP 784-512-10 (B=100), LeNet (B=16 with --quick, else 64),
the MLP 784-512-10 data parallel on 2 CPU devices (B=200), and the per-act overhead (pad_Job: its call time over its
acts). A rung whose gain over the next simpler one is under ~10% on all of them is a deletion candidate.

Each rung runs its own session (all alive at once, so rounds alternate without recompiling), made with the flags
that select it (``flow.flags``) and warmed until its calls run on that rung (checked, and printed). The call timed
is ``session.lazy_run`` (the job function's entry below the decorator's wrapper, the same for every rung).
``--cpu``: the calling thread's CPU time, except for the 2-device rows, whose rungs compute on other threads: those
are wall-clock (on a loaded box, read them with the load average printed). Medians of the rounds.

Ray machines are not on this ladder: a Plan's machines run on Ray because they are other machines, not to be faster.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _util import CPU, QUICK, cpu_description, table

import flowlab as flow
import flowlab.session as session_module
import flowlab.typing as tp
from flowlab import flags

RUNGS: dict[str, tuple[dict[str, Any], str | None]] = {  # flags, the next simpler rung
    "protocol": ({"replay": False, "threads": False}, None),
    "threads": ({"replay": False, "threads": True}, "protocol"),
    "replay": ({"replay": True, "fuse": False, "callgen": False, "threads": False}, "protocol"),
    "fused": ({"replay": True, "fuse": True, "callgen": False, "threads": False}, "replay"),
    "lanes": ({"replay": True, "fuse": True, "callgen": False, "threads": True}, "fused"),
    "callgen": ({"replay": True, "fuse": True, "callgen": True, "threads": False}, "fused"),
}
WARM = 14  # calls before timing (at least): a capture, FUSE_AFTER replays, segments compiled, the call generated


def mlp(d_in: int, hidden: int, batch: int, devices: int = 1, momentum: float = 0.0) -> Callable[[], Any]:
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((batch, d_in)),
                  y: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{devices - 1}"):
            init = flow.truncated_normal(0.1)
            h = flow.layers.dense(x, hidden, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
            logits = flow.layers.dense(h, 10, kernel_initializer=init, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=momentum).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    return _bound(train_job, rng.standard_normal((batch, d_in)).astype(np.float32),
                  rng.integers(0, 10, batch).astype(np.int32))


def lenet(batch: int) -> Callable[[], Any]:
    from lenet_vs_torch import LR
    from lenet_vs_torch import lenet as body

    flow.config.cpu_device_num(1)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((batch, 1, 28, 28)),
                  labels: tp.Numpy.Placeholder((batch,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, body(images), name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]), momentum=0).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    return _bound(train_job, rng.random((batch, 1, 28, 28), dtype=np.float32),
                  rng.integers(0, 10, batch).astype(np.int32))


def pad() -> Callable[[], Any]:
    flow.config.cpu_device_num(1)

    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return _bound(pad_Job, np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3))


def _bound(job: Any, *args: np.ndarray) -> Callable[[], Any]:
    session = flow.default_session()
    desc = job.__flowlab_function_desc__
    return lambda: session.lazy_run(desc, args, {})


def runs_on(session: Any) -> str:
    """Which rung ran the session's last call: from the executor and its last schedule."""
    executor = session.executor
    layer = getattr(executor, "layer", None)
    if layer is None:
        return executor.name
    if any(call.runs for call in session.generated_calls.values()):
        return "callgen"
    last = layer.last
    if last is None:
        return "protocol"
    return "lanes" if last.lanes is not None else "fused" if last.fused is not None else "replay"


def start(rung: str, build: Callable[[], Callable[[], Any]]) -> tuple[Callable[[], Any], Any]:
    """A session of its own for ``rung`` (the sessions before it stay alive), warmed up."""
    session_module._default = session_module.Session()
    session = session_module._default
    with flags.scoped(**RUNGS[rung][0], fuse_background=False):
        call = build()
        for k in range(WARM * 3):  # calls alternating schedules (rotating registers) each fuse on their own
            call()
            if k >= WARM and runs_on(session) == rung:
                break
    seen = runs_on(session)
    if seen != rung:
        raise SystemExit(f"the {rung} session's calls run on {seen}: not the rung to measure")
    return call, session


def measure(workload: str, build: Callable[[], Callable[[], Any]], rungs: list[str], rounds: int,
            wall: bool) -> dict[str, float]:
    """Median seconds per call of each rung, rounds alternating between them."""
    calls = {rung: start(rung, build) for rung in rungs}
    clock = time.perf_counter if wall or not CPU else time.thread_time
    elapsed: dict[str, list[float]] = {rung: [] for rung in rungs}
    number = {}
    for rung, (call, _) in calls.items():  # about 40 ms a round
        t0 = time.perf_counter()
        call()
        number[rung] = max(1, int(0.04 / max(time.perf_counter() - t0, 1e-6)))
    for k in range(rounds):
        order = rungs if k % 2 == 0 else rungs[::-1]
        for rung in order:
            call, session = calls[rung]
            with flags.scoped(**RUNGS[rung][0]):
                t0 = clock()
                for _ in range(number[rung]):
                    call()
                elapsed[rung].append((clock() - t0) / number[rung])
    for _, session in calls.values():
        session.close()
    return {rung: statistics.median(times) for rung, times in elapsed.items()}


def acts_per_call(build: Callable[[], Callable[[], Any]]) -> int:
    session_module._default = session_module.Session()
    with flags.scoped(replay=False, threads=False):
        call = build()
        call()
        rt = flow.default_session().runtime
        before = rt.seq
        call()
        acts = rt.seq - before
    flow.default_session().close()
    return acts


def main() -> None:
    rounds = 7 if QUICK else 21
    print(cpu_description())
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{'thread CPU time' if CPU else 'wall clock'} (2-device rows: wall clock); medians of {rounds} rounds")
    one = ["protocol", "replay", "fused", "callgen"]
    two = ["protocol", "threads", "replay", "fused", "lanes"]
    workloads: list[tuple[str, Callable[[], Callable[[], Any]], list[str], bool]] = [
        ("tiny MLP 64-32-10 B=8", lambda: mlp(64, 32, 8), one, False),
        ("MLP 784-512-10 B=100", lambda: mlp(784, 512, 100), one, False),
        (f"LeNet B={16 if QUICK else 64}", lambda: lenet(16 if QUICK else 64), one, False),
        ("MLP 784-512-10 B=200, 2 devices", lambda: mlp(784, 512, 200, devices=2, momentum=0.9), two, True),
        ("per act: pad_Job", pad, one, False),
    ]
    acts = acts_per_call(pad)
    results: dict[str, dict[str, float]] = {}
    for name, build, rungs, wall in workloads:
        results[name] = measure(name, build, rungs, rounds, wall)
        print(f"  measured {name}", file=sys.stderr)
    rows = []
    for name, times in results.items():
        per = acts if name.startswith("per act") else 1
        unit = "us/act" if per > 1 else "ms/call"
        scale = 1e6 / per if per > 1 else 1e3
        rows.append((name, "  ".join(f"{rung} {t * scale:.3g}" for rung, t in times.items()) + f" {unit}"))
        for rung, t in times.items():
            simpler = RUNGS[rung][1]
            if simpler is not None and simpler in times:
                gain = times[simpler] / t - 1
                rows.append((f"  {rung} vs {simpler}", f"{gain:+.0%}"))
    table(f"Each executor against the next simpler one (pad_Job: {acts} acts a call)", rows)
    gains: dict[str, list[float]] = {}
    for times in results.values():
        for rung, t in times.items():
            simpler = RUNGS[rung][1]
            if simpler is not None and simpler in times:
                gains.setdefault(rung, []).append(times[simpler] / t - 1)
    print()
    for rung, values in gains.items():
        verdict = "earns its place" if max(values) >= 0.10 else "gains < 10% everywhere: a deletion candidate"
        print(f"{rung:<8} best gain {max(values):+.0%}: {verdict}")


if __name__ == "__main__":
    main()
