"""Compile time of the two-job seed program: trace + passes + system jobs + Plan (+ verifier)."""

from __future__ import annotations

import numpy as np
from _util import QUICK, median_time, table

import flowlab as flow
from flowlab.compiler import check_plan, compile_jobs
from flowlab.demo import define_two_jobs


def main() -> None:
    flow.clear_default_session()

    zero_pad_Job, _ = define_two_jobs()
    zero_pad_Job(np.zeros((2, 1, 3, 3), np.float32))
    session = flow.default_session()
    jobs = list(session.traced_jobs.values())
    repeat = 5 if QUICK else 21
    compile_only = median_time(lambda: compile_jobs(jobs), repeat)
    verify = median_time(lambda: check_plan(session.plan), repeat)
    plan = session.plan
    table("compile time, two-job seed program", [
        ("first call: trace, compile, verify, build runtime+kernels", f"{session.compile_seconds * 1e3:.1f} ms"),
        ("compile_jobs (passes, system jobs, Plan), median", f"{compile_only * 1e3:.2f} ms"),
        ("check_plan (verifier), median", f"{verify * 1e3:.2f} ms"),
        ("jobs / tasks / regsts / mem blocks",
         f"{len(session.job_set)} / {len(plan.tasks)} / {len(plan.regst_descs)} / {len(plan.mem_blocks)}"),
    ])
    flow.clear_default_session()


if __name__ == "__main__":
    main()
