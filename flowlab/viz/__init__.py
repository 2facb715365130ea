"""Pictures of the IR: ``to_dot`` (Job, JobSet, Plan -> DOT), ``render_svg`` (DOT -> SVG), debug-mode files, and the
view payloads the front end draws (``jobset_payload``, ``plan_payload``, ``run_payload``; ``payload_svg``)."""

from .dot import job_set_to_dot, job_to_dot, to_dot
from .dump import debug_files, dump_debug_files
from .payload import jobset_payload, plan_payload, run_payload
from .payload_svg import payload_svg
from .plan_dot import plan_to_dot
from .render import RenderError, render_svg, renderers

__all__ = [
    "RenderError", "debug_files", "dump_debug_files", "job_set_to_dot", "job_to_dot", "jobset_payload",
    "payload_svg", "plan_payload", "plan_to_dot", "render_svg", "renderers", "run_payload", "to_dot",
]
