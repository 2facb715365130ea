"""What ``%%flowjob`` shows: every stage of the cell's session, as text, SVG and tabbed HTML (no script).

The HTML is static (CSS radio tabs), so saved notebooks keep it on GitHub and in nbconvert; every name is
escaped, and the SVGs come from Graphviz, which escapes them too.
"""

from __future__ import annotations

import html
import itertools
from dataclasses import dataclass, field
from typing import Any

from ..ir import Job, JobSet

STAGES = ("user", "push", "pull", "model_io", "main", "plan")
_ids = itertools.count()


@dataclass
class FlowjobResult:
    session: Any
    show: tuple[str, ...] = STAGES
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)  # (job name, args) made by the cell
    error: BaseException | None = None
    debugger: Any = None
    interactive: bool = False  # in a live kernel: the output is the widget (static fallbacks stay)

    @property
    def compiled(self) -> bool:
        return self.session.compiled is not None

    @property
    def job_set(self) -> JobSet | None:
        return self.session.job_set if self.compiled else None

    @property
    def plan(self) -> Any:
        return self.session.plan if self.compiled else None

    def jobs(self, kind: str) -> list[Job]:
        if self.compiled:
            return list(self.session.job_set.of_kind(kind))
        return list(self.session.partial_jobs.values()) if kind == "user" else []

    # -- text --------------------------------------------------------------------------------------
    def stage_text(self, stage: str) -> str:
        if stage == "plan":
            return str(self.plan) if self.compiled else "(not compiled)"
        jobs = self.jobs(stage)
        return "\n\n".join(str(j) for j in jobs) if jobs else f"(no {stage} jobs)"

    def __str__(self) -> str:
        parts = [self.summary()]
        parts += [f"== {stage} ==\n{self.stage_text(stage)}" for stage in self.show]
        if self.compiled:
            parts.append("== passes ==\n" + "\n".join(str(r) for r in self.session.passes))
        return "\n\n".join(parts)

    def summary(self) -> str:
        if self.error is not None:
            return f"flowjob: error: {type(self.error).__name__}: {self.error}"
        if not self.compiled:
            return "flowjob: no job was compiled (define a @flow.global_function and call it, or use --no-run)"
        calls = ", ".join(name for name, _ in self.calls) or "none"
        return (f"flowjob: {len(self.session.job_set)} jobs, {len(self.plan.tasks)} tasks, "
                f"{len(self.plan.mem_blocks)} memory blocks; calls: {calls}")

    def __repr__(self) -> str:
        return f"<FlowjobResult {self.summary()}>"

    def browser(self, view: str = "plan") -> Any:
        """The interactive plan browser over this result's session (needs anywidget)."""
        from .widgets import PlanBrowser

        return PlanBrowser(self.session, view)

    def interactive_view(self) -> Any:
        """The plan browser above an output area; its debug button opens the debugger for the last job call."""
        import ipywidgets

        browser, out = self.browser(), ipywidgets.Output()
        if self.calls:
            name, call_args = self.calls[-1]
            desc = self.session.function_descs.get(name)

            def open_debugger() -> Any:
                from ..debug.debugger import Debugger
                from .widgets import DebuggerWidget

                widget = DebuggerWidget(Debugger(self.session, desc, call_args, {}))
                out.clear_output()
                out.append_display_data(widget)
                return widget

            browser.on_debug, browser.can_debug = open_debugger, desc is not None
        return ipywidgets.VBox([browser, out])

    def debugger_widget(self) -> Any:
        """The step debugger's widget for the debugger ``--debug`` prepared."""
        from .widgets import DebuggerWidget

        if self.debugger is None:
            raise ValueError("no debugger: run the cell with %%flowjob --debug (it debugs the cell's last job call)")
        return DebuggerWidget(self.debugger)

    # -- pictures ----------------------------------------------------------------------------------
    def stage_svg(self, stage: str) -> str | None:
        from ..viz import render_svg, to_dot

        if stage == "plan":
            return render_svg(to_dot(self.plan)) if self.compiled else None
        jobs = self.jobs(stage)
        if not jobs:
            return None
        target = JobSet(tuple(jobs)) if len(jobs) > 1 else jobs[0]
        return render_svg(to_dot(target))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        svgs = {stage: self.stage_svg(stage) for stage in self.show}
        bundle = {"text/plain": str(self), "text/html": self._html(svgs)}
        first = next((svg for svg in svgs.values() if svg), None)
        if first:
            bundle["image/svg+xml"] = first
        if self.interactive and self.compiled:
            widget = self.debugger_widget() if self.debugger is not None else self.interactive_view()
            view = widget._repr_mimebundle_()
            view = view[0] if isinstance(view, tuple) else view
            bundle["application/vnd.jupyter.widget-view+json"] = view["application/vnd.jupyter.widget-view+json"]
        return bundle

    def _html(self, svgs: dict[str, str | None]) -> str:
        group = f"flowjob{next(_ids)}"
        tabs, panes = [], []
        stages = [*self.show, "passes"] if self.compiled else list(self.show)
        for i, stage in enumerate(stages):
            tab_id = f"{group}-{stage}"
            checked = " checked" if i == 0 else ""
            tabs.append(f'<input type="radio" name="{group}" id="{tab_id}"{checked}>'
                        f'<label for="{tab_id}">{html.escape(stage)}</label>')
            if stage == "passes":
                body = "\n".join(str(r) for r in self.session.passes)
                panes.append(f'<div class="pane"><pre>{html.escape(body)}</pre></div>')
                continue
            svg = svgs.get(stage) or ""
            panes.append(f'<div class="pane">{svg}<details><summary>text</summary>'
                         f'<pre>{html.escape(self.stage_text(stage))}</pre></details></div>')
        style = (f"<style>.{group} > .pane{{display:none}} .{group} > input{{display:none}}"
                 f".{group} > label{{padding:2px 8px;border:1px solid #ccc;margin-right:2px;cursor:pointer}}"
                 + "".join(f".{group} > input:nth-of-type({i + 1}):checked ~ .pane:nth-of-type({i + 1})"
                           "{display:block}" for i in range(len(stages))) + "</style>")
        error = f'<pre style="color:#b00">{html.escape(self.summary())}</pre>' if self.error else ""
        return (f'{style}<div class="{group}"><p>{html.escape(self.summary())}</p>{error}'
                + "".join(tabs) + "".join(panes) + "</div>")
