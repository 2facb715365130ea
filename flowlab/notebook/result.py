"""What ``%%flowjob`` shows: every stage of the cell's session, as one mime bundle that never blocks on a big graph.

- ``application/vnd.flowlab.jobset+json`` and ``…plan+json``: the view payloads (``flowlab.viz.payload``) that
  flowlab's JupyterLab renderer draws from a saved notebook, with no kernel;
- the plan browser widget, when a kernel is live;
- ``image/svg+xml``: a bounded Graphviz overview (collapsed groups only, never more than a few dozen boxes), for
  nbconvert, GitHub and front ends without flowlab's renderer; ids carry a prefix unique to this output;
- ``text/plain``: a bounded summary (the jobs with their op counts, the Plan's size, the stages shown, how to print
  everything): a saved .ipynb keeps it beside the payloads, and the 30-layer MLP's stages as text were 250 KiB of
  it. ``print(res)`` prints every stage, ``res.stage_text(stage)`` one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import Job, JobSet
from ..viz.payload_svg import new_id_prefix

STAGES = ("user", "push", "pull", "model_io", "main", "plan")
MAX_JOB_LINES = 24  # jobs listed by name in text/plain; a model's jobs are a handful, a cell of many functions more


@dataclass
class FlowjobResult:
    session: Any
    show: tuple[str, ...] = STAGES
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)  # (job name, args) made by the cell
    error: BaseException | None = None
    debugger: Any = None
    interactive: bool = False  # in a live kernel: the output is the widget (static fallbacks stay)
    loc_names: dict[str, str] = field(default_factory=dict)  # IPython's cell file names -> "cell [3]"
    id_prefix: str = field(default_factory=lambda: new_id_prefix())
    render_note: str | None = None  # why there is no picture, when no Graphviz renderer worked
    name: str | None = None  # the variable ``-o NAME`` stored the result under (the text/plain names it)
    _payloads: dict[str, dict[str, Any]] | None = field(default=None, repr=False)
    _svg: str | None = field(default=None, repr=False)
    _stored: dict[str, dict[str, Any]] | None = field(default=None, repr=False)  # view -> its payload packed, once

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

    def text_summary(self) -> str:
        """The output's text/plain: the summary line, each job with its op count, the Plan's size, the stages shown
        and how to print them in full; bounded whatever the model's size (``str(self)`` has every stage)."""
        jobs = list(self.session.job_set) if self.compiled else list(self.session.partial_jobs.values())
        lines = [self.summary(), f"jobs ({len(jobs)}):"]
        lines += [f"  {job.kind:<9} {job.name}: {len(job.ops)} ops" for job in jobs[:MAX_JOB_LINES]]
        res = self.name or "res"
        if len(jobs) > MAX_JOB_LINES:
            lines.append(f"  … and {len(jobs) - MAX_JOB_LINES} more jobs (print({res}.session.job_set))")
        if self.compiled:
            plan = self.plan
            lines.append(f"plan: {len(plan.tasks)} tasks, {len(plan.regst_descs)} registers, "
                         f"{len(plan.mem_blocks)} memory blocks")
        lines.append(f"shown: {', '.join(self.show)}")
        if not self.name:
            lines.append(f"to keep this result, run the cell as %%flowjob -o {res}; then")
        lines.append(f'full text: print({res}) (every stage and the passes), print({res}.stage_text("plan")) (one '
                     f"stage); the objects: {res}.session, {res}.plan, {res}.session.passes")
        return "\n".join(lines)

    def browser(self, view: str | None = None) -> Any:
        """The interactive plan browser over this result's session (needs anywidget); it reuses this output's
        payloads, picture and id prefix."""
        from .widgets import PlanBrowser

        payloads = self.payloads()
        svgs = {next(iter(payloads)): self._svg} if self._svg and payloads else {}
        default = "plan" if "plan" in payloads else "jobs"
        return PlanBrowser(self.session, view or default, payloads=payloads, svgs=svgs, id_prefix=self.id_prefix,
                           stored=self.stored_payloads())

    def compare(self, other: Any = None, *, pass_name: str | None = None, **kwargs: Any) -> Any:
        """This cell's Plan beside another's (``res.compare(other_res)``: this one on the left), or one of its
        jobs before and after a pass (``res.compare(pass_name="GenerateBackwardAndOptimizerOpConfs")``)."""
        from .compare import show_diff, show_pass

        if pass_name is not None:
            return show_pass(self.session, pass_name, **kwargs)
        return show_diff(self, other, **kwargs)

    def interactive_view(self) -> Any:
        """The plan browser above an output area; its debug button opens the debugger for the last job call
        and, pressed again, closes it."""
        import ipywidgets

        browser, out = self.browser(), ipywidgets.Output()
        opened: list[Any] = []
        if self.calls:
            name, call_args = self.calls[-1]
            desc = self.session.function_descs.get(name)

            def open_debugger() -> Any:
                from ..debug.debugger import Debugger
                from .widgets import DebuggerWidget

                widget = DebuggerWidget(Debugger(self.session, desc, call_args, {}))
                # set the outputs trait, never Output.clear_output(): from a comm handler, clear_output is a
                # message the front end applies later, after the new widget is shown, and so removes it
                out.outputs = ()
                out.append_display_data(widget)
                opened.append(widget)
                return widget

            def close_debugger() -> None:
                out.outputs = ()
                while opened:
                    opened.pop().close()

            browser.on_debug, browser.on_close_debug = open_debugger, close_debugger
            browser.can_debug = desc is not None
            if desc is not None and self.session.schedule_of(desc) is not None:
                browser.show_schedule(desc, show=False)  # the call's Schedule beside the Plan in the view switch
        return ipywidgets.VBox([browser, out])

    def debugger_widget(self) -> Any:
        """The step debugger's widget for the debugger ``--debug`` prepared."""
        from .widgets import DebuggerWidget

        if self.debugger is None:
            raise ValueError("no debugger: run the cell with %%flowjob --debug (it debugs the cell's last job call)")
        return DebuggerWidget(self.debugger)

    # -- payloads and pictures --------------------------------------------------------------------
    def _jobs_shown(self) -> list[Job]:
        return [job for stage in self.show if stage != "plan" for job in self.jobs(stage)]

    def payloads(self) -> dict[str, dict[str, Any]]:
        """The view payloads of this output ("jobs" for the shown jobs, "plan" when shown), built once."""
        from ..viz.payload import jobset_payload, plan_payload

        if self._payloads is None:
            passes = self.session.passes if self.compiled else None
            out: dict[str, dict[str, Any]] = {}
            jobs = self._jobs_shown()
            if jobs:
                out["jobs"] = jobset_payload(JobSet(tuple(jobs)), passes, loc_names=self.loc_names)
            if "plan" in self.show and self.compiled:
                out["plan"] = plan_payload(self.plan, self.job_set, passes=passes, loc_names=self.loc_names)
                graph = getattr(self.error, "graph", None)  # a call of the cell hung: its wait-for graph on the Plan
                if graph is not None and getattr(graph, "blocked", None):
                    from ..viz.payload_sections import stuck_section

                    out["plan"]["stuck"] = stuck_section(graph, self.plan, out["plan"]["graph"])
                    out["plan"]["title"] += " · stuck"
            self._payloads = out
        return self._payloads

    def stored_payloads(self) -> dict[str, dict[str, Any]]:
        """The payloads packed as version 2 (``payload_pack.pack``), by view: what the notebook keeps and, with the
        body as bytes, what the live browser's comm carries; packed once."""
        from ..viz.payload_pack import stored

        if self._stored is None:
            self._stored = {view: stored(p) for view, p in self.payloads().items()}
        return self._stored

    def overview_svg(self) -> str | None:
        """The bounded static picture of the first payload (the jobs, else the Plan); None with a note in
        ``render_note`` when no renderer worked."""
        from ..viz import RenderError
        from ..viz.payload_svg import payload_svg

        if self._svg is None and self.render_note is None:
            payloads = self.payloads()
            if not payloads:
                return None
            view, payload = next(iter(payloads.items()))
            try:
                self._svg = payload_svg(payload, id_prefix=f"{self.id_prefix}{view}-")
            except RenderError as err:
                self.render_note = f"(no picture: {err})"
        return self._svg

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from ..viz.payload import MIME

        # version 2 (packed): what a notebook keeps; the kernel's views use version 1
        bundle: dict[str, Any] = {MIME["jobset" if view == "jobs" else "plan"]: p
                                  for view, p in self.stored_payloads().items()}
        svg = self.overview_svg()
        if svg:
            bundle["image/svg+xml"] = svg
        text = self.text_summary()  # bounded: a saved .ipynb keeps it beside the payloads
        bundle["text/plain"] = f"{self.render_note}\n{text}" if self.render_note else text
        if self.interactive and self.compiled:
            widget = self.debugger_widget() if self.debugger is not None else self.interactive_view()
            view = widget._repr_mimebundle_()
            view = view[0] if isinstance(view, tuple) else view
            bundle["application/vnd.jupyter.widget-view+json"] = view["application/vnd.jupyter.widget-view+json"]
        return bundle
