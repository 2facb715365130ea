"""The compare view, as the notebook names it: ``show_diff(a, b)``, ``show_pass(session, "autograd")``. The diff
and its payload are the debugger's (debug/comparison.py, ``flow.debug.compare``); its value is the output."""

from ..debug.comparison import COMPARE_MIME, Comparison, compare_payload
from ..debug.comparison import compare as show_diff
from ..debug.comparison import compare_pass as show_pass

CompareView = Comparison

__all__ = ["COMPARE_MIME", "CompareView", "compare_payload", "show_diff", "show_pass"]
