"""Running the pad job the view tests draw."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp


def run_pad_job():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    out = pad_Job(np.zeros((2, 1, 3, 3), np.float32))
    assert out.shape == (2, 1, 5, 5)
    return flow.default_session()
