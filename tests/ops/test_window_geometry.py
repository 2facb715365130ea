"""Conv and pooling output geometry has one formula (ops/cnn_ops.out_size) used by inference; kernels read the
inferred shapes, and gradient ops check that dy has the forward op's output shape."""

from __future__ import annotations

import pytest

from flowlab.errors import OpInferError
from flowlab.ir import BlobDesc
from flowlab.ir.dtype import float32
from flowlab.ops.cnn_ops import out_size
from flowlab.ops.registry import InferCtx, get_op_def

CONV = {"strides": (2, 1), "dilations": (1, 2), "pads": (1, 0, 2, 1), "groups": 1}
POOL = {"ksize": (3, 2), "strides": (2, 2), "pads": (1, 1, 0, 1)}


def infer(op_type, attrs, **shapes):
    ins = {arg: (BlobDesc(shape, float32),) for arg, shape in shapes.items()}
    return get_op_def(op_type).infer(InferCtx("t", op_type, ins, {**get_op_def(op_type).attrs, **attrs}))


def test_out_size_by_hand():
    assert out_size(7, 3, 2, 1, 1, 1) == 4  # padded 9, windows at 0, 2, 4, 6
    assert out_size(7, 3, 1, 2, 0, 0) == 3  # a dilated 3-window spans 5: starts 0, 1, 2
    assert out_size(5, 2, 2, 1, 1, 0) == 3


def test_forward_and_gradient_ops_agree_on_the_output_shape():
    (y,) = infer("conv2d", CONV, **{"in": (2, 3, 7, 6), "weight": (4, 3, 3, 2)})["out"]
    assert y.shape == (2, 4, out_size(7, 3, 2, 1, 1, 0), out_size(6, 2, 1, 2, 2, 1))
    infer("conv2d_data_grad", CONV, dy=y.shape, weight=(4, 3, 3, 2), like=(2, 3, 7, 6))
    infer("conv2d_filter_grad", CONV, dy=y.shape, x=(2, 3, 7, 6), like=(4, 3, 3, 2))
    (p,) = infer("max_pool2d", POOL, x=(1, 2, 6, 5))["y"]
    assert p.shape == (1, 2, out_size(6, 3, 2, 1, 1, 1), out_size(5, 2, 2, 1, 0, 1))
    infer("max_pool2d_grad", POOL, x=(1, 2, 6, 5), y=p.shape, dy=p.shape)


@pytest.mark.parametrize("op_type, shapes", [
    ("conv2d_data_grad", {"dy": (2, 4, 3, 5), "weight": (4, 3, 3, 2), "like": (2, 3, 7, 6)}),
    ("conv2d_filter_grad", {"dy": (2, 4, 4, 7), "x": (2, 3, 7, 6), "like": (4, 3, 3, 2)}),
])
def test_conv_gradients_refuse_a_dy_of_another_shape(op_type, shapes):
    with pytest.raises(OpInferError, match=r"dy f32\[2,4,\d,\d\] must have the op's output shape \[2, 4, 3, 7\]"):
        infer(op_type, CONV, **shapes)


def test_pool_gradient_refuses_a_dy_of_another_shape():
    with pytest.raises(OpInferError, match=r"must have the op's output shape \[1, 2, 3, 3\]"):
        infer("avg_pool2d_grad", POOL, x=(1, 2, 6, 5), y=(1, 2, 3, 3), dy=(1, 2, 3, 2))
    (dx,) = infer("avg_pool2d_grad", POOL, x=(1, 2, 6, 5), y=(1, 2, 3, 3), dy=(1, 2, 3, 3))["dx"]
    assert dx.shape == (1, 2, 6, 5)
