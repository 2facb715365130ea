"""Moving a register's blobs from one machine to another: what a CopyCommNet task does when it acts.

OneFlow's CopyCommNetActor asks ``CommNet::Read`` for the producer's register on the other machine and acts
again when the read completes. flowlab runs every machine of a Plan in one process, so the only implementation
today copies memory (``InProcessTransport``); a cluster engine (Ray) will implement the same interface with its
object store. The Plan does not change: only the transport a Runtime is given.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class Transport(ABC):
    """Carries registers between machines. One per Runtime; counts what it moved."""

    def __init__(self) -> None:
        self.messages = 0
        self.bytes_moved = 0
        self._lock = threading.Lock()  # each machine's CommNet thread may send at once (parallel run mode)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.messages} registers, {self.bytes_moved} bytes moved>"

    @abstractmethod
    def send(self, blobs: Sequence[np.ndarray], from_machine: int, to_machine: int,
             into: Sequence[np.ndarray]) -> None:
        """Deliver one register's ``blobs`` produced on ``from_machine`` into the receiving register's arrays
        ``into`` on ``to_machine`` (same shapes and dtypes, in order); returns once they are there."""

    def _count(self, blobs: Sequence[np.ndarray]) -> None:
        nbytes = sum(b.nbytes for b in blobs)
        with self._lock:
            self.messages += 1
            self.bytes_moved += nbytes


class InProcessTransport(Transport):
    """All machines live in this process: a send is a copy between their memory blocks."""

    def send(self, blobs: Sequence[np.ndarray], from_machine: int, to_machine: int,
             into: Sequence[np.ndarray]) -> None:
        if from_machine == to_machine:
            raise ValueError(f"a CopyCommNet send goes between two machines; both are machine {from_machine}")
        for src, dst in zip(blobs, into, strict=True):
            np.copyto(dst, src, casting="no")
        self._count(blobs)
