"""10,000 Callback launches on 1 and 2 CPU devices (2: parallel run mode, one OS thread per device) keep memory flat
once the run's kernels and fused segments are compiled (issue 25: +2.1 MiB per 1,000 launches on 2 devices in
threads mode). That growth was the fused segments compiling in the background while the launches ran (28 segments
for this program on 2 devices; each compile holds its machine code for good), not per-launch state: with Numba's
cache warm the same run is flat. The soak first runs until every segment has compiled, then measures."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.replay.fused import FUSE_AFTER, wait_compiled

pytestmark = [pytest.mark.long,
              pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc")]

B, LAUNCHES = 8, 10_000


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.parametrize("devices", [1, 2])
def test_soak_10000_callback_launches_keep_memory_flat(devices, monkeypatch):
    monkeypatch.setenv("FLOWLAB_THREADS", "1" if devices > 1 else "0")
    flow.config.cpu_device_num(devices)

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((B, 1, 8, 8)),
                  labels: tp.Numpy.Placeholder((B,), dtype=flow.int32)) -> tp.Callback[tp.Numpy]:
        flat = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(flat, 64, activation=flow.nn.relu, kernel_initializer=flow.truncated_normal(0.1),
                                   name="hidden")
        logits = flow.layers.dense(hidden, 10, kernel_initializer=flow.truncated_normal(0.1), name="output")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0.9).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    x, y = rng.random((B, 1, 8, 8), dtype=np.float32), rng.integers(0, 10, B).astype(np.int32)
    seen = []

    def callback(loss: np.ndarray) -> None:
        seen.append(loss.shape)

    for _ in range(8 * FUSE_AFTER):  # every schedule (a rotation order of each register pair) reaches its fusion
        train_job(x, y)(callback)
    flow.sync_default_session()
    wait_compiled(600)
    samples = []
    for i in range(LAUNCHES):
        train_job(x, y)(callback)
        if (i + 1) % 1000 == 0:
            flow.sync_default_session()
            gc.collect()
            samples.append(rss_mib())
    assert len(seen) == 8 * FUSE_AFTER + LAUNCHES and set(seen) == {(B,)}
    half = np.array(samples[len(samples) // 2:])
    slope = float(np.polyfit(np.arange(half.size), half, 1)[0])
    print(f"{devices} device(s): RSS at 1,000 launches {samples[0]:.2f} MiB, at {LAUNCHES:,} {samples[-1]:.2f} MiB, "
          f"second half {slope:.3f} MiB per 1,000 launches")
    assert slope < 0.2, samples
