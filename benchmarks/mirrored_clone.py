"""The docs' mirrored-strategy MLP (784-512-10, batch 2 x 50, SGD) on 2 CPU devices: a train call whose variables'
DistributeClone reads them in place (OneFlow's is_variable_ref, compiler/inplace.py) against the same Plan with the
clone copying them (the in-place pass left out), interleaved in one process, medians per round and paired ratios.

Run: ``python benchmarks/mirrored_clone.py [--quick] [--cpu]``. ``--cpu`` times thread CPU and runs the calls with one
scheduler thread (``FLOWLAB_THREADS=0``: every act on the calling thread, so its CPU time is the whole call's).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from _util import CPU, QUICK, table

if CPU:
    os.environ["FLOWLAB_THREADS"] = "0"  # set before flowlab reads it: the calling thread does all the work

import numpy as np

import flowlab as flow
import flowlab.compiler.plan_stages as plan_stages
import flowlab.typing as tp

PER = 50
REAL = plan_stages.set_variable_ref_inplace
ROUNDS, CALLS, WARM = (1, 3, 10) if QUICK else (16, 60, 40)
clock = time.thread_time if CPU else time.perf_counter


def build(in_place: bool):
    plan_stages.set_variable_ref_inplace = REAL if in_place else (lambda pb: None)
    flow.clear_default_session()
    flow.config.cpu_device_num(2)
    config = flow.function_config()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="train", function_config=config)
    def train_job(images: tp.ListNumpy.Placeholder((PER, 1, 28, 28)),
                  labels: tp.ListNumpy.Placeholder((PER,), dtype=flow.int32)) -> tp.ListNumpy:
        init = flow.truncated_normal(0.1)
        flat = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(flat, 512, activation=flow.nn.relu, kernel_initializer=init, name="hidden")
        logits = flow.layers.dense(hidden, 10, kernel_initializer=init, name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    return train_job


def main() -> None:
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((PER, 1, 28, 28)).astype(np.float32) for _ in range(2)]
    ys = [rng.integers(0, 10, PER).astype(np.int32) for _ in range(2)]
    times: dict[bool, list[float]] = {False: [], True: []}
    paired, last, blocks = [], {}, {}
    for r in range(ROUNDS):
        for in_place in ((False, True) if r % 2 == 0 else (True, False)):
            job = build(in_place)
            for _ in range(WARM):
                job(xs, ys)
            rounds = []
            for _ in range(CALLS):
                start = clock()
                job(xs, ys)
                rounds.append(clock() - start)
            times[in_place].append(statistics.median(rounds))
            last[in_place] = np.concatenate(job(xs, ys))
            blocks[in_place] = sum(b.mem_size for b in flow.default_session().plan.mem_blocks)
        paired.append(times[True][-1] / times[False][-1])
    plan_stages.set_variable_ref_inplace = REAL
    flow.clear_default_session()
    unit = "thread CPU" if CPU else "wall"
    copy, ref = statistics.median(times[False]), statistics.median(times[True])
    spread = f"range {min(paired):.3f}-{max(paired):.3f}, {len(paired)} rounds"
    table(f"docs mirrored MLP 784-512-10, 2 x {PER} rows, 2 devices: train call ({unit}, load "
          f"{os.getloadavg()[0]:.1f})", [
              ("clone copies the variables, median", f"{copy * 1e3:.3f} ms"),
              ("clone reads them in place, median", f"{ref * 1e3:.3f} ms"),
              ("in place / copying, paired rounds", f"median {statistics.median(paired):.3f} ({spread})"),
              ("losses of the last call, bit for bit", str(np.array_equal(last[False], last[True]))),
              ("Plan memory, copying / in place", f"{blocks[False]:,} B / {blocks[True]:,} B"),
          ])


if __name__ == "__main__":
    sys.exit(main())
