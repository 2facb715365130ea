"""Data-parallel MLP train step on two Ray machines on this box, against the same Plan run in one process
(CopyCommNet by memory copy) and against one device (issue 14). Prints the step time of each, the registers and
bytes crossing machines per step, and where the Ray step's time goes: machine 0's acts in the driver, the
driver waiting for machine 1, and machine 1's acting time.

Needs the `distributed` extra; starts its own two-node cluster on loopback (``one_box_cluster``), 10-40 s here.
``--quick``: a small MLP and few steps.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import flowlab as flow
import flowlab.typing as tp

QUICK = "--quick" in sys.argv
BATCH, FEATURES, HIDDEN, CLASSES = (16, 64, 32, 10) if QUICK else (100, 784, 512, 10)
WARM, STEPS = (2, 5) if QUICK else (3, 20)


def build(placement: str | list[str]):
    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, FEATURES)),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", placement):
            hidden = flow.layers.dense(images, HIDDEN, activation=flow.nn.relu, name="hidden",
                                       kernel_initializer=flow.truncated_normal(0.1))
            logits = flow.layers.dense(hidden, CLASSES, name="output", kernel_initializer=flow.truncated_normal(0.1))
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    return train_job


def batch(i: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(i)
    return (rng.standard_normal((BATCH, FEATURES)).astype(np.float32),
            rng.integers(0, CLASSES, BATCH).astype(np.int32))


def timed(job, after_warm=lambda: None) -> tuple[list[float], list[np.ndarray]]:
    losses = [job(*batch(i)) for i in range(WARM)]
    after_warm()
    times = []
    for i in range(STEPS):
        t0 = time.perf_counter()
        losses.append(job(*batch(WARM + i)))
        times.append(time.perf_counter() - t0)
    return times, losses


def setup(machines: bool, ray_address: str | None = None) -> None:
    flow.clear_default_session()
    from flowlab.frontend import scope

    scope.ENV.reset()
    if machines:
        flow.env.machine(["127.0.0.1", "127.0.0.2"])
    if ray_address is not None:
        flow.env.ray(ray_address)


def row(label: str, value: str) -> None:
    print(f"{label:<64} {value}")


def main() -> None:
    from flowlab.distributed.cluster import one_box_cluster

    print(f"data-parallel MLP {FEATURES}-{HIDDEN}-{CLASSES}, batch {BATCH}, SGD; {STEPS} timed steps after {WARM}")
    setup(False)
    one, ref = timed(build("0:0"))
    setup(True)
    inproc, got = timed(build(["0:0", "1:0"]))
    rt = flow.default_session().runtime
    inproc_msgs, inproc_bytes = rt.transport.messages, rt.transport.bytes_moved
    steps_run = WARM + STEPS
    np.testing.assert_allclose(got[-1], ref[-1], rtol=1e-4, err_msg="in-process two machines vs one device")
    with one_box_cluster(2) as address:
        setup(True, address)
        before: dict = {}
        # the first call starts the machine actor (a new process) and compiles its kernels: counted after warm-up
        ray_times, ray_losses = timed(build(["0:0", "1:0"]),
                                      lambda: before.update(flow.default_session().runtime.counters()))
        after = flow.default_session().runtime.counters()
        np.testing.assert_allclose(ray_losses[-1], ref[-1], rtol=1e-4, err_msg="two Ray machines vs one device")
        flow.clear_default_session()
    med = {k: statistics.median(v) * 1e3 for k, v in (("one", one), ("inproc", inproc), ("ray", ray_times))}
    n = STEPS
    row("one device: step, median", f"{med['one']:.2f} ms")
    row("two machines in one process (CopyCommNet copies): step, median", f"{med['inproc']:.2f} ms "
        f"({med['inproc'] / med['one']:.2f}x one device)")
    row("two Ray machines on this box: step, median", f"{med['ray']:.2f} ms ({med['ray'] / med['one']:.2f}x one "
        f"device, {med['ray'] / med['inproc']:.2f}x in-process)")
    row("in-process: registers / bytes crossing machines per step",
        f"{inproc_msgs / steps_run:.1f} / {inproc_bytes / steps_run:,.0f} B")
    for m in sorted(after):
        msgs = (after[m]["messages"] - before[m]["messages"]) / n
        nbytes = (after[m]["bytes"] - before[m]["bytes"]) / n
        acts = (after[m]["acts"] - before[m]["acts"]) / n
        row(f"Ray: machine {m} ships per step (messages / bytes), acts", f"{msgs:.1f} / {nbytes:,.0f} B, {acts:.0f}")
    wait = (after[0]["wait_s"] - before[0]["wait_s"]) / n * 1e3
    waits = (after[0]["waits"] - before[0]["waits"]) / n
    busy1 = (after[1]["busy_s"] - before[1]["busy_s"]) / n * 1e3
    row("Ray step: driver waiting for machine 1 (waits per step)", f"{wait:.2f} ms ({waits:.1f})")
    row("Ray step: machine 0's own work in the driver (step - waiting)", f"{med['ray'] - wait:.2f} ms")
    row("Ray step: machine 1 acting + applying what arrived", f"{busy1:.2f} ms")
    row("Ray step: message latency and serialization (waiting - machine 1's work)", f"{wait - busy1:.2f} ms")


if __name__ == "__main__":
    main()
