"""Notebook outputs for one view payload, with no widget: what a saved notebook keeps and flowlab's JupyterLab
renderer draws with or without a kernel (``application/vnd.flowlab.{jobset,plan,run}+json``), plus a bounded
SVG and text for other front ends.

- ``show_plan(plan, job_set, marks=diff.marks_b)``: a Plan, e.g. one side of ``flow.debug.diff``;
- ``show_run(dbg)``: a debugger's recorded run (the acts so far and the memory record), drawn with a slider.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..viz.payload import MIME, jobset_payload, plan_payload, run_payload
from ..viz.payload_overlay import overlay_section
from ..viz.payload_svg import new_id_prefix


@dataclass
class PayloadView:
    """One payload as an output: its mime type, a bounded SVG overview (ids unique to the output) and text."""

    payload: dict[str, Any]
    text: str = ""
    id_prefix: str = field(default_factory=new_id_prefix)

    def __repr__(self) -> str:
        return f"<{self.payload['kind']} view: {self.payload['title']}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..viz import RenderError
        from ..viz.payload_pack import stored
        from ..viz.payload_svg import payload_svg

        bundle: dict[str, Any] = {MIME[self.payload["kind"]]: stored(self.payload),  # a notebook keeps version 2
                                  "text/plain": self.text or repr(self)}
        try:
            bundle["image/svg+xml"] = payload_svg(self.payload, id_prefix=self.id_prefix)
        except RenderError as err:  # the payload still draws in JupyterLab; say why there is no picture
            bundle["text/plain"] += f"\n(no picture: {err})"
        return bundle


def show_plan(plan: Any, job_set: Any = None, *, marks: Mapping[str, str] | None = None, title: str | None = None,
              passes: Any = None, overlay: Any = None, stuck: Any = None) -> PayloadView:
    """A Plan as an output; ``marks`` (payload id -> added/removed/changed, e.g. ``flow.debug.diff(a, b).marks_b``)
    become node classes the front end colours; ``overlay`` (``flow.debug.overlay(...)``, view ``plan``) colours the
    boxes by its numbers (docs/overlays.md); ``stuck`` (a ``WaitGraph``: ``HangError.graph``,
    ``flow.debug.why_stuck()``) marks the blocked actors and draws who waits for whom (docs/hangs.md)."""
    from ..viz.payload_sections import stuck_section

    payload = _with_overlay(plan_payload(plan, job_set, passes=passes, marks=marks, title=title), overlay, "plan")
    text = f"{payload['title']}\n{plan}"
    if stuck is not None:
        payload["stuck"] = stuck_section(stuck, plan, payload["graph"])
        payload["title"] += " · stuck: " + (" -> ".join(stuck.cycle) if stuck.cycle else
                                            f"{len(stuck.blocked)} blocked actors")
        text = f"{payload['title']}\n{stuck}"
    return PayloadView(payload, text=text)


def show_jobset(job_set: Any, *, passes: Any = None, title: str | None = None, overlay: Any = None) -> PayloadView:
    """The jobs of a session as an output; ``overlay`` (view ``jobset``) colours the ops by its numbers."""
    payload = jobset_payload(job_set, passes, title=title)
    return PayloadView(_with_overlay(payload, overlay, "jobset"), text=payload["title"])


def _with_overlay(payload: dict[str, Any], overlay: Any, view: str) -> dict[str, Any]:
    if overlay is None:
        return payload
    if overlay.view != view:
        other = "show_plan(plan, job_set, overlay=...)" if overlay.view == "plan" else \
            "show_jobset(job_set, overlay=...)"
        raise ValueError(f"this overlay ({overlay.metric}) was built for the {overlay.view} view: draw it with "
                         f"{other}, or build it with view={view!r}")
    payload["overlay"] = overlay_section(overlay.to_dict(), payload["graph"])
    payload["title"] += f" · {overlay.metric}"
    return payload


def show_run(dbg: Any = None, *, plan: Any = None, job_set: Any = None, recording: Any = None,
             title: str | None = None, overlay: Any = None) -> PayloadView:
    """A recorded run as an output: ``show_run(dbg)`` takes the debugger's plan and ``dbg.recording()`` (the acts
    so far, with statistics of what each wrote, and the memory record); or pass ``plan``, ``job_set`` and
    ``recording`` (``{"acts": [...], "memory": {...}}``) yourself. ``overlay`` (a Plan overlay, e.g.
    ``flow.debug.overlay(dbg, metric="time")``) colours its boxes as on the Plan view (docs/overlays.md)."""
    if dbg is not None:
        plan, job_set, recording = dbg.plan, dbg.session.job_set, dbg.recording()
        title = title or f"run of {dbg.desc.job_name}: {len(recording['acts'])} acts"
    if plan is None or recording is None:
        raise TypeError("show_run needs a debugger (show_run(dbg)) or plan= and recording=")
    payload = _with_overlay(run_payload(plan, job_set, recording, title=title), overlay, "plan")
    lines = [payload["title"], *(f"#{a['index']} {a['job']}/{a['actor']} read {a['reads']} wrote {a['writes']}"
                                 for a in payload["acts"][:200])]
    return PayloadView(payload, text="\n".join(lines))
