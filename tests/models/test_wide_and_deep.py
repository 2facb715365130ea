"""examples/wide_and_deep.py (OneFlow-Benchmark's wdl_train_eval.py, tiny) against a torch Wide & Deep written here:
the first three steps' losses and every variable after each, from the same initial values. The loss minimized is
the per-example sigmoid cross entropy; OneFlow divides the model gradients by the loss's instance count
(autograd.cpp's ScaleModelDiffByLossInstanceNum), so the gradient is the mean's; LazyAdam
is OneFlow's AdamUpdateFunctor (beta1 0.9, beta2 0.999, epsilon 1e-8) with the learning rate bias-corrected
(adam_optm.cpp sets do_bias_correction for lazy_adam_conf: lr * sqrt(1 - beta2^t) / (1 - beta1^t), t = step + 1),
on the embedding tables only for the rows in the batch (IndexedSlicesAdamMdUpdateKernelUtil): the other rows, and
their m and v, stay as they were."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import flowlab as flow  # noqa: E402
from examples import wide_and_deep as model  # noqa: E402

from ._torch_ref import assert_close  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def torch_loss(p: dict, batch: dict, flags: model.Flags):
    wide = p["wide_embedding"][torch.tensor(batch["wide_sparse_fields"]).long()].sum(dim=(1, 2)).reshape(-1, 1)
    deep = p["deep_embedding"][torch.tensor(batch["deep_sparse_fields"]).long()].reshape(flags.batch_size, -1)
    x = torch.cat([deep, torch.tensor(batch["dense_fields"], dtype=torch.float64)], dim=1)
    for i in range(len(flags.hidden_units)):
        x = F.relu(x @ p[f"fc{i + 1}-weight"].T + p[f"fc{i + 1}-bias"])
    last = len(flags.hidden_units) + 1
    logits = wide + x @ p[f"fc{last}-weight"].T + p[f"fc{last}-bias"]
    labels = torch.tensor(batch["labels"], dtype=torch.float64)
    return F.binary_cross_entropy_with_logits(logits, labels, reduction="none")


def lazy_adam_step(p: dict, state: dict, lr: float, step: int, batch: dict) -> None:
    t = step + 1
    lr = float(np.float32(lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)))
    rows = {"wide_embedding": np.unique(batch["wide_sparse_fields"]),
            "deep_embedding": np.unique(batch["deep_sparse_fields"])}
    with torch.no_grad():
        for name, w in p.items():
            m, v = state.setdefault(name, (torch.zeros_like(w), torch.zeros_like(w)))
            index = torch.tensor(rows[name]).long() if name in rows else slice(None)
            g = w.grad[index]
            m[index] = 0.9 * m[index] + 0.1 * g
            v[index] = 0.999 * v[index] + 0.001 * g * g
            w[index] -= lr * m[index] / (torch.sqrt(v[index]) + 1e-8)
            w.grad = None


def test_wide_and_deep_first_steps_equal_torch():
    flags = model.Flags()
    train_job = model.build(flags)
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in flow.get_all_variables().items()
         if k.endswith(("embedding", "-weight", "-bias"))}
    assert len(p) == 8
    state: dict = {}
    for step in range(3):
        batch = model.synthetic_batch(flags, seed=step)
        before = {k: v.detach().numpy().copy() for k, v in p.items()}
        loss = train_job(**batch).get().numpy()
        per_example = torch_loss(p, batch, flags)
        per_example.mean().backward()
        lazy_adam_step(p, state, flags.learning_rate, step, batch)
        assert_close(loss, per_example.mean().detach(), f"step {step} loss")
        after = flow.get_all_variables()
        for name, value in p.items():
            assert_close(after[name], value, f"step {step} {name}")
        # rows no batch has touched yet are bit-identical (LazyAdam, not Adam with a zero gradient)
        untouched = np.setdiff1d(np.arange(flags.deep_vocab_size), batch["deep_sparse_fields"])
        if step == 0:
            np.testing.assert_array_equal(after["deep_embedding"][untouched], before["deep_embedding"][untouched])
