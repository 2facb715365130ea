"""What a run on Ray machines raises (re-exported by flowlab.distributed)."""

from __future__ import annotations

from ..errors import FlowlabError
from ..runtime.hang import HangError


class MachineError(FlowlabError, RuntimeError):
    """A machine of a multi-machine run failed or died; the call is cancelled and the other machines stopped."""


class MachineHangError(MachineError, HangError):
    """No machine made progress for FLOWLAB_MACHINE_TIMEOUT seconds: ``graph`` has every machine's blocked actors
    (a machine that did not answer is listed in ``graph.silent``) and each machine's last acts."""
