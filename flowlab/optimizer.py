"""``flow.optimizer``: learning-rate schedulers and optimizers; ``minimize(loss)`` marks the job's loss.

As in OneFlow, building the optimizer only records a train conf on the job being traced; the
GenerateBackwardAndOptimizerOpConfs pass adds the gradient and update ops when the job is compiled.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from .errors import OpInferError
from .frontend.blob import LazyBlob
from .frontend.builder import current_builder


class LrScheduler:
    def __init__(self, base_lr: float, decay: dict[str, Any] | None, warmup: dict[str, Any] | None) -> None:
        if not isinstance(base_lr, (int, float)) or isinstance(base_lr, bool):
            raise TypeError(f"the learning rate must be a number; got {base_lr!r}")
        self.conf = {"base_lr": float(base_lr), "decay": decay, "warmup": _warmup_conf(warmup)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.conf})"


def _warmup_conf(warmup: Any) -> dict[str, Any] | None:
    if warmup is None or isinstance(warmup, dict):
        return warmup
    if isinstance(warmup, _Warmup):
        return warmup.conf
    raise TypeError(f"warmup must be flow.optimizer.warmup.linear(...) or .constant(...); got {warmup!r}")


class PiecewiseConstantScheduler(LrScheduler):
    def __init__(self, boundaries: Sequence[int], values: Sequence[float], warmup: Any = None) -> None:
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantScheduler needs len(values) == len(boundaries) + 1; got "
                             f"{len(values)} values for {len(boundaries)} boundaries")
        decay = {"type": "piecewise_constant", "boundaries": [int(b) for b in boundaries],
                 "values": [float(v) for v in values]}
        super().__init__(values[0], decay, warmup)


class PolynomialScheduler(LrScheduler):
    def __init__(self, base_lr: float, steps: int, end_learning_rate: float = 0.0001, power: float = 1.0,
                 cycle: bool = False, warmup: Any = None) -> None:
        decay = {"type": "polynomial", "decay_batches": int(steps), "end_learning_rate": float(end_learning_rate),
                 "power": float(power), "cycle": bool(cycle)}
        super().__init__(base_lr, decay, warmup)


class CosineScheduler(LrScheduler):
    def __init__(self, base_lr: float, steps: int, alpha: float = 0.0, warmup: Any = None) -> None:
        super().__init__(base_lr, {"type": "cosine", "decay_batches": int(steps), "alpha": float(alpha)}, warmup)


class LinearCosineScheduler(LrScheduler):
    def __init__(self, base_lr: float, steps: int, num_periods: float = 0.5, alpha: float = 0.0,
                 beta: float = 0.001, warmup: Any = None) -> None:
        decay = {"type": "linear_cosine", "decay_batches": int(steps), "num_periods": float(num_periods),
                 "alpha": float(alpha), "beta": float(beta)}
        super().__init__(base_lr, decay, warmup)


class PiecewiseScalingScheduler(LrScheduler):
    """``base_lr * scale[i]`` after ``boundaries[i - 1]`` (OneFlow's piecewise_scaling_conf; the first segment keeps
    ``base_lr``). A single ``scale`` applies at every boundary."""

    def __init__(self, base_lr: float, boundaries: Sequence[int], scale: float | Sequence[float],
                 warmup: Any = None) -> None:
        scales = [scale] * len(boundaries) if isinstance(scale, numbers.Real) else list(scale)
        if len(scales) != len(boundaries):
            raise ValueError(f"PiecewiseScalingScheduler needs one scale per boundary; got {len(boundaries)} "
                             f"boundaries and {len(scales)} scale(s)")
        decay = {"type": "piecewise_scaling", "boundaries": [int(b) for b in boundaries],
                 "scales": [1.0] + [float(v) for v in scales]}
        super().__init__(base_lr, decay, warmup)


def _rate_decay(kind: str, cls: str, steps: int, decay_rate: float, staircase: bool) -> dict[str, Any]:
    if not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0:
        raise ValueError(f"{cls} needs steps (the decay_batches) > 0, as OneFlow's kernel checks; got {steps!r}")
    return {"type": kind, "decay_batches": steps, "decay_rate": float(decay_rate), "staircase": bool(staircase)}


class ExponentialScheduler(LrScheduler):
    """``base_lr * decay_rate ** (step / steps)`` (floored when ``staircase``)."""

    def __init__(self, base_lr: float, steps: int, decay_rate: float, staircase: bool = False,
                 warmup: Any = None) -> None:
        super().__init__(base_lr, _rate_decay("exponential", type(self).__name__, steps, decay_rate, staircase),
                         warmup)


class InverseTimeScheduler(LrScheduler):
    """``base_lr / (1 + decay_rate * (step / steps))`` (the ratio floored when ``staircase``)."""

    def __init__(self, base_lr: float, steps: int, decay_rate: float, staircase: bool = False,
                 warmup: Any = None) -> None:
        super().__init__(base_lr, _rate_decay("inverse_time", type(self).__name__, steps, decay_rate, staircase),
                         warmup)


class NaturalExpScheduler(LrScheduler):
    """``base_lr * exp(-decay_rate * (step / steps))`` (the ratio floored when ``staircase``)."""

    def __init__(self, base_lr: float, steps: int, decay_rate: float, staircase: bool = False,
                 warmup: Any = None) -> None:
        super().__init__(base_lr, _rate_decay("natural_exp", type(self).__name__, steps, decay_rate, staircase),
                         warmup)


class PolynomialSchduler(PolynomialScheduler):
    """OneFlow's misspelt, deprecated alias of PolynomialScheduler (OneFlow-Benchmark's BERT uses it)."""

    def __init__(self, base_lr: float, steps: int, end_learning_rate: float = 0.0001, power: float = 1.0,
                 cycle: bool = False, warmup: Any = None) -> None:
        warnings.warn("flow.optimizer.PolynomialSchduler will be removed in the future, use "
                      "flow.optimizer.PolynomialScheduler instead", FutureWarning, stacklevel=2)
        super().__init__(base_lr, steps, end_learning_rate, power, cycle, warmup)


class CustomScheduler(LrScheduler):
    """A constant learning rate (OneFlow's CustomScheduler with no decay)."""

    def __init__(self, base_lr: float, warmup: Any = None) -> None:
        super().__init__(base_lr, None, warmup)


class _Warmup:
    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf


warmup = SimpleNamespace(
    linear=lambda steps, start_multiplier: _Warmup(
        {"type": "linear", "warmup_batches": int(steps), "start_multiplier": float(start_multiplier)}),
    constant=lambda steps, multiplier: _Warmup(
        {"type": "constant", "warmup_batches": int(steps), "multiplier": float(multiplier)}),
)
grad_clipping = SimpleNamespace(by_global_norm=lambda clip_norm: {"type": "global_norm", "clip_norm": float(clip_norm)})


class Optimizer:
    def __init__(self, lr_scheduler: LrScheduler, grad_clipping: dict[str, Any] | None,
                 conf: dict[str, Any]) -> None:
        if not isinstance(lr_scheduler, LrScheduler):
            raise TypeError(f"{type(self).__name__} needs an lr scheduler such as "
                            f"flow.optimizer.PiecewiseConstantScheduler([], [0.1]); got {lr_scheduler!r}")
        self.lr_scheduler, self.grad_clipping, self.conf = lr_scheduler, grad_clipping, conf

    def minimize(self, loss: LazyBlob | Sequence[LazyBlob]) -> None:
        """Mark the job's loss(es). As OneFlow's, an integer loss is accepted: backpropagation starts from ones of
        its dtype (autograd.cpp's constant_like), runs in integers down to the casts that lead to the float
        variables, and their gradients update them (test_tril's integer legs)."""
        builder = current_builder()
        losses = list(loss) if isinstance(loss, (list, tuple)) else [loss]
        for blob in losses:
            if not isinstance(blob, LazyBlob):
                raise OpInferError(f"minimize() takes the loss blob of this job; got {type(blob).__name__}")
        if builder.job_conf.get("job_type") != "train":
            raise OpInferError(f"minimize() is for train jobs; {builder.job_name!r} is a predict job "
                               "(use @flow.global_function(type=\"train\"))")
        if builder.train_conf is not None:
            raise OpInferError(f"job {builder.job_name!r} already called minimize(); call it once per job")
        builder.train_conf = {"loss_lbns": [b.lbn for b in losses], "optimizer": self.conf,
                              "lr_scheduler": self.lr_scheduler.conf, "grad_clipping": self.grad_clipping}


class SGD(Optimizer):
    def __init__(self, lr_scheduler: LrScheduler, loss_scale_factor: float | None = None, momentum: float = 0.9,
                 grad_clipping: dict[str, Any] | None = None, train_step_lbn: str | None = None,
                 loss_scale_policy: Any = None) -> None:
        conf = {"type": "sgd"} if not momentum else {"type": "momentum", "beta": float(momentum)}
        super().__init__(lr_scheduler, grad_clipping, conf)


class SGDW(Optimizer):
    """SGD with decoupled weight decay (OneFlow's SGDW): with momentum 0, sgd_update's w -= lr (g + wd w); else
    momentum_update's v = beta v - lr g, w = w + v - lr wd w (the decay stays out of the momentum).
    ``weight_decay_includes`` / ``weight_decay_excludes`` pick the decayed variables as AdamW's do."""

    def __init__(self, lr_scheduler: LrScheduler, loss_scale_factor: float | None = None, momentum: float = 0.9,
                 weight_decay: float | None = None, weight_decay_includes: str | Sequence[str] | None = None,
                 weight_decay_excludes: str | Sequence[str] | None = None,
                 grad_clipping: dict[str, Any] | None = None, train_step_lbn: str | None = None,
                 loss_scale_policy: Any = None) -> None:
        conf = {"type": "sgd"} if not momentum else {"type": "momentum", "beta": float(momentum)}
        conf.update(weight_decay=float(weight_decay or 0.0),
                    **_weight_decay_filter(weight_decay_includes, weight_decay_excludes))
        super().__init__(lr_scheduler, grad_clipping, conf)


class Adam(Optimizer):
    def __init__(self, lr_scheduler: LrScheduler, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                 do_bias_correction: bool = False, loss_scale_factor: float | None = None,
                 grad_clipping: dict[str, Any] | None = None, train_step_lbn: str | None = None,
                 loss_scale_policy: Any = None) -> None:
        conf = {"type": "adam", "beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon),
                "do_bias_correction": bool(do_bias_correction)}
        super().__init__(lr_scheduler, grad_clipping, conf)


class AdamW(Optimizer):
    """Adam with decoupled weight decay. ``weight_decay_includes`` / ``weight_decay_excludes`` (a pattern or a
    list, at most one of them): the variables whose op name a pattern matches anywhere (``re.search``, as
    OneFlow's RE2::PartialMatch) are the only ones decayed / the ones not decayed (optimizer.cpp's
    GetOptimizerWeightDecayRate)."""

    def __init__(self, lr_scheduler: LrScheduler, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                 do_bias_correction: bool = False, loss_scale_factor: float | None = None,
                 weight_decay: float | None = None, weight_decay_includes: str | Sequence[str] | None = None,
                 weight_decay_excludes: str | Sequence[str] | None = None,
                 grad_clipping: dict[str, Any] | None = None, train_step_lbn: str | None = None,
                 loss_scale_policy: Any = None) -> None:
        conf = {"type": "adamw", "beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon),
                "do_bias_correction": bool(do_bias_correction), "weight_decay": float(weight_decay or 0.0),
                **_weight_decay_filter(weight_decay_includes, weight_decay_excludes)}
        super().__init__(lr_scheduler, grad_clipping, conf)


def _weight_decay_filter(includes: str | Sequence[str] | None, excludes: str | Sequence[str] | None
                         ) -> dict[str, list[str]]:
    """The conf's ``weight_decay_includes`` or ``weight_decay_excludes`` pattern list (checked to compile)."""
    import re

    if includes is not None and excludes is not None:
        raise ValueError("set at most one of weight_decay_includes and weight_decay_excludes (as OneFlow asserts)")
    out = {}
    for key, value in (("weight_decay_includes", includes), ("weight_decay_excludes", excludes)):
        if value is None:
            continue
        patterns = [value] if isinstance(value, str) else list(value)
        for p in patterns:
            if not isinstance(p, str):
                raise TypeError(f"{key} takes a pattern string or a list of them; got {p!r} in {value!r}")
            try:
                re.compile(p)
            except re.error as err:
                raise ValueError(f"{key}: {p!r} is not a valid regular expression: {err}") from None
        out[key] = patterns
    return out


class LazyAdam(Optimizer):
    """OneFlow's LazyAdam: Adam with bias correction (adam_optm.cpp sets it). With the job's
    ``indexed_slices_optimizer_conf(dict(include_op_names=dict(op_name=[...])))`` the variables named there that
    are read through one gather are updated on the gathered rows only: the other rows, and their m and v, stay."""

    def __init__(self, lr_scheduler: LrScheduler, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
                 loss_scale_factor: float | None = None, grad_clipping: dict[str, Any] | None = None,
                 train_step_lbn: str | None = None, loss_scale_policy: Any = None) -> None:
        conf = {"type": "lazy_adam", "beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon),
                "do_bias_correction": True}
        super().__init__(lr_scheduler, grad_clipping, conf)


class LAMB(Optimizer):
    """OneFlow v0.3.4's LAMB (lamb_optm.cpp, LambUpdateKernelUtil): Adam moments with the bias corrections of
    slots beta1_t / beta2_t, and the rate scaled by the trust ratio ||w|| / ||adam step||."""

    def __init__(self, lr_scheduler: LrScheduler, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-6,
                 loss_scale_factor: float | None = None, grad_clipping: dict[str, Any] | None = None,
                 train_step_lbn: str | None = None, loss_scale_policy: Any = None) -> None:
        conf = {"type": "lamb", "beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon)}
        super().__init__(lr_scheduler, grad_clipping, conf)


class LARS(Optimizer):
    """OneFlow v0.3.4's LARS (lars_optm.cpp, LarsUpdateKernelUtil): a ``<var>-momentum`` slot and
    ``local_lr = lr * lars_coefficient * ||w|| / (epsilon + ||g|| [+ weight_decay * ||w||, after step 0])`` with
    root-mean-square norms, ``momentum = momentum_beta * momentum - local_lr * (g + weight_decay * w)``,
    ``w += momentum``."""

    def __init__(self, lr_scheduler: LrScheduler, momentum_beta: float = 0.9, epsilon: float = 1e-9,
                 lars_coefficient: float = 0.0001, loss_scale_factor: float | None = None,
                 grad_clipping: dict[str, Any] | None = None, train_step_lbn: str | None = None,
                 loss_scale_policy: Any = None) -> None:
        conf = {"type": "lars", "momentum_beta": float(momentum_beta), "epsilon": float(epsilon),
                "lars_coefficient": float(lars_coefficient)}
        super().__init__(lr_scheduler, grad_clipping, conf)


class RMSProp(Optimizer):
    def __init__(self, lr_scheduler: LrScheduler, decay_rate: float = 0.99, epsilon: float = 1e-8,
                 centered: bool = False, loss_scale_factor: float | None = None,
                 grad_clipping: dict[str, Any] | None = None, train_step_lbn: str | None = None,
                 loss_scale_policy: Any = None) -> None:
        conf = {"type": "rmsprop", "decay_rate": float(decay_rate), "epsilon": float(epsilon),
                "centered": bool(centered)}  # centered: a mean_gradient slot (rmsprop_optm.cpp)
        super().__init__(lr_scheduler, grad_clipping, conf)
