"""The compiler: recorded passes, system jobs, interface memory sharing, and one Plan for all jobs."""

from .compile import (
    CompileResult,
    compile_job_set,
    compile_jobs,
)
from .passes import PassRecord
from .verify import check_plan
from .verify_job import JobVerifyError, check_job

__all__ = [
    "CompileResult", "JobVerifyError", "PassRecord", "check_job", "check_plan",
    "compile_job_set", "compile_jobs",
]
