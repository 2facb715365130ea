"""Shared builders for the viz tests: a small hand-built Job and the compiled pad job."""

from __future__ import annotations

import pytest

from flowlab.ir import BlobDesc, Job, OpConf
from flowlab.ir.dtype import float32
from tests.helpers.pad_job import run_pad_job


def make_small_job(name: str = "pad_job") -> Job:
    ops = (
        OpConf("Input_0", "input", outputs={"out": ("Input_0/out",)}, loc="pad.py:9"),
        OpConf(
            "pad",
            "reflection_pad2d",
            inputs={"x": ("Input_0/out",)},
            outputs={"y": ("pad/y_0",)},
            attrs={"padding": [1, 1, 1, 1]},
            loc="pad.py:10",
        ),
        OpConf("Return_0", "return", inputs={"in": ("pad/y_0",)}, outputs={"out": ("Return_0/out",)}),
        OpConf("System-SinkTick", "sink_tick", ctrl_in_op_names=("Return_0",), created_by="AutoSinkTick"),
    )
    descs = {
        "Input_0/out": BlobDesc((2, 1, 3, 3), float32),
        "pad/y_0": BlobDesc((2, 1, 5, 5), float32),
        "Return_0/out": BlobDesc((2, 1, 5, 5), float32),
    }
    return Job(name, "user", ops, descs, job_conf={"job_type": "predict"})


@pytest.fixture
def small_job() -> Job:
    return make_small_job()


@pytest.fixture
def pad_session():
    return run_pad_job()


@pytest.fixture
def run_pad():
    """The pad job as a function: defines it, calls it once, returns the default session."""
    return run_pad_job


@pytest.fixture(scope="module")
def deep_mlp_session():
    from tests.helpers.deep_mlp import build_deep_mlp

    return build_deep_mlp()
