"""OneFlow v0.3.4's composite losses (``oneflow/python/ops/nn_ops.py``: ``flow.nn.MSELoss``, ``L1Loss``,
``BCELoss``, ``BCEWithLogitsLoss``, ``MarginRankingLoss``, ``TripletMarginLoss``, ``KLDivLoss``), built from math
ops in OneFlow's order, so their values and gradients are those ops'.

Where OneFlow calls an op flowlab lacks, the same function is written with ops it has (docs/ops.md lists them):
``flow.clip(x, min_value=0)`` is ``relu(x)`` (the values agree; the gradients everywhere except at x == 0
exactly, where clip passes dy and relu does not), ``pow(x, p)`` of the positive norms is ``exp(p log x)``, and
KLDivLoss's ``where(rint(target + 0.5), loss, 0)`` keeps the terms of positive targets (see ``KLDivLoss``)."""

from __future__ import annotations

from ..frontend.blob import LazyBlob
from ._common import require_blob
from .math_ops import abs as abs_
from .math_ops import add, exp, log, multiply, negative, relu, sign, sqrt, square, subtract
from .reduce_ops import reduce_mean, reduce_sum

_REDUCTIONS = ("none", "mean", "sum")


def _check(name: str, reduction: str, *pairs: tuple[str, LazyBlob]) -> None:
    for what, blob in pairs:
        require_blob(blob, f"{name}'s {what}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction!r} is not a valid value for {name}'s reduction; it must be one of "
                         "'none', 'mean', 'sum'")


def _same_shape(name: str, a: tuple[str, LazyBlob], b: tuple[str, LazyBlob]) -> None:
    if a[1].shape != b[1].shape:
        raise ValueError(f"{name}: the {a[0]} {a[1].blob_desc} and the {b[0]} {b[1].blob_desc} must have one shape")


def _reduce(loss: LazyBlob, reduction: str, name: str | None) -> LazyBlob:
    # OneFlow names the reduction "<name>_reduce_mean" / "_reduce_sum"; unnamed, the builder names it
    if reduction == "mean":
        return reduce_mean(loss, name=None if name is None else f"{name}_reduce_mean")
    if reduction == "sum":
        return reduce_sum(loss, name=None if name is None else f"{name}_reduce_sum")
    return loss


def MSELoss(input: LazyBlob, target: LazyBlob, reduction: str = "mean", name: str | None = None) -> LazyBlob:
    """(target - input)^2 (OneFlow's squared_difference), reduced."""
    _check("MSELoss", reduction, ("input", input), ("target", target))
    _same_shape("MSELoss", ("input", input), ("target", target))
    return _reduce(square(subtract(target, input)), reduction, name)


def L1Loss(input: LazyBlob, target: LazyBlob, reduction: str = "mean", name: str | None = None) -> LazyBlob:
    """|target - input|, reduced."""
    _check("L1Loss", reduction, ("input", input), ("target", target))
    _same_shape("L1Loss", ("input", input), ("target", target))
    return _reduce(abs_(subtract(target, input)), reduction, name)


def BCELoss(input: LazyBlob, target: LazyBlob, weight: LazyBlob | None = None, reduction: str = "mean",
            name: str | None = None) -> LazyBlob:
    """-(target log(input) + (1 - target) log(1 - input)), times ``weight`` (of the input's shape), reduced."""
    _check("BCELoss", reduction, ("input", input), ("target", target))
    _same_shape("BCELoss", ("input", input), ("target", target))
    loss = negative(add(multiply(target, log(input)), multiply(subtract(1, target), log(subtract(1, input)))))
    if weight is not None:
        _same_shape("BCELoss", ("weight", require_blob(weight, "BCELoss's weight")), ("input", input))
        loss = multiply(weight, loss)
    return _reduce(loss, reduction, name)


def BCEWithLogitsLoss(input: LazyBlob, target: LazyBlob, weight: LazyBlob | None = None,
                      pos_weight: LazyBlob | None = None, reduction: str = "mean",
                      name: str | None = None) -> LazyBlob:
    """BCE of sigmoid(input) in OneFlow's stable form: (1 - t) x + lw (log(exp(-m) + exp(-x - m)) + m) with
    m = max(-x, 0) and lw = (pos_weight - 1) t + 1 (1 without ``pos_weight``; OneFlow's function asserts on
    ``pos_weight.shape`` and so needs one, its code path without it is taken here)."""
    _check("BCEWithLogitsLoss", reduction, ("input", input), ("target", target))
    _same_shape("BCEWithLogitsLoss", ("input", input), ("target", target))
    if pos_weight is not None:
        require_blob(pos_weight, "BCEWithLogitsLoss's pos_weight")
        if pos_weight.shape[0] != input.shape[-1]:
            raise ValueError(f"BCEWithLogitsLoss: the length of pos_weight {pos_weight.blob_desc} must equal the "
                             f"number of classes {input.shape[-1]} (the input {input.blob_desc}'s last axis)")
    neg_input = negative(input)
    max_val = relu(neg_input)  # OneFlow: flow.clip(neg_input, min_value=0)
    log_term = add(log(add(exp(negative(max_val)), exp(subtract(neg_input, max_val)))), max_val)
    linear = multiply(subtract(1, target), input)
    if pos_weight is not None:
        log_weight = add(multiply(subtract(pos_weight, 1), target), 1)
        loss = add(linear, multiply(log_weight, log_term))
    else:
        loss = add(linear, log_term)
    if weight is not None:
        _same_shape("BCEWithLogitsLoss", ("weight", require_blob(weight, "BCEWithLogitsLoss's weight")),
                    ("input", input))
        loss = multiply(weight, loss)
    return _reduce(loss, reduction, name)


def MarginRankingLoss(input1: LazyBlob, input2: LazyBlob, target: LazyBlob, margin: float = 0.0,
                      reduction: str = "mean", name: str | None = None) -> LazyBlob:
    """max(0, margin - target (input1 - input2)), reduced."""
    _check("MarginRankingLoss", reduction, ("input1", input1), ("input2", input2), ("target", target))
    _same_shape("MarginRankingLoss", ("input1", input1), ("input2", input2))
    loss = add(multiply(target, negative(subtract(input1, input2))), float(margin))
    return _reduce(relu(loss), reduction, name)  # OneFlow: flow.clip(loss, min_value=0.0)


def _p_norm(x: LazyBlob, p: float) -> LazyBlob:
    # OneFlow: abs, then square/sum/sqrt for p = 2, else pow(|x|, p) summed and pow(., 1/p); pow of these
    # positive values is exp(p log .) here (flowlab has no pow op)
    a = abs_(x)
    if p == 2.0:
        return sqrt(reduce_sum(square(a), axis=1))
    total = reduce_sum(exp(multiply(log(a), float(p))), axis=1)
    return exp(multiply(log(total), 1.0 / p))


def TripletMarginLoss(anchor: LazyBlob, positive: LazyBlob, negative: LazyBlob, margin: float = 1.0,
                      p: float = 2.0, eps: float = 1e-6, swap: bool = False, reduction: str = "mean",
                      name: str | None = None) -> LazyBlob:
    """max(0, margin + ||a - p + eps||_p - ||a - n + eps||_p) per row (norms over axis 1), reduced. ``swap``
    is refused, as OneFlow v0.3.4 refuses it."""
    _check("TripletMarginLoss", reduction, ("anchor", anchor), ("positive", positive), ("negative", negative))
    if swap:
        raise ValueError("TripletMarginLoss: swap=True is not supported (OneFlow v0.3.4 asserts swap == False: "
                         "its minimum op had no backward)")
    d1 = _p_norm(add(subtract(anchor, positive), float(eps)), float(p))
    d2 = _p_norm(add(subtract(anchor, negative), float(eps)), float(p))
    loss = relu(subtract(add(d1, float(margin)), d2))  # OneFlow: flow.clip(..., min_value=0.0)
    return _reduce(loss, reduction, name)


def KLDivLoss(input: LazyBlob, target: LazyBlob, log_target: bool = False, reduction: str = "mean",
              name: str | None = None) -> LazyBlob:
    """exp(target) (target - input) for log-space targets; otherwise target (log(target) - input) where
    rint(target + 0.5) != 0, i.e. where target > 0 (OneFlow's where), 0 elsewhere. Written with flowlab's ops:
    mask = sign(relu(target)) (1 for target > 0, else 0) and log(target + 1 - mask), so a zero target gives
    0 (not 0 * log 0); a target < -1, which OneFlow's where keeps (log of a negative: NaN), gives 0 here
    (docs/deviations.md)."""
    _check("KLDivLoss", reduction, ("input", input), ("target", target))
    if log_target:
        loss = multiply(exp(target), subtract(target, input))
    else:
        mask = sign(relu(target))
        loss = multiply(multiply(target, subtract(log(add(subtract(target, mask), 1)), input)), mask)
    return _reduce(loss, reduction, name)


__all__ = ["BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
           "TripletMarginLoss"]
