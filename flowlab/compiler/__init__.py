"""The compiler: recorded passes, system jobs, interface memory sharing, and one Plan for all jobs."""

from .compile import CompileResult, compile_jobs
from .passes import PassRecord
from .verify import check_plan

__all__ = ["CompileResult", "PassRecord", "check_plan", "compile_jobs"]
