"""flow.optimizer.LazyAdam and FunctionConfig.indexed_slices_optimizer_conf (OneFlow v0.3.4's
IndexedSlicesOptimizerRewritePass, which Wide & Deep uses): an embedding read through a gather is updated on the
gathered rows only, over several steps, against a NumPy transcription of OneFlow's indexed_slices_adam_update
(equal ids summed first) with LazyAdam's bias correction; without the conf it is dense Adam with bias correction."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from tests.helpers.lazy_adam import FEAT, LR, RNG, ROWS, STEPS, _lazy_adam, _train
from tests.ops.helpers import run_op

LR32 = float(np.float32(LR))  # the learning-rate blob is float32, as OneFlow's


def _np_adam(table, weight, lazy: bool, b1=0.9, b2=0.999, eps=1e-8):
    w, m, v, out = table.copy(), np.zeros_like(table), np.zeros_like(table), []
    for step, ids in enumerate(STEPS):
        g = np.zeros_like(table)
        np.add.at(g, ids, weight)  # the gather's gradient: equal ids summed
        t = step + 1
        lr = LR32 * math.sqrt(1 - b2**t) / (1 - b1**t)
        rows = np.unique(ids) if lazy else np.arange(ROWS)
        m[rows] = b1 * m[rows] + (1 - b1) * g[rows]
        v[rows] = b2 * v[rows] + (1 - b2) * g[rows] ** 2
        w[rows] -= lr * m[rows] / (np.sqrt(v[rows]) + eps)
        out.append(w.copy())
    return out


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_lazy_adam_updates_only_the_gathered_rows(impl, monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", impl)
    table, weight = RNG.standard_normal((ROWS, FEAT)), RNG.standard_normal((4, FEAT))
    after, ops = _train(_lazy_adam, True, table, weight)
    assert "indexed_slices_adam_update" in ops and "adam_update" not in ops
    for got, want in zip(after, _np_adam(table, weight, lazy=True)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_array_equal(after[0][[1, 3, 4]], table[[1, 3, 4]])  # not gathered in step 1: untouched
    np.testing.assert_array_equal(after[1][[0, 2]], after[0][[0, 2]])  # nor in step 2 (dense Adam moves them)
    np.testing.assert_array_equal(after[2][4], table[4])  # never gathered


def test_a_row_split_embedding_on_two_devices_updates_each_devices_rows():
    """Wide & Deep's model-parallel table: the update's S(0) candidate, each device the ids in its rows."""
    table, weight = RNG.standard_normal((ROWS, FEAT)), RNG.standard_normal((4, FEAT))
    after, ops = _train(_lazy_adam, True, table, weight, devices=2, distribute=flow.distribute.split(0))
    assert "indexed_slices_adam_update" in ops
    assert ops[-1].startswith("{model_0: S(0), model_diff_indices_0: B, model_diff_values_0: B"), ops[-1]
    for got, want in zip(after, _np_adam(table, weight, lazy=True)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_without_the_conf_lazy_adam_is_dense_adam_with_bias_correction():
    table, weight = RNG.standard_normal((ROWS, FEAT)), RNG.standard_normal((4, FEAT))
    after, ops = _train(_lazy_adam, False, table, weight)
    assert "adam_update" in ops and "indexed_slices_adam_update" not in ops
    for got, want in zip(after, _np_adam(table, weight, lazy=False)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not np.array_equal(after[1][[0, 2]], after[0][[0, 2]])  # the rows step 2 did not gather still move


def test_adam_with_the_conf_is_indexed_too():
    """OneFlow's pass rewrites adam_update whatever optimizer made it; here Adam with bias correction."""
    table, weight = RNG.standard_normal((ROWS, FEAT)), RNG.standard_normal((4, FEAT))
    after, ops = _train(lambda: flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [LR]),
                                                    do_bias_correction=True), True, table, weight)
    assert "indexed_slices_adam_update" in ops
    np.testing.assert_allclose(after[-1], _np_adam(table, weight, lazy=True)[-1], rtol=1e-12)


@pytest.mark.parametrize("impl", ["reference", "numba"])
def test_indexed_slices_kernel_one_act_and_a_bad_index(impl):
    w, m, v = RNG.standard_normal((4, 2)), RNG.standard_normal((4, 2)), RNG.uniform(0, 1, (4, 2))
    ids, values = np.array([2, 0, 2], np.int64), RNG.standard_normal((3, 2))
    arrays = {"model": [w.copy()], "model_diff_indices": [ids], "model_diff_values": [values],
              "learning_rate": [np.array([0.5], np.float32)], "m": [m.copy()], "v": [v.copy()],
              "train_step": [np.array([0], np.int64)]}
    attrs = {"scale": 2.0, "weight_decay": 0.1, "beta1": 0.8, "beta2": 0.9, "epsilon": 1e-3}
    run_op("indexed_slices_adam_update", arrays, attrs, impl)
    g = np.zeros_like(w)
    np.add.at(g, ids, 2.0 * values)
    rows = [0, 2]
    m2, v2 = 0.8 * m[rows] + 0.2 * g[rows], 0.9 * v[rows] + 0.1 * g[rows] ** 2
    want = w.copy()
    want[rows] -= 0.5 * (m2 / (np.sqrt(v2) + 1e-3) + 0.1 * w[rows])
    np.testing.assert_allclose(arrays["model"][0], want, rtol=1e-13)
    np.testing.assert_array_equal(arrays["m"][0][[1, 3]], m[[1, 3]])
    arrays["model_diff_indices"] = [np.array([2, 4, 0], np.int64)]
    with pytest.raises(IndexError, match=r"index 4 \(at flat position 1 of shape \(3,\)\) is out of range \[0, 4\)"):
        run_op("indexed_slices_adam_update", arrays, attrs, impl)


def test_a_malformed_conf_is_refused_where_it_is_set():
    cfg = flow.FunctionConfig()
    with pytest.raises(ValueError, match=r"indexed_slices_optimizer_conf takes dict\(include_op_names=dict\(op_name="):
        cfg.indexed_slices_optimizer_conf(dict(op_name=["embeddings"]))


def _np_indexed_sgd(table, weight, beta: float | None):
    w, mom, out = table.copy(), np.zeros_like(table), []
    for ids in STEPS:
        g = np.zeros_like(table)
        np.add.at(g, ids, weight)
        rows = np.unique(ids)
        if beta is None:  # SGDUpdateFunctor on the gathered rows
            w[rows] -= LR32 * g[rows]
        else:  # MomentumUpdateFunctor on the gathered rows: the other rows' momentum does not move them
            mom[rows] = beta * mom[rows] - LR32 * g[rows]
            w[rows] += mom[rows]
        out.append(w.copy())
    return out


@pytest.mark.parametrize("devices", [1, 2])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_indexed_slices_sgd_and_momentum(momentum, devices):
    """OneFlow's pass rewrites sgd_update and momentum_update too (test_optimizers.py's indexed_slices cases)."""
    table, weight = RNG.standard_normal((ROWS, FEAT)), RNG.standard_normal((4, FEAT))
    after, ops = _train(lambda: flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [LR]),
                                                   momentum=momentum), True, table, weight, devices=devices,
                        distribute=flow.distribute.split(0) if devices > 1 else None)
    kind = "indexed_slices_momentum_update" if momentum else "indexed_slices_sgd_update"
    assert kind in ops
    for got, want in zip(after, _np_indexed_sgd(table, weight, momentum or None)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_adamw_through_a_scalar_mul_decays_only_the_gathered_rows():
    """gather(table * 2, ids): OneFlow's pass follows the scalar_mul between the segment sum and the update, moves
    it onto the gathered values and deletes the dense segment sum, so weight decay touches only the gathered rows
    (before the fix the update ran dense and decayed every row)."""
    flow.clear_default_session()
    cfg = flow.FunctionConfig()
    cfg.indexed_slices_optimizer_conf(dict(include_op_names=dict(op_name=["embeddings"])))
    table, weight, wd = RNG.standard_normal((ROWS, FEAT)), RNG.standard_normal((4, FEAT)), 0.3

    @flow.global_function(type="train", function_config=cfg)
    def train_job(ids: tp.Numpy.Placeholder((4,), dtype=flow.int32),
                  weight: tp.Numpy.Placeholder((4, FEAT), dtype=flow.float64)) -> tp.Numpy:
        emb = flow.get_variable("embeddings", shape=(ROWS, FEAT), dtype=flow.float64)
        loss = flow.math.reduce_sum(flow.gather(emb * 2.0, ids) * weight)
        flow.optimizer.AdamW(flow.optimizer.PiecewiseConstantScheduler([], [LR]), do_bias_correction=True,
                             weight_decay=wd).minimize(loss)
        return loss

    flow.load_variables({"embeddings": table})
    w, m, v = table.copy(), np.zeros_like(table), np.zeros_like(table)
    for t, ids in enumerate(STEPS, start=1):
        train_job(ids, weight)
        g = np.zeros_like(table)
        np.add.at(g, ids, 2.0 * weight)
        rows = np.unique(ids)
        lr = LR32 * math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        m[rows] = 0.9 * m[rows] + 0.1 * g[rows]
        v[rows] = 0.999 * v[rows] + 0.001 * g[rows] ** 2
        w[rows] -= lr * (m[rows] / (np.sqrt(v[rows]) + 1e-8) + wd * w[rows])
        np.testing.assert_allclose(flow.get_all_variables()["embeddings"], w, rtol=1e-12)
    np.testing.assert_array_equal(w[4], table[4])  # never gathered: not decayed either
    ops = {op.name: op for op in flow.default_session().job_set.job("train_job").ops}
    kinds = [op.op_type for op in ops.values()]
    assert "indexed_slices_adam_update" in kinds and "unsorted_segment_sum_like" not in kinds
    update = ops["embeddings_optimizer"]
    scaled = ops[update.inputs["model_diff_values"][0].rpartition("/")[0]]
    assert scaled.op_type == "scalar_mul" and scaled.attrs["operand"] == 2.0
