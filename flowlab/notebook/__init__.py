"""Jupyter integration: the ``%%flowjob`` magic and its result view. Importing it needs IPython."""

from .magics import FlowMagics
from .result import FlowjobResult

__all__ = ["FlowMagics", "FlowjobResult"]
