"""Saving a model's checkpoint and checking the files that did not change."""

from __future__ import annotations

import functools

import numpy as np

import flowlab as flow
import flowlab.typing as tp

W0 = {"type": "constant", "value": 0.5}


def define_job(names=("layer-weight", "other")):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return functools.reduce(flow.math.add, [flow.get_variable(n, shape=(2, 3), initializer=W0) for n in names])

    return job


def saved(tmp_path, names=("layer-weight", "other")):
    define_job(names)
    flow.load_variables({n: np.full((2, 3), i + 3, np.float32) for i, n in enumerate(names)})
    flow.checkpoint.save(tmp_path / "ckpt")
    flow.load_variables({n: np.full((2, 3), 9, np.float32) for n in names})
    return tmp_path / "ckpt"


def unchanged(names=("layer-weight", "other")):
    values = flow.get_all_variables()
    for n in names:
        np.testing.assert_array_equal(values[n], np.full((2, 3), 9, np.float32))
