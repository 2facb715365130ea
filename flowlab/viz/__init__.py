"""Pictures of the IR: ``to_dot`` (Job, JobSet, Plan -> DOT), ``render_svg`` (DOT -> SVG), debug-mode files."""

from .dot import job_set_to_dot, job_to_dot, to_dot
from .dump import debug_files, dump_debug_files
from .plan_dot import plan_to_dot
from .render import RenderError, render_svg, renderers

__all__ = [
    "RenderError", "debug_files", "dump_debug_files", "job_set_to_dot", "job_to_dot", "plan_to_dot",
    "render_svg", "renderers", "to_dot",
]
