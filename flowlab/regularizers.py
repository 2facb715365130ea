"""``flow.regularizers``: confs for ``get_variable(regularizer=...)`` and the layers; the optimizer pass adds
``l1 * sign(w) + l2 * w`` to the variable's gradient, as OneFlow's L1L2RegularizeGradient kernel does."""

from __future__ import annotations

from typing import Any


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> dict[str, Any]:
    return {"type": "l1_l2", "l1": float(l1), "l2": float(l2)}


def l1(l: float = 0.01) -> dict[str, Any]:  # noqa: E741 - OneFlow's parameter name
    return l1_l2(l1=l, l2=0.0)


def l2(l: float = 0.01) -> dict[str, Any]:  # noqa: E741
    return l1_l2(l1=0.0, l2=l)
