"""examples/alexnet.py (OneFlow-Benchmark's alexnet_model.py, tiny) against a torch AlexNet written here from the
architecture: the first three steps' losses and every variable after each, from the same initial values
(OneFlow's momentum update, cosine schedule after a linear warmup, l2 0.00005 on every variable)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import flowlab as flow  # noqa: E402
from examples import alexnet as model  # noqa: E402

from ._torch_ref import assert_close, conv2d_same, cosine_lr, momentum_step  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:flowlab accepts FunctionConfig")


def torch_loss(p: dict, images: np.ndarray, labels: np.ndarray, cfg: model.Config):
    x = torch.tensor(images, dtype=torch.float64)
    for name, _kernel, stride, padding, pool in (("conv1", 11, 4, "VALID", True), ("conv2", 5, 1, "SAME", True),
                                                ("conv3", 3, 1, "SAME", False), ("conv4", 3, 1, "SAME", False),
                                                ("conv5", 3, 1, "SAME", True)):
        x = conv2d_same(x, p[f"{name}-weight"], stride, padding) + p[f"{name}-bias"].reshape(1, -1, 1, 1)
        x = F.relu(x)
        if pool:
            x = F.avg_pool2d(x, 3, 2)
    x = x.reshape(x.shape[0], -1)
    x = F.relu(x @ p["fc1-weight"].T + p["fc1-bias"])
    x = F.relu(x @ p["fc2-weight"].T + p["fc2-bias"])
    logits = x @ p["fc3-weight"].T
    eta, classes = cfg.label_smoothing, cfg.num_classes
    target = torch.full(logits.shape, eta / classes, dtype=torch.float64)
    target[torch.arange(len(labels)), torch.tensor(labels).long()] = 1 - eta + eta / classes
    return (-(target * F.log_softmax(logits, dim=1)).sum(dim=1)).mean()


def test_alexnet_first_steps_equal_torch():
    cfg = model.Config()
    train = model.build(cfg)
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
         for k, v in flow.get_all_variables().items() if k.startswith(("conv", "fc")) and "momentum" not in k}
    assert len(p) == 15  # 5 convs and 2 dense layers with biases, fc3 without
    state: dict = {}
    for step in range(3):
        images, labels = model.synthetic_batch(cfg, seed=step)
        loss = train(images, labels)
        want = torch_loss(p, images, labels, cfg)
        want.backward()
        lr = cosine_lr(cfg.learning_rate, step, cfg.warmup_batches, cfg.decay_batches)
        momentum_step(p, state, lr, cfg.momentum, lambda name: 0.00005)
        assert_close(loss, want.detach(), f"step {step} loss")
        after = flow.get_all_variables()
        for name, value in p.items():
            assert_close(after[name], value, f"step {step} {name}")
