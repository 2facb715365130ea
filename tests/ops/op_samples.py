"""One small, valid invocation of every (non-system) op type, for the tests that go over all of them (NaN/Inf
agreement of the kernel modes, every dtype). ``sample(op_type, dt)`` gives (inputs, attrs) with the op's data
arguments in numpy dtype ``dt``; index arguments (labels, ids) stay int32. ``DATA_ARGS[op]`` names the data
arguments. A test asserts the table covers every registered op type, so a new op cannot be left out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flowlab.ir import dtype as fd

RNG = np.random.default_rng(77)
Inputs = dict[str, list[np.ndarray]]


def val(shape: tuple[int, ...], dt: Any, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    """Values in [low, high]; integers are rounded (and clipped at 0 for unsigned types)."""
    x = RNG.uniform(low, high, shape)
    dt = np.dtype(dt)
    if dt.kind in "iu":
        x = np.round(x)
        if dt.kind == "u":
            x = np.abs(x)
    return x.astype(dt)


def ids(shape: tuple[int, ...], n: int) -> np.ndarray:
    return RNG.integers(0, n, shape).astype(np.int32)


_POOL = {"ksize": (2, 2), "strides": (2, 2), "pads": (1, 0, 1, 0)}
_CONV = {"strides": (1, 1), "dilations": (1, 1), "pads": (1, 1, 0, 1), "groups": 1}
_UPDATE = {"weight_decay": 0.01, "scale": 0.5, "l1": 0.001, "l2": 0.002}
_X = (3, 4)


def _unary(positive: bool = False) -> Callable[[Any], tuple[Inputs, dict]]:
    return lambda dt: ({"x": [val(_X, dt, 0.5 if positive else -2, 2)]}, {})


def _pool_grad(dt: Any) -> tuple[Inputs, dict]:
    x = val((1, 2, 5, 5), dt)
    return {"x": [x], "y": [val((1, 2, 3, 3), dt)], "dy": [val((1, 2, 3, 3), dt)]}, dict(_POOL)


def _reduce_max_grad(dt: Any) -> tuple[Inputs, dict]:
    x = val((3, 4, 2), dt)
    x[0, 1, 0] = x[0, 3, 0] = 3  # a tie along the reduced axis shares the gradient
    return {"x": [x], "y": [x.max(1)], "dy": [val((3, 2), dt)]}, {"axis": 1, "keepdims": False}


def _ties(dt: Any) -> np.ndarray:
    x = val((3, 4, 2), dt)
    x[0, 1, 0] = x[2, 1, 1] = x[0, 2, 1] = x[1, 2, 0] = 0 if np.dtype(dt).kind == "u" else -3  # ties for the minimum
    return x


def _mask() -> np.ndarray:
    return RNG.integers(0, 2, (3, 4, 2)).astype(np.int8)


def _norm(training: bool) -> Callable[[Any], tuple[Inputs, dict]]:
    def make(dt: Any) -> tuple[Inputs, dict]:
        ins = {"x": [val((2, 3, 4), dt)], "moving_mean": [val((3,), dt)], "moving_variance": [val((3,), dt, 0.5, 2)],
               "gamma": [val((3,), dt)], "beta": [val((3,), dt)]}
        return ins, {"axis": 1, "training": training}

    return make


def _prob(dt: Any, shape: tuple[int, ...] = (4, 5)) -> np.ndarray:
    e = np.exp(val(shape, np.float64))
    return (e / e.sum(-1, keepdims=True)).astype(dt)


_UNARY_DOMAINS = [(t, -0.9, 0.9) for t in ("acos", "asin", "atanh")] + [("acosh", 1.1, 3.0), ("lgamma", 2.5, 4.0)] + [
    (t, -2.0, 2.0) for t in ("asinh", "atan", "ceil", "cos", "cosh", "erf", "erfc", "expm1", "floor", "log_sigmoid",
                             "reciprocal_no_nan", "rint", "round", "sin", "sinh", "softplus", "tan")] + [
    ("log1p", -0.5, 2.0), ("rsqrt", 0.5, 2.0)]

_CLIPS = ("clip_by_scalar", "clip_by_scalar_min", "clip_by_scalar_max")


def _clip_attrs(op: str) -> dict:
    bounds = {"min": -1.0, "max": 1.0} if op == "clip_by_scalar" else {op[-3:]: -0.5 if op.endswith("min") else 0.5}
    return {f"{k}_{b}": (float(v) if k == "floating" else int(v)) for b, v in bounds.items()
            for k in ("floating", "integral")}


def _nd_ids(shape: tuple[int, ...], dims: tuple[int, ...]) -> np.ndarray:
    """N-d indices: the last axis holds one coordinate per axis of ``dims`` (duplicates likely, on purpose)."""
    return np.stack([RNG.integers(0, d, shape[:-1]) for d in dims], axis=-1).astype(np.int32)


SAMPLES: dict[str, Callable[[Any], tuple[Inputs, dict]]] = {
    **{t: _unary() for t in ("abs", "negative", "relu", "sigmoid", "tanh", "exp", "sign", "square", "gelu")},
    **{t: _unary(positive=True) for t in ("log", "sqrt", "reciprocal")},
    "leaky_relu": lambda dt: ({"x": [val(_X, dt)]}, {"alpha": 0.25}),
    **{t: (lambda dt: ({"y": [val(_X, dt, -1, 1)], "dy": [val(_X, dt)]}, {}))
       for t in ("relu_grad", "sigmoid_grad", "tanh_grad")},
    "gelu_grad": lambda dt: ({"x": [val(_X, dt)], "dy": [val(_X, dt)]}, {}),
    "leaky_relu_grad": lambda dt: ({"x": [val(_X, dt)], "dy": [val(_X, dt)]}, {"alpha": 0.25}),
    **{t: (lambda dt: ({"x": [val(_X, dt)], "y": [val((4,), dt, 1, 3)]}, {}))
       for t in ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div")},
    "scalar_add": lambda dt: ({"x": [val(_X, dt)]}, {"operand": 2}),
    "scalar_mul": lambda dt: ({"x": [val(_X, dt)]}, {"operand": 2}),
    "reduce_sum_like": lambda dt: ({"x": [val((2, 3, 4), dt)], "like": [val((3, 1), dt)]}, {}),
    "broadcast_like": lambda dt: ({"x": [val((3,), dt)], "like": [val((3, 4), dt)]}, {"broadcast_axes": (1,)}),
    **{t: (lambda dt: ({"input_tensor": [val((3, 4, 2), dt)]}, {"axis": (0, 2), "keepdims": False}))
       for t in ("reduce_sum", "reduce_mean", "reduce_max")},
    "reduce_max_grad": _reduce_max_grad,
    "argmax": lambda dt: ({"in": [val((3, 5), dt)]}, {}),
    "matmul": lambda dt: ({"a": [val((3, 4), dt)], "b": [val((4, 2), dt)]}, {}),
    "bias_add": lambda dt: ({"a": [val((2, 3, 4), dt)], "b": [val((3,), dt)]}, {"axis": 1}),
    "softmax": lambda dt: ({"in": [val((4, 5), dt)]}, {}),
    "softmax_grad": lambda dt: ({"y": [_prob(dt)], "dy": [val((4, 5), dt)]}, {}),
    "sparse_softmax_cross_entropy": lambda dt: ({"prediction": [val((4, 5), dt)], "label": [ids((4,), 5)]}, {}),
    "sparse_softmax_cross_entropy_grad": lambda dt: (
        {"prob": [_prob(dt)], "label": [ids((4,), 5)], "dy": [val((4,), dt)]}, {}),
    "sparse_softmax_cross_entropy_ms": lambda dt: (
        {"prediction": [val((4, 5), dt)], "label": [ids((4,), 5)]}, {"depth": 5}),
    "sparse_softmax_cross_entropy_ms_grad": lambda dt: (
        {"prob": [_prob(dt)], "label": [ids((4,), 5)], "dy": [val((4,), dt)]}, {"depth": 5}),
    "sparse_cross_entropy_ms": lambda dt: ({"prediction": [_prob(dt)], "label": [ids((4,), 5)]}, {"depth": 5}),
    "reduce_max_device_stage": lambda dt: ({"in": [val((4, 5), dt)]}, {"axis": (1,), "device_num": 2}),
    "reduce_max_global_stage": lambda dt: (
        {"in": [val((4, 3), dt)], "device_count": [np.ones((4, 3), np.int32)]}, {"axis": (1,), "keepdims": True}),
    "softmax_cross_entropy": lambda dt: ({"prediction": [val((4, 5), dt)], "label": [_prob(dt)]}, {}),
    "softmax_cross_entropy_grad": lambda dt: (
        {"prob": [_prob(dt)], "label": [_prob(dt)], "dy": [val((4,), dt)]}, {}),
    "sigmoid_cross_entropy": lambda dt: ({"prediction": [val(_X, dt)], "label": [val(_X, dt, 0, 1)]}, {}),
    "sigmoid_cross_entropy_grad": lambda dt: (
        {"prediction": [val(_X, dt)], "label": [val(_X, dt, 0, 1)], "dy": [val(_X, dt)]}, {}),
    "gather": lambda dt: ({"in": [val((5, 3), dt)], "indices": [ids((2, 2), 5)]}, {"axis": 0, "logical_axis_size": 5}),
    "unsorted_segment_sum_like": lambda dt: (
        {"data": [val((3, 4, 2), dt)], "segment_ids": [ids((4,), 5)], "like": [val((3, 5, 2), dt)]},
        {"axis": 1, "logical_axis_size": 5}),  # as flow.math's: offers like S(1) (model parallel) too
    "slice": lambda dt: ({"x": [val((4, 5), dt)]}, {"slice_tup_list": ((1, 4, 2), (None, None, None))}),
    "slice_grad": lambda dt: ({"dy": [val((2, 5), dt)], "like": [val((4, 5), dt)]},
                              {"slice_tup_list": ((1, 4, 2), (None, None, None))}),
    "reshape": lambda dt: ({"in": [val((2, 6), dt)]}, {"shape": (3, -1)}),
    "identity": lambda dt: ({"in": [val(_X, dt)]}, {}),
    "transpose": lambda dt: ({"input": [val((2, 3, 4), dt)]}, {"perm": (2, 0, 1)}),
    "concat": lambda dt: ({"in": [val((2, 3), dt), val((2, 1), dt)]}, {"axis": 1}),
    "split_like": lambda dt: ({"in": [val((2, 4), dt)], "like": [val((2, 1), dt), val((2, 3), dt)]}, {"axis": 1}),
    "cast": lambda dt: ({"in": [val(_X, dt)]}, {"dtype": fd.float64}),
    "constant": lambda dt: ({}, {"value": 2, "dtype": fd.from_numpy(dt), "shape": (2, 2)}),
    "zeros_like": lambda dt: ({"like": [val(_X, dt)]}, {}),
    "ones_like": lambda dt: ({"like": [val(_X, dt)]}, {}),
    "reflection_pad2d": lambda dt: ({"x": [val((1, 2, 3, 4), dt)]}, {"padding": (1, 2, 2, 0)}),
    "zero_pad2d": lambda dt: ({"x": [val((1, 2, 3, 4), dt)]}, {"padding": (1, 2, 2, 0)}),
    "reflection_pad2d_grad": lambda dt: ({"dy": [val((1, 2, 5, 7), dt)]}, {"padding": (1, 2, 2, 0)}),
    "zero_pad2d_grad": lambda dt: ({"dy": [val((1, 2, 5, 7), dt)]}, {"padding": (1, 2, 2, 0)}),
    "conv2d": lambda dt: ({"in": [val((2, 2, 5, 4), dt)], "weight": [val((3, 2, 3, 2), dt)]}, dict(_CONV)),
    "conv2d_data_grad": lambda dt: (
        {"dy": [val((2, 3, 5, 4), dt)], "weight": [val((3, 2, 3, 2), dt)], "like": [val((2, 2, 5, 4), dt)]},
        dict(_CONV)),
    "conv2d_filter_grad": lambda dt: (
        {"dy": [val((2, 3, 5, 4), dt)], "x": [val((2, 2, 5, 4), dt)], "like": [val((3, 2, 3, 2), dt)]},
        dict(_CONV)),
    "max_pool2d": lambda dt: ({"x": [val((1, 2, 5, 5), dt)]}, dict(_POOL)),
    "avg_pool2d": lambda dt: ({"x": [val((1, 2, 5, 5), dt)]}, dict(_POOL)),
    "max_pool2d_grad": _pool_grad,
    "avg_pool2d_grad": _pool_grad,
    "dropout": lambda dt: ({"in": [val((4, 6), dt)]}, {"rate": 0.5, "seed": 3}),
    "dropout_grad": lambda dt: ({"dy": [val((4, 6), dt)], "mask": [val((4, 6), dt, 0, 2)]}, {"rate": 0.5}),
    "normalization": _norm(True),
    "normalization_grad": lambda dt: (
        {"x": [val((2, 3, 4), dt)], "dy": [val((2, 3, 4), dt)], "mean": [val((3,), dt)],
         "inv_variance": [val((3,), dt, 0.5, 2)], "gamma": [val((3,), dt)]}, {"axis": 1}),
    "sgd_update": lambda dt: ({"model": [val(_X, dt)], "model_diff": [val(_X, dt)],
                               "learning_rate": [np.array([0.1], np.float32)]}, dict(_UPDATE)),
    "momentum_update": lambda dt: ({"model": [val(_X, dt)], "model_diff": [val(_X, dt)], "momentum": [val(_X, dt)],
                                    "learning_rate": [np.array([0.1], np.float32)]}, {**_UPDATE, "beta": 0.9}),
    "adam_update": lambda dt: (
        {"model": [val(_X, dt)], "model_diff": [val(_X, dt)], "m": [val(_X, dt)], "v": [val(_X, dt, 0, 1)],
         "learning_rate": [np.array([0.1], np.float32)], "train_step": [np.array([3], np.int64)]},
        {**_UPDATE, "do_bias_correction": True}),
    "indexed_slices_adam_update": lambda dt: (
        {"model": [val((5, 2, 3), dt)], "model_diff_indices": [np.array([[3, 0], [3, 1]], np.int32)],
         "model_diff_values": [val((2, 2, 2, 3), dt)], "learning_rate": [np.array([0.1], np.float32)],
         "m": [val((5, 2, 3), dt)], "v": [val((5, 2, 3), dt, 0, 1)], "train_step": [np.array([2], np.int64)]},
        {"weight_decay": 0.01, "scale": 0.5, "do_bias_correction": True, "logical_rows": 5}),
    "lamb_update": lambda dt: (
        {"model": [val(_X, dt)], "model_diff": [val(_X, dt)], "m": [val(_X, dt)], "v": [val(_X, dt, 0, 1)],
         "beta1_t": [np.array([0.9], dt)], "beta2_t": [np.array([0.999], dt)],
         "learning_rate": [np.array([0.1], np.float32)]}, {**_UPDATE, "epsilon": 1e-6}),
    **{t: (lambda dt, t=t: (
        {"model": [val((5, 2, 3), dt)], "model_diff_indices": [np.array([[3, 0], [3, 1]], np.int32)],
         "model_diff_values": [val((2, 2, 2, 3), dt)], "learning_rate": [np.array([0.1], np.float32)],
         **({"momentum": [val((5, 2, 3), dt)]} if "momentum" in t else {})},
        {"weight_decay": 0.01, "scale": 0.5, "beta": 0.8, "logical_rows": 5} if "momentum" in t else
        {"weight_decay": 0.01, "scale": 0.5, "logical_rows": 5}))
       for t in ("indexed_slices_sgd_update", "indexed_slices_momentum_update")},
    "rmsprop_update": lambda dt: (
        {"model": [val(_X, dt)], "model_diff": [val(_X, dt)], "mean_square": [val(_X, dt, 0, 1)],
         "learning_rate": [np.array([0.1], np.float32)]}, dict(_UPDATE)),
    "assign": lambda dt: ({"ref": [val(_X, dt)], "value": [val(_X, dt)]}, {}),
    "clip_by_global_norm": lambda dt: ({"in": [val(_X, dt), val((5,), dt)]}, {"clip_norm": 1.5}),
    "learning_rate_schedule": lambda dt: (
        {"train_step": [np.array([7], np.int64)]},
        {"learning_rate": 0.1, "decay": {"type": "cosine", "decay_batches": 20, "alpha": 0.1}, "warmup": None}),
    "one_hot": lambda dt: ({"indices": [ids((3, 2), 4)]}, {
        "depth": 4, "floating_on_value": 2.5, "integer_on_value": 2, "floating_off_value": -1.0,
        "integer_off_value": -1, "dtype": fd.from_numpy(dt)}),
    "batch_gather": lambda dt: ({"in": [val((2, 5, 3), dt)], "indices": [ids((2, 4), 5)]}, {}),
    "unsorted_batch_segment_sum": lambda dt: (
        {"data": [val((2, 4, 3), dt)], "segment_ids": [ids((2, 4), 5)]}, {"num_segments": 5}),
    "add_n": lambda dt: ({"in": [val(_X, dt), val(_X, dt), val(_X, dt)]}, {}),
    "tuple_identity": lambda dt: ({"in": [val(_X, dt), val((2,), dt)]}, {}),
    "pad": lambda dt: ({"x": [val((2, 3, 2), dt)]}, {
        "padding_before": (1, 0, 2), "padding_after": (0, 0, 1), "floating_constant_value": 3.0,
        "integral_constant_value": 3}),
    "pad_grad": lambda dt: ({"dy": [val((3, 3, 5), dt)]}, {"padding_before": (1, 0, 2), "padding_after": (0, 0, 1)}),
    # compare_ops (issue 23): y in [1, 3] keeps floor mod off zero; integers round, so the comparisons see ties
    **{t: (lambda dt: ({"x": [val(_X, dt)], "y": [val((4,), dt, 1, 3)]}, {}))
       for t in ("broadcast_equal", "broadcast_not_equal", "broadcast_greater", "broadcast_greater_equal",
                 "broadcast_less", "broadcast_less_equal", "broadcast_logical_and", "broadcast_maximum",
                 "broadcast_minimum", "broadcast_floor_mod")},
    **{t: (lambda dt: ({"x": [val(_X, dt)], "y": [val(_X, dt)]}, {}))
       for t in ("elementwise_maximum", "elementwise_minimum")},
    **{t: (lambda dt: ({"dz": [val(_X, dt)], "x": [val(_X, dt)], "y": [val(_X, dt)]}, {}))
       for t in ("elementwise_maximum_backward", "elementwise_minimum_backward")},
    "where": lambda dt: ({"condition": [ids(_X, 2)], "x": [val(_X, dt)], "y": [val(_X, dt)]}, {}),
    "broadcast_to_compatible_with": lambda dt: ({"x": [val((3, 1), dt)], "compatible": [val((1, 4), dt)]}, {}),
    # unary_ops (issue 23): each op's sample inside its domain (away from lgamma's poles and roots)
    **{t: (lambda dt, lo=lo, hi=hi: ({"x": [val(_X, dt, lo, hi)]}, {})) for t, lo, hi in _UNARY_DOMAINS},
    **{f"{t}_grad": (lambda dt, lo=lo, hi=hi: ({"x": [val(_X, dt, lo, hi)], "dy": [val(_X, dt)]}, {}))
       for t, lo, hi in _UNARY_DOMAINS if t != "lgamma"},
    # binary_ops (issue 23): positive bases for pow, y off zero for the divisions
    **{t: (lambda dt: ({"x": [val(_X, dt, 0.5, 2)], "y": [val(_X, dt, 0.5, 3)]}, {}))
       for t in ("pow", "atan2", "floordiv", "xdivy", "xlogy")},
    **{f"{t}_{a}_grad": (lambda dt: ({"x": [val(_X, dt, 0.5, 2)], "y": [val(_X, dt, 0.5, 3)], "dz": [val(_X, dt)]}, {}))
       for t in ("pow", "atan2", "floordiv", "xdivy", "xlogy") for a in ("x", "y")},
    "scalar_pow": lambda dt: ({"x": [val(_X, dt, 0.5, 2)]}, {"exponent": 2.5}),
    "scalar_pow_grad": lambda dt: ({"x": [val(_X, dt, 0.5, 2)], "dy": [val(_X, dt)]}, {"exponent": 2.5}),
    **{t: (lambda dt, t=t: ({"x": [val(_X, dt)]}, _clip_attrs(t))) for t in _CLIPS},
    **{f"{t}_grad": (lambda dt, t=t: ({"dy": [val(_X, dt)], "x": [val(_X, dt)]}, _clip_attrs(t))) for t in _CLIPS},
    # reduce_min/prod/all/any (issue 23): integers round, so all/any see zeros
    **{t: (lambda dt: ({"input_tensor": [val((3, 4, 2), dt)]}, {"axis": (0, 2), "keepdims": False}))
       for t in ("reduce_min", "reduce_prod", "reduce_all", "reduce_any")},
    "count_not_finite": lambda dt: ({"x": [val(_X, dt)]}, {}),
    "multi_count_not_finite": lambda dt: ({"x": [val(_X, dt), val((2, 5), dt)]}, {}),
    # creation_ops (issue 23)
    "range": lambda dt: ({}, {"start": 1, "limit": 10, "delta": 3, "dtype": fd.from_numpy(dt)}),
    "reverse": lambda dt: ({"in": [val((3, 4, 2), dt)]}, {"axis": (0, 2)}),
    "tril": lambda dt: ({"in": [val((2, 3, 4), dt)]}, {
        "diagonal": 1, "is_floating_fill_value": True, "floating_fill_value": 2.5, "integer_fill_value": 0}),
    "fused_scale_tril": lambda dt: ({"in": [val((2, 3, 4), dt)]}, {
        "diagonal": -1, "is_floating_fill_value": False, "floating_fill_value": 0.0, "integer_fill_value": 3,
        "is_floating_scale_value": False, "floating_scale_value": 1.0, "integer_scale_value": 2}),
    # sort_ops (issue 23): integers round, so the rows have ties
    "sort": lambda dt: ({"in": [val((3, 6), dt)]}, {"direction": "DESCENDING"}),
    "arg_sort": lambda dt: ({"in": [val((3, 6), dt)]}, {"direction": "ASCENDING"}),
    "top_k": lambda dt: ({"in": [val((3, 6), dt)]}, {"k": 4, "sorted": True}),
    "in_top_k": lambda dt: ({"targets": [ids((4,), 5)], "predictions": [val((4, 5), dt)]}, {"k": 2}),
    "elu": lambda dt: ({"x": [val(_X, dt)]}, {"alpha": 1.5}),
    "elu_grad": lambda dt: ({"x": [val(_X, dt)], "dy": [val(_X, dt)]}, {"alpha": 1.5}),
    "hardsigmoid": lambda dt: ({"x": [val(_X, dt, -5.0, 5.0)]}, {}),
    "hardsigmoid_grad": lambda dt: ({"x": [val(_X, dt, -5.0, 5.0)], "dy": [val(_X, dt)]}, {}),
    "hardswish": lambda dt: ({"x": [val(_X, dt, -5.0, 5.0)]}, {}),
    "hardswish_grad": lambda dt: ({"x": [val(_X, dt, -5.0, 5.0)], "dy": [val(_X, dt)]}, {}),
    "hardtanh": lambda dt: ({"x": [val(_X, dt)]}, {"min_val": -0.5, "max_val": 1.0}),
    "hardtanh_grad": lambda dt: ({"y": [np.clip(val(_X, dt), -0.5, 1.0)], "dy": [val(_X, dt)]},
                                 {"min_val": -0.5, "max_val": 1.0}),
    "smooth_l1_loss": lambda dt: ({"prediction": [val(_X, dt)], "label": [val(_X, dt)]}, {"beta": 0.5}),
    "smooth_l1_loss_grad": lambda dt: ({"loss_grad": [val(_X, dt)], "prediction": [val(_X, dt)],
                                        "label": [val(_X, dt)]}, {"beta": 0.5}),
    "sparse_cross_entropy": lambda dt: ({"prediction": [_prob(dt)], "label": [ids((4,), 5)]}, {"depth": 5}),
    "sparse_cross_entropy_grad": lambda dt: ({"prediction": [_prob(dt)], "label": [ids((4,), 5)],
                                              "dy": [val((4,), dt)]}, {"depth": 5}),
    "sparse_cross_entropy_ms_grad": lambda dt: ({"prediction": [_prob(dt)], "label": [ids((4,), 5)],
                                                 "dy": [val((4,), dt)]}, {"depth": 5}),
    "deconv2d": lambda dt: ({"in": [val((2, 3, 3, 3), dt)], "weight": [val((3, 2, 3, 3), dt)]},
                            {"strides": (2, 2), "dilations": (1, 1), "pads": (1, 1, 0, 1), "groups": 1,
                             "output_hw": (6, 6)}),
    "upsample": lambda dt: ({"x": [val((2, 3, 3, 4), dt)]}, {"height_scale": 2.0, "width_scale": 3.0,
                                                             "interpolation": "bilinear"}),
    "upsample_grad": lambda dt: ({"dy": [val((2, 3, 6, 12), dt)], "x": [val((2, 3, 3, 4), dt)]},
                                 {"height_scale": 2.0, "width_scale": 3.0, "interpolation": "bilinear"}),
    **{t: lambda dt: ({"x": [val((2, 2, 4, 5, 4), dt)]}, {"ksize": (2, 3, 2), "strides": (2, 2, 1),
                                                          "pads": (1, 0, 1, 1, 0, 1)})
       for t in ("max_pool3d", "avg_pool3d")},
    **{t: lambda dt: ({"x": [val((2, 2, 4, 5, 4), dt)], "y": [val((2, 2, 2, 3, 4), dt)],
                       "dy": [val((2, 2, 2, 3, 4), dt)]}, {"ksize": (2, 3, 2), "strides": (2, 2, 1),
                                                           "pads": (1, 0, 1, 1, 0, 1)})
       for t in ("max_pool3d_grad", "avg_pool3d_grad")},
    "prelu": lambda dt: ({"x": [val((2, 3, 4), dt)], "alpha": [val((3, 1), dt)]}, {}),
    "prelu_grad": lambda dt: ({"dy": [val((2, 3, 4), dt)], "x": [val((2, 3, 4), dt)], "alpha": [val((3, 1), dt)]},
                              {}),
    "l2_normalize": lambda dt: ({"x": [val((3, 4, 2), dt)]}, {"axis": 1, "epsilon": 1e-12}),
    "l2_normalize_grad": lambda dt: ({"dy": [val((3, 4, 2), dt)], "y": [val((3, 4, 2), dt, -0.5, 0.5)],
                                      "square_x_sum": [val((3, 1, 2), dt, 0.5, 2.0)]}, {"axis": 1, "epsilon": 1e-12}),
    "random_mask_like": lambda dt: ({"like": [val((4, 6), dt)]}, {"rate": 0.5, "seed": 3}),
    # fidindex (issue 23): LARS, N-d gather/scatter, random draws, slice_update, the ordinal encoder, segment sum
    "lars_update": lambda dt: (
        {"model": [val(_X, dt)], "model_diff": [val(_X, dt)], "learning_rate": [np.array([0.1], np.float32)],
         "train_step": [np.array([3], np.int64)], "momentum": [val(_X, dt)]},
        {**_UPDATE, "momentum_beta": 0.9, "epsilon": 1e-9, "lars_coefficient": 0.5}),
    "gather_nd": lambda dt: ({"params": [val((4, 3, 2), dt)], "indices": [_nd_ids((3, 2), (4, 3))]}, {}),
    "scatter_nd": lambda dt: ({"indices": [_nd_ids((4, 1), (5,))], "updates": [val((4, 2), dt)]}, {"shape": (5, 2)}),
    "scatter_nd_like": lambda dt: (
        {"like": [val((5, 2), dt)], "indices": [_nd_ids((4, 1), (5,))], "updates": [val((4, 2), dt)]}, {}),
    "tensor_scatter_nd_update": lambda dt: (
        {"params": [val((5, 2), dt)], "updates": [val((4, 2), dt)], "indices": [_nd_ids((4, 1), (5,))]}, {}),
    "tensor_scatter_nd_add": lambda dt: (
        {"params": [val((5, 2), dt)], "updates": [val((4, 2), dt)], "indices": [_nd_ids((4, 1), (5,))]}, {}),
    "dim_gather": lambda dt: ({"input": [val((3, 4), dt)], "index": [ids((3, 5), 4)]}, {"dim": 1}),
    "dim_scatter_add_like": lambda dt: (
        {"like": [val((3, 4), dt)], "input": [val((3, 5), dt)], "index": [ids((3, 5), 4)]}, {"dim": 1}),
    "bernoulli": lambda dt: ({"in": [val((4, 6), dt, 0, 1)]}, {"dtype": fd.from_numpy(dt), "seed": 7}),
    "generate_random_batch_permutation_indices": lambda dt: ({"x": [val((6, 2), dt)]}, {"seed": 7}),
    "slice_update": lambda dt: ({"x": [val((4, 5), dt)], "update": [val((2, 5), dt)]},
                                {"slice_tup_list": ((3, 0, -2), (None, None, None))}),
    # integers only, whatever dt (keys, table and size share the keys' index dtype; test_op_dtypes skips it)
    "CategoricalOrdinalEncode": lambda dt: (  # keys repeat and collide (capacity 8); one slot already taken
        {"in": [np.array([5, 13, -3, 5, 0, 21, 13], np.int32)], "table": [np.array(
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 13, 1, 0, 0, 0, 0], np.int32)], "size": [np.array([1], np.int32)]},
        {"hash_precomputed": True}),
    "unsorted_segment_sum": lambda dt: (
        {"data": [val((3, 4, 2), dt)], "segment_ids": [ids((4,), 5)]}, {"axis": 1, "num_segments": 5}),
    # dynamic (issue 23): the ops that end a dynamic blob and count its current shape
    "cast_to_static_shape": lambda dt: ({"input": [val((3, 4), dt)]}, {}),
    "shape_elem_cnt": lambda dt: ({"x": [val((3, 4, 2), dt)]}, {"include_axis": (0, 2), "exclude_axis": (),
                                                                 "dtype": fd.int32}),
    "sync_dynamic_resize": lambda dt: ({"in": [val((4, 3), dt)], "size": [np.array([2], np.int32)]}, {}),
    "argwhere": lambda dt: ({"input": [val((3, 4), dt, -1.0, 1.0).round()]}, {"dtype": fd.int32}),
    # fidrest (issue 23): two_stage_reduce's stages over axes other than the last alone, and their gradients
    "reduce_min_device_stage": lambda dt: ({"in": [_ties(dt)]}, {"axis": (0, 2)}),
    "reduce_min_global_stage": lambda dt: (
        {"in": [_ties(dt)], "device_count": [ids((3, 4, 2), 3)]}, {"axis": (1,), "keepdims": False}),
    "reduce_max_device_stage_grad": lambda dt: (
        {"out_diff": [val((1, 4, 1), dt)], "mask": [_mask()], "count": [ids((1, 4, 1), 3)]}, {"axis": (0, 2)}),
    "reduce_min_device_stage_grad": lambda dt: (
        {"out_diff": [val((1, 4, 1), dt)], "mask": [_mask()], "count": [ids((1, 4, 1), 3)]}, {"axis": (0, 2)}),
    "reduce_max_global_stage_grad": lambda dt: (
        {"out_diff": [val((3, 2), dt)], "mask": [_mask()], "device_count": [ids((3, 4, 2), 3)]},
        {"axis": (1,), "keepdims": False}),
    "reduce_min_global_stage_grad": lambda dt: (
        {"out_diff": [val((3, 1, 2), dt)], "mask": [_mask()], "device_count": [ids((3, 4, 2), 3)]},
        {"axis": (1,), "keepdims": True}),
    "unique_with_counts": lambda dt: ({"x": [val((9,), dt, -2, 2)]}, {}),  # rounded integers repeat; floats rarely
}
NOT_DATA = {"learning_rate"}  # a float32 scalar the passes make, whatever the variables' dtype
INDEX_ARGS = {"gather": "indices", "unsorted_segment_sum_like": "segment_ids", "sparse_softmax_cross_entropy": "label",
              "sparse_softmax_cross_entropy_grad": "label", "adam_update": "train_step",
              "sparse_softmax_cross_entropy_ms": "label", "sparse_softmax_cross_entropy_ms_grad": "label",
              "sparse_cross_entropy_ms": "label",
              "learning_rate_schedule": "train_step", "batch_gather": "indices", "one_hot": "indices",
              "indexed_slices_adam_update": "model_diff_indices", "indexed_slices_sgd_update": "model_diff_indices",
              "indexed_slices_momentum_update": "model_diff_indices",
              "unsorted_batch_segment_sum": "segment_ids",
              "where": "condition", "in_top_k": "targets",
              "sparse_cross_entropy": "label", "sparse_cross_entropy_grad": "label",
              "sparse_cross_entropy_ms_grad": "label",
              "unsorted_segment_sum": "segment_ids", "lars_update": "train_step",
              "gather_nd": "indices", "scatter_nd": "indices", "scatter_nd_like": "indices",
              "tensor_scatter_nd_update": "indices", "tensor_scatter_nd_add": "indices", "dim_gather": "index",
              "dim_scatter_add_like": "index", "sync_dynamic_resize": "size",
              "reduce_max_global_stage": "device_count", "reduce_min_global_stage": "device_count",
              "reduce_max_device_stage_grad": "count", "reduce_min_device_stage_grad": "count",
              "reduce_max_global_stage_grad": "device_count", "reduce_min_global_stage_grad": "device_count"}
IN_PLACE = {"sgd_update": ("model",), "momentum_update": ("model", "momentum"),
            "adam_update": ("model", "m", "v"), "rmsprop_update": ("model", "mean_square"), "assign": ("ref",),
            "normalization": ("moving_mean", "moving_variance"), "indexed_slices_adam_update": ("model", "m", "v"),
            "lamb_update": ("model", "m", "v", "beta1_t", "beta2_t"), "indexed_slices_sgd_update": ("model",),
            "indexed_slices_momentum_update": ("model", "momentum"), "lars_update": ("model", "momentum")}


def sample(op_type: str, dt: Any) -> tuple[Inputs, dict]:
    return SAMPLES[op_type](dt)


def data_args(op_type: str, inputs: Inputs, dt: Any) -> list[str]:
    """The arguments made in the dtype under test (not labels, indices, steps or the learning rate)."""
    return [arg for arg, arrays in inputs.items()
            if arg not in NOT_DATA and arg != INDEX_ARGS.get(op_type) and arrays[0].dtype == np.dtype(dt)]


def run_both(op_type: str, inputs: Inputs, attrs: dict, impl: str) -> list[np.ndarray]:
    """The op's outputs, then the inputs it updates in place, on copies of ``inputs``."""
    from .helpers import run_op

    copies = {arg: [a.copy() for a in arrays] for arg, arrays in inputs.items()}
    outs = run_op(op_type, copies, attrs, impl)
    return outs + [a for arg in IN_PLACE.get(op_type, ()) for a in copies[arg]]
