"""Running a Plan's machines on Ray (issue 14): machine 0 in the user's process, one Ray actor per other machine.

Imported only by the Session when ``flow.env.ray(...)`` named a cluster; nothing else in flowlab imports it.
"""

from .cluster import ClusterError, connect
from .errors import MachineError, MachineHangError
from .executor import RayExecutor, StoppedExecutor
from .runtime import RayRuntime
from .stepper import RayStepper

__all__ = ["ClusterError", "MachineError", "MachineHangError", "RayExecutor", "RayRuntime", "RayStepper",
           "StoppedExecutor", "connect"]
