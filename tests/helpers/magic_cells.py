"""A %%flowjob cell the notebook tests run."""

from __future__ import annotations

from flowlab.viz.payload import MIME

JOBSET, PLAN = MIME["jobset"], MIME["plan"]


CELL = """
import numpy as np
import flowlab as flow
from flowlab.viz.payload import MIME
from tests.helpers.deep_mlp import DEEP_MLP, DEEP_MLP_CALL

JOBSET, PLAN = MIME["jobset"], MIME["plan"]
import flowlab.typing as tp

@flow.global_function()
def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
    return flow.reflection_pad2d(x, padding=1)

y = pad_Job(np.arange(18).reshape((2, 1, 3, 3)).astype(np.float32))
"""
