"""examples/resnet50.py (OneFlow-Benchmark's Classification/cnns ResNet-50, tiny) against a torch ResNet-50 written
here from the architecture (resnet_model.py's structure, OneFlow's SAME padding, batch norm, label-smoothed softmax
cross entropy, OneFlow's momentum update and cosine schedule): the first three steps' losses and every variable
after each step, from the same initial values; on 1 device and data-parallel on 2 (each device's batch norm over
its own half of the batch, OneFlow v0.3.4's behaviour; the moving statistics read back are device 0's)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import flowlab as flow  # noqa: E402
from examples import resnet50 as model  # noqa: E402

from ._torch_ref import assert_close, batch_norm_train, conv2d_same, cosine_lr, momentum_step, same_pad  # noqa: E402

STEPS = 3
# float32 through 53 convolutions and batch norms against float64: measured worst ~2e-5 at step 2
RTOL = 5e-5
pytestmark = pytest.mark.filterwarnings("ignore:flowlab accepts FunctionConfig")


class TorchResnet:
    """ResNet-50 over a dict of float64 tensors named as OneFlow-Benchmark names its variables."""

    def __init__(self, values: dict[str, np.ndarray], cfg: model.Config) -> None:
        self.p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=not k.endswith(("moving_mean",
                                                                                         "moving_variance")))
                  for k, v in values.items() if k.startswith("Resnet-") and not k.endswith("-momentum")}
        self.cfg = cfg
        self.state: dict[str, torch.Tensor] = {}

    def conv(self, x, name, kernel, stride):
        padding = "SAME" if stride > 1 or kernel > 1 else "VALID"
        return conv2d_same(x, self.p[f"Resnet-{name}-weight"], stride, padding)

    def bn(self, x, name, parts):
        """Batch norm with each of `parts` slices of the batch normalized by its own statistics; the moving
        statistics are those of slice 0 (device 0's copy)."""
        p = self.p
        ys = []
        for i, xs in enumerate(x.chunk(parts)):
            y, mean, var = batch_norm_train(xs, p[f"Resnet-{name}-gamma"], p[f"Resnet-{name}-beta"],
                                            p[f"Resnet-{name}-moving_mean"], p[f"Resnet-{name}-moving_variance"],
                                            0.9, 1e-5)
            ys.append(y)
            if i == 0:
                self.moving[name] = (mean, var)
        return torch.cat(ys)

    def forward(self, images, parts):
        self.moving: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        x = self.conv(images, "conv1", 7, 2)
        x = F.relu(self.bn(x, "conv1_bn", parts))
        x = F.max_pool2d(same_pad(x, 3, 2, value=-float("inf")), 3, 2)
        for stage, (count, stride) in enumerate(zip(model.BLOCK_COUNTS, (1, 2, 2, 2))):
            for i in range(count):
                name = f"res{stage + 2}_{i}"
                s = stride if i == 0 else 1
                shortcut = x
                if s != 1 or name == "res2_0":
                    shortcut = self.bn(self.conv(x, name + "_branch1", 1, s), name + "_branch1_bn", parts)
                a = F.relu(self.bn(self.conv(x, name + "_branch2a", 1, 1), name + "_branch2a_bn", parts))
                b = F.relu(self.bn(self.conv(a, name + "_branch2b", 3, s), name + "_branch2b_bn", parts))
                c = self.bn(self.conv(b, name + "_branch2c", 1, 1), name + "_branch2c_bn", parts)
                x = F.relu(c + shortcut)
        x = F.avg_pool2d(x, x.shape[2]).reshape(x.shape[0], -1)
        return x @ self.p["Resnet-fc1001-weight"].T + self.p["Resnet-fc1001-bias"]

    def step(self, step: int, images: np.ndarray, labels: np.ndarray, parts: int) -> float:
        cfg = self.cfg
        logits = self.forward(torch.tensor(images, dtype=torch.float64), parts)
        eta = cfg.label_smoothing
        target = torch.full(logits.shape, eta / cfg.num_classes, dtype=torch.float64)
        target[torch.arange(len(labels)), torch.tensor(labels).long()] = 1 - eta + eta / cfg.num_classes
        loss = (-(target * F.log_softmax(logits, dim=1)).sum(dim=1)).mean()
        loss.backward()
        lr = cosine_lr(cfg.learning_rate, step, cfg.warmup_batches, cfg.decay_batches)
        # every trainable variable carries the l2 regularizer (weights, gamma/beta, the dense layer's both)
        trainable = {k: v for k, v in self.p.items() if v.requires_grad}
        momentum_step(trainable, self.state, lr, cfg.momentum, lambda name: cfg.wd)
        with torch.no_grad():
            for name, (mean, var) in self.moving.items():
                self.p[f"Resnet-{name}-moving_mean"].copy_(mean)
                self.p[f"Resnet-{name}-moving_variance"].copy_(var)
        return float(loss.detach())


def run_against_torch(cfg: model.Config, steps: int = STEPS) -> None:
    train = model.build(cfg)
    ref = TorchResnet(flow.get_all_variables(), cfg)
    for step in range(steps):
        images, labels = model.synthetic_batch(cfg, seed=step)
        loss = train(images, labels)
        want = ref.step(step, images, labels, cfg.device_num)
        assert_close(loss, np.float64(want), f"step {step} loss", RTOL)
        after = flow.get_all_variables()
        for name, value in ref.p.items():
            assert_close(after[name], value, f"step {step} {name}", RTOL)


def test_resnet50_first_steps_equal_torch():
    run_against_torch(model.Config())


def test_resnet50_two_devices_per_device_batch_norm_equal_torch():
    # two steps (step 0 has learning rate 0 in the warmup, step 1 updates): the 2-device job is the slow one
    run_against_torch(model.Config(batch_size=4, device_num=2), steps=2)
