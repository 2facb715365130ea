"""Running a Plan's machines on Ray (issue 14): machine 0 in the user's process, one Ray actor per other machine.

Imported only by the Session when ``flow.env.ray(...)`` named a cluster; nothing else in flowlab imports it.
"""

from .cluster import ClusterError, connect
from .runtime import MachineError, MachineHangError, RayRuntime, StoppedRuntime

__all__ = ["ClusterError", "MachineError", "MachineHangError", "RayRuntime", "StoppedRuntime", "connect"]
