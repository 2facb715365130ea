"""``flow.losses``: OneFlow v0.3.4's ``losses.add_loss`` (``oneflow/python/ops/losses/add_loss.py``).

OneFlow marks a blob as the loss of a train job configured the legacy way (``FunctionConfig.train.primary_lr`` and
``model_update_conf``); outside a train job being traced no branch of it applies and it raises
NotImplementedError. flowlab trains through ``flow.optimizer.<Name>(scheduler).minimize(loss)`` only (the legacy
train config is accepted but not acted on, docs/oneflow-api.md), so it refuses add_loss in a job too, saying so.
"""

from __future__ import annotations

from typing import Any


def add_loss(loss: Any) -> None:
    from .frontend import builder

    if not builder._builders:
        raise NotImplementedError("flow.losses.add_loss marks the loss of a train job while it is traced; it was "
                                  "called outside a @flow.global_function (OneFlow raises NotImplementedError too)")
    raise NotImplementedError("flow.losses.add_loss (OneFlow's legacy FunctionConfig.train path) is not supported: "
                              "flowlab trains with flow.optimizer.<Name>(lr_scheduler).minimize(loss)")


__all__ = ["add_loss"]
