"""The actor runtime: registers, actors, the one-act scheduler, job instances and events."""

from .actor import Actor
from .events import ActEvent
from .job_instance import JobInstance
from .runtime import Runtime, RuntimeIdle

__all__ = ["ActEvent", "Actor", "JobInstance", "Runtime", "RuntimeIdle"]
