"""The model-parallel loss (ops/model_parallel.py) on a GPU: SplitSparseSoftmaxCrossEntropyOpPass's ops run their
CUDA kernels (in the simulator here) and train like the CPU."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp


def _train(device: str) -> tuple[np.ndarray, np.ndarray, set[str]]:
    flow.clear_default_session()
    if device == "gpu":
        flow.config.gpu_device_num(1)

    @flow.global_function(type="train")
    def train_job(x: tp.Numpy.Placeholder((4, 6)), y: tp.Numpy.Placeholder((4,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement(device, "0:0"):
            logits = flow.layers.dense(x, 5, name="output")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(
                y, logits.with_distribute(flow.distribute.split(1)), name="loss")
            flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.5]), momentum=0).minimize(loss)
        return loss

    flow.load_variables({"output-weight": np.linspace(-1, 1, 30).reshape(5, 6).astype(np.float32)})
    rng = np.random.default_rng(0)
    losses = [train_job(rng.standard_normal((4, 6)).astype(np.float32), rng.integers(0, 5, 4).astype(np.int32))
              for _ in range(2)]
    plan = flow.default_session().plan
    ops = {t.exec_sequence[0].op_type for t in plan.tasks if t.gpu_device is not None and t.exec_sequence}
    return np.array(losses), flow.get_all_variables()["output-weight"], ops


def test_the_model_parallel_loss_trains_on_a_gpu_like_on_the_cpu():
    want_losses, want_weight, _ = _train("cpu")
    losses, weight, gpu_ops = _train("gpu")
    assert {"reduce_max_device_stage", "reduce_max_global_stage", "sparse_cross_entropy_ms",
            "sparse_softmax_cross_entropy_ms_grad"} <= gpu_ops
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    np.testing.assert_allclose(weight, want_weight, rtol=1e-5, atol=1e-7)
