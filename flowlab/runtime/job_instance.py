"""Job instances: one launch of one job, with what it pushes, what it pulls and who waits for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(slots=True)
class JobInstance:
    """OneFlow's JobInstance: ``push_array`` feeds a ForeignInput, ``on_pull`` takes a ForeignOutput's copy."""

    job_name: str
    push_array: np.ndarray | None = None
    on_pull: Callable[[np.ndarray], None] | None = None
    seq: int = -1  # launch order, set by the runtime
    finished: bool = False
    pulled: Any = None

    def pull(self, array: np.ndarray) -> None:
        self.pulled = array
        if self.on_pull is not None:
            self.on_pull(array)

    def finish(self) -> None:
        self.finished = True
