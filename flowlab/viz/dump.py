"""Debug mode's files (OneFlow's ``ONEFLOW_DEBUG_MODE`` dump), written when a session starts.

Under ``<log_dir>/<hostname>/`` (``flow.env.log_dir``, ./log by default, as OneFlow's LogDir()), or ``root``
when given:

====================================  ==================================================
``job_set.txt`` / ``job_set.json``    the compiled JobSet (text printer / ``flowlab.ir.to_json``)
``optimized_job<job_id>.txt``         each job after all passes
``merged_plan.txt`` / ``.json``       the Plan
``critical_section_desc.txt``         the critical sections and the main job's id lists
``dot/merged_plan.dot``               the Plan as DOT (``PlanUtil::ToDotFile``)
``dot/optimized_job<job_id>.dot``     each job as DOT
``passes.txt``                        the recorded passes (when the session has them)
``boxing/log/<job_id>.csv``           each job's boxing decisions (OneFlow's BoxingLogger), jobs with any
====================================  ==================================================
"""

from __future__ import annotations

import socket
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flowlab.ir import JobSet, Plan, to_json

from .dot import job_to_dot
from .plan_dot import plan_to_dot


def default_log_dir(base: str | Path = "log") -> Path:
    """``<base>/<hostname>``: OneFlow's LogDir(), ``base`` being ``flow.env.log_dir`` (./log by default)."""
    return Path(base) / (socket.gethostname() or "localhost")


def critical_section_text(plan: Plan) -> str:
    lines = [f"critical sections: {len(plan.critical_sections)}"]
    for cs in plan.critical_sections:
        job = plan.job_names[cs.job_id] if 0 <= cs.job_id < len(plan.job_names) else "?"
        blocks = ",".join(map(str, cs.mem_block_ids))
        lines.append(f"  cs {cs.critical_section_id}: job {cs.job_id} {job} {cs.kind} mem_blocks=[{blocks}]")
    intersect = [
        f"  cs {a.critical_section_id} ~ cs {b.critical_section_id}"
        for i, a in enumerate(plan.critical_sections)
        for b in plan.critical_sections[i + 1 :]
        if a.intersects(b)
    ]
    lines.append("intersecting (share a mem block):")
    lines.extend(intersect or ["  none"])
    lines.append("job_id2critical_section_ids:")
    for job_id, ids in sorted(plan.job_id2critical_section_ids.items()):
        lines.append(f"  job {job_id}: [{','.join(map(str, ids))}]")
    return "\n".join(lines) + "\n"


BOXING_LOG_HEADER = ("src_op_name,dst_op_name,src_parallel_conf,dst_parallel_conf,src_sbp_conf,dst_sbp_conf,lbi,"
                     "dtype,shape,builder,comment")


def debug_files(job_set: JobSet, plan: Plan, passes: Any = (),
                boxing_log: Mapping[int, Sequence[str]] | None = None) -> dict[str, str]:
    """Relative path -> text of every debug file (pure; :func:`dump_debug_files` writes them)."""
    files = {
        "job_set.txt": str(job_set) + "\n",
        "job_set.json": to_json(job_set, indent=1) + "\n",
        "merged_plan.txt": str(plan) + "\n",
        "merged_plan.json": to_json(plan, indent=1) + "\n",
        "critical_section_desc.txt": critical_section_text(plan),
        "dot/merged_plan.dot": plan_to_dot(plan),
    }
    for job_id, job in enumerate(job_set.jobs):
        files[f"optimized_job{job_id}.txt"] = str(job) + "\n"
        files[f"dot/optimized_job{job_id}.dot"] = job_to_dot(job)
    if passes:
        files["passes.txt"] = "\n".join(str(p) for p in passes) + "\n"
    for job_id, rows in (boxing_log or {}).items():
        files[f"boxing/log/{job_id}.csv"] = "\n".join([BOXING_LOG_HEADER, *rows]) + "\n"
    return files


def dump_debug_files(session: Any, root: str | Path | None = None) -> Path:
    """Write the debug files of a started session (one with ``job_set`` and ``plan``); returns the directory.

    A file that cannot be written gives a warning, not an error: debug output must not stop a session.
    """
    directory = Path(root) if root is not None else default_log_dir()
    compiled = getattr(session, "compiled", None)
    files = debug_files(session.job_set, session.plan, getattr(session, "passes", ()),
                        getattr(compiled, "boxing_log", None))
    failed = []
    for rel, text in files.items():
        path = directory / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            failed.append(f"{path}: {exc}")
    if failed:
        warnings.warn(
            f"flowlab debug mode could not write {len(failed)} of {len(files)} files: " + "; ".join(failed[:3]),
            stacklevel=2,
        )
    return directory.resolve()
