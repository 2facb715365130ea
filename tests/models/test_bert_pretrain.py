"""examples/bert_pretrain.py (OneFlow-Benchmark's BERT pretraining, tiny) against a torch BERT written here from
the architecture (bert.py / pretrain.py's structure: embeddings + layer norm, masked self attention, gelu, the
tied masked-LM head over gathered positions weighted by masked_lm_weights, the next sentence head) and OneFlow's
update rules: global-norm clipping to 1.0, AdamW without bias correction (AdamUpdateFunctor) with weight decay off
for names matching "bias" / "LayerNorm", the polynomial schedule after a linear warmup. The first three steps'
losses and every variable after each step, from the same initial values."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import flowlab as flow  # noqa: E402
from examples import bert_pretrain as model  # noqa: E402

from ._torch_ref import assert_close, polynomial_lr  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def layer_norm(x, p, prefix):
    return F.layer_norm(x, x.shape[-1:], p[prefix + "-LayerNorm-gamma"], p[prefix + "-LayerNorm-beta"], eps=1e-5)


def dense(x, p, prefix):
    return x @ p[prefix + "-weight"] + p[prefix + "-bias"]  # OneFlow's BERT weights are (in, out)


def torch_losses(p: dict, batch: dict, cfg: model.Config):
    """In the parameters' dtype (float64 here; benchmarks/models.py times it in float32)."""
    b, s, h, heads = cfg.batch_size, cfg.seq_length, cfg.hidden_size, cfg.num_attention_heads
    ids = torch.tensor(batch["input_ids"]).long()
    x = p["bert-embeddings-word_embeddings"][ids]
    x = x + p["bert-embeddings-token_type_embeddings"][torch.tensor(batch["segment_ids"]).long()]
    x = x + p["bert-embeddings-position_embeddings"][:, :s]
    x = layer_norm(x, p, "bert-embeddings").reshape(b * s, h)
    mask = torch.tensor(batch["input_mask"], dtype=x.dtype).reshape(b, 1, 1, s)
    d = h // heads
    for layer in range(cfg.num_hidden_layers):
        pre = f"bert-encoder-layer_{layer}"

        def split(t):
            return t.reshape(b, s, heads, d).permute(0, 2, 1, 3)

        q, k, v = (split(dense(x, p, f"{pre}-attention-self-{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + (mask - 1.0) * 10000.0
        context = (F.softmax(scores, dim=-1) @ v).permute(0, 2, 1, 3).reshape(b * s, h)
        attn = layer_norm(dense(context, p, f"{pre}-attention-output-dense") + x, p, f"{pre}-attention-output")
        inter = F.gelu(dense(attn, p, f"{pre}-intermediate-dense"))
        x = layer_norm(dense(inter, p, f"{pre}-output-dense") + attn, p, f"{pre}-output")
    seq = x.reshape(b, s, h)
    # masked LM: the positions' hidden states, transform, logits against the word embedding table
    positions = torch.tensor(batch["masked_lm_positions"]).long()
    gathered = seq[torch.arange(b)[:, None], positions].reshape(-1, h)
    t = layer_norm(F.gelu(dense(gathered, p, "cls-predictions-transform-dense")), p, "cls-predictions-transform")
    logits = t @ p["bert-embeddings-word_embeddings"].T + p["cls-predictions-output_bias"]
    per = F.cross_entropy(logits, torch.tensor(batch["masked_lm_ids"]).long().reshape(-1), reduction="none")
    weights = torch.tensor(batch["masked_lm_weights"], dtype=x.dtype)
    denominator = weights.sum() / b + 1e-5
    lm_loss = ((per.reshape(b, -1) * weights).sum(-1) / denominator).mean()
    pooled = torch.tanh(dense(seq[:, 0], p, "bert-pooler-dense"))
    ns_logits = pooled @ p["cls-seq_relationship-output_weights"].T + p["cls-seq_relationship-output_bias"]
    ns_loss = F.cross_entropy(ns_logits, torch.tensor(batch["next_sentence_labels"]).long().reshape(-1))
    return lm_loss + ns_loss, lm_loss, ns_loss


def adamw_step(p: dict, state: dict, lr: float, cfg: model.Config) -> None:
    """Global-norm clipping to 1.0, then OneFlow's AdamUpdateFunctor (no bias correction, beta1 0.9, beta2 0.999,
    epsilon 1e-6), weight decay for names not matching the excludes."""
    with torch.no_grad():
        norm = math.sqrt(sum(float((v.grad ** 2).sum()) for v in p.values()))
        scale = 1.0 / max(norm, 1.0)
        for name, w in p.items():
            g = w.grad * scale
            m, v = state.get(name, (torch.zeros_like(w), torch.zeros_like(w)))
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            state[name] = (m, v)
            decay = 0.0 if re.search("bias|LayerNorm|layer_norm", name) else cfg.weight_decay_rate
            w -= lr * (m / (torch.sqrt(v) + 1e-6) + decay * w)
            w.grad = None


def test_bert_pretrain_first_steps_equal_torch():
    cfg = model.Config()
    train = model.build(cfg)
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in flow.get_all_variables().items()
         if k.startswith(("bert-", "cls-")) and not k.endswith(("-m", "-v"))}
    assert len(p) == 46
    state: dict = {}
    warmup = int(cfg.iter_num * cfg.warmup_proportion)
    for step in range(3):
        batch = model.synthetic_batch(cfg, seed=step)
        out = train(**batch)
        total, lm, ns = torch_losses(p, batch, cfg)
        total.backward()
        adamw_step(p, state, polynomial_lr(cfg.learning_rate, step, warmup, cfg.iter_num, 0.0, 1.0), cfg)
        for key, want in (("total_loss", total), ("mlm_loss", lm), ("nsp_loss", ns)):
            assert_close(out[key], want.detach(), f"step {step} {key}")
        after = flow.get_all_variables()
        for name, value in p.items():
            if "-key-bias" in name:
                # softmax over keys ignores what is added to every key alike, so the key bias's gradient is 0
                # in exact arithmetic: float rounding noise, which Adam's m / (sqrt(v) + eps) turns into tiny
                # steps of either sign; compared in absolute terms
                np.testing.assert_allclose(after[name], value.detach().numpy(), rtol=0, atol=1e-7, err_msg=name)
                continue
            assert_close(after[name], value, f"step {step} {name}")
