"""``flow.debug.explain_sbp(job, op_name)``: SBP inference's own explanation (compiler/sbp_explain.py), here for
``flow.debug`` users."""

from ..compiler.sbp_explain import SbpExplanation, explain_job_sbp, explain_sbp, format_cost

__all__ = ["SbpExplanation", "explain_job_sbp", "explain_sbp", "format_cost"]
