"""Checking an indexed-slices optimizer's configuration."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp

RNG = np.random.default_rng(8)


ROWS, FEAT, LR = 6, 3, 0.1


STEPS = [np.array([0, 2, 2, 5], np.int32), np.array([1, 5, 5, 5], np.int32), np.array([3, 0, 1, 1], np.int32)]


def _train(optimizer, indexed: bool, table: np.ndarray, weight: np.ndarray, devices: int = 1, distribute=None
           ) -> tuple[list[np.ndarray], list[str]]:
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = flow.FunctionConfig()
    if indexed:
        cfg.indexed_slices_optimizer_conf(dict(include_op_names=dict(op_name=["embeddings"])))

    @flow.global_function(type="train", function_config=cfg)
    def train_job(ids: tp.Numpy.Placeholder((4,), dtype=flow.int32),
                  weight: tp.Numpy.Placeholder((4, FEAT), dtype=flow.float64)) -> tp.Numpy:
        emb = flow.get_variable("embeddings", shape=(ROWS, FEAT), dtype=flow.float64, distribute=distribute)
        loss = flow.math.reduce_sum(flow.gather(emb, ids) * weight)
        optimizer().minimize(loss)
        return loss

    flow.load_variables({"embeddings": table})
    after = []
    for ids in STEPS:
        train_job(ids, weight)
        after.append(flow.get_all_variables()["embeddings"].copy())
    job = flow.default_session().job_set.job("train_job")
    ops = [op.op_type for op in job.ops]
    if devices > 1:
        ops.append(str(job.sbp_signatures["embeddings_optimizer"]))
    flow.config.cpu_device_num(1)
    return after, ops


def _lazy_adam():
    return flow.optimizer.LazyAdam(flow.optimizer.PiecewiseConstantScheduler([], [LR]))


def check_indexed_slices_optimizer_conf() -> None:
    """tests/frontend/test_config_fields.py's check that the field acts: the embedding's update is the indexed one."""
    table, weight = RNG.standard_normal((ROWS, FEAT)), RNG.standard_normal((4, FEAT))
    assert "indexed_slices_adam_update" in _train(_lazy_adam, True, table, weight)[1]
    assert "indexed_slices_adam_update" not in _train(_lazy_adam, False, table, weight)[1]
