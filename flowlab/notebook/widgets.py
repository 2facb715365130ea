"""anywidget views: the plan browser and the step debugger. Every button or click is a Python method here
(``select``, ``search``, ``step``, ...), so tests and scripts drive them without a browser; the ES modules in
``static/`` only draw and forward clicks."""

from __future__ import annotations

import pathlib
from typing import Any
from urllib.parse import unquote

import anywidget
import traitlets

from ..ir import Job, JobSet

STATIC = pathlib.Path(__file__).parent / "static"


def _render(obj: Any, **options: Any) -> str:
    from ..viz import render_svg, to_dot

    return render_svg(to_dot(obj, **options))


LARGE_PLAN = 300  # tasks: a larger Plan opens with every job collapsed, expanded one job at a time


class PlanBrowser(anywidget.AnyWidget):
    """A session's jobs and Plan: pan/zoom, search, a detail pane, and linked highlights across stages."""

    _esm = STATIC / "plan_browser.js"
    _css = STATIC / "widgets.css"
    views = traitlets.List(traitlets.Unicode()).tag(sync=True)
    view = traitlets.Unicode("plan").tag(sync=True)
    svg = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    highlighted = traitlets.List(traitlets.Unicode()).tag(sync=True)
    detail = traitlets.Dict().tag(sync=True)
    collapsed = traitlets.List(traitlets.Unicode()).tag(sync=True)  # jobs drawn as one node in the Plan view
    collapsed_chains = traitlets.List(traitlets.Int()).tag(sync=True)  # chains drawn as one node
    can_debug = traitlets.Bool(False).tag(sync=True)  # shows a "debug" button that calls on_debug()

    def __init__(self, session: Any, view: str = "plan", **kwargs: Any) -> None:
        self._session = session
        kinds = [k for k in ("user", "push", "pull", "model_io", "main") if session.job_set.of_kind(k)]
        if len(session.plan.tasks) > LARGE_PLAN:
            kwargs.setdefault("collapsed", list(session.plan.job_names))
        super().__init__(views=[*kinds, "plan"], **kwargs)
        self.on_debug: Any = None  # set by whoever can start a debugger (the %%flowjob result)
        self.on_msg(self._on_msg)
        self.show(view)

    def _on_msg(self, widget: Any, content: dict[str, Any], buffers: Any) -> None:
        if content.get("cmd") == "show":
            self.show(content["view"])
        elif content.get("cmd") == "debug":
            self.debug()

    def debug(self) -> Any:
        """The debug button: open the step debugger for the cell's job call (see FlowjobResult)."""
        if self.on_debug is None:
            raise RuntimeError("this browser has no job call to debug; use flow.debug(job, *args)")
        return self.on_debug()

    # -- actions -----------------------------------------------------------------------------------
    def show(self, view: str) -> None:
        if view not in self.views:
            raise ValueError(f"no view {view!r}; views are {self.views}")
        self.view = view
        if view == "plan":
            self.svg = _render(self._session.plan, collapsed_jobs=set(self.collapsed),
                               collapsed_chains=set(self.collapsed_chains))
        else:
            jobs = self._session.job_set.of_kind(view)
            self.svg = _render(JobSet(jobs) if len(jobs) > 1 else jobs[0])
        self.highlighted = []

    def collapse(self, *jobs: str) -> None:
        """Draw these jobs (all, when none is named) as one node each in the Plan view."""
        names = jobs or tuple(self._session.plan.job_names)
        unknown = [j for j in names if j not in self._session.plan.job_names]
        if unknown:
            raise KeyError(f"no job {unknown[0]!r}; jobs are {list(self._session.plan.job_names)}")
        self.collapsed = sorted(set(self.collapsed) | set(names))
        self.show(self.view)

    def collapse_chains(self, job: str | None = None) -> None:
        """Draw each compute chain (of ``job``, or of every job) as one node."""
        plan = self._session.plan
        chains = {t.chain_id for t in plan.tasks if job is None or plan.job_names[t.job_id] == job}
        self.collapsed_chains = sorted(set(self.collapsed_chains) | chains)
        self.show(self.view)

    def expand_chain(self, chain_id: int) -> None:
        self.collapsed_chains = [c for c in self.collapsed_chains if c != chain_id]
        self.show(self.view)

    def expand(self, *jobs: str) -> None:
        """Draw these jobs' tasks again (all jobs, when none is named)."""
        self.collapsed = [j for j in self.collapsed if jobs and j not in jobs]
        self.show(self.view)

    def search(self, text: str) -> list[str]:
        """Highlight every node of the current view whose name contains ``text``."""
        self.query = text
        return list(self.highlighted)

    def select(self, key: str) -> dict[str, Any]:
        """Select a node by SVG id (``task/12``, ``op/job/name``) or by op/task name; fills the detail pane."""
        self.selected = key
        return dict(self.detail)

    # -- reactions (also fired by the browser) -------------------------------------------------------
    @traitlets.observe("query")
    def _on_query(self, change: dict[str, Any]) -> None:
        text = change["new"]
        self.highlighted = [i for i, name in self._nodes() if text and text in name]

    @traitlets.observe("selected")
    def _on_selected(self, change: dict[str, Any]) -> None:
        key = change["new"]
        if not key:
            self.detail = {}
            return
        if key.startswith("chain/"):  # a collapsed chain: expand it
            self.detail = {"op": "", "line": f"chain {key.split('/')[1]}: expanded"}
            self.expand_chain(int(key.split("/")[1]))
            return
        if key.startswith("job/"):  # a collapsed job's node: expand it (large plans open lazily)
            job_name = unquote(key.split("/", 1)[1])
            self.detail = {"job": job_name, "op": "", "line": f"job {job_name}: expanded"}
            self.expand(job_name)
            return
        job, op = self._resolve(key)
        self.detail = self._describe(job, op)
        self.highlighted = self._linked(job, op)

    # -- model -------------------------------------------------------------------------------------
    def _nodes(self) -> list[tuple[str, str]]:
        """(svg id, name) of every node in the current view."""
        if self.view == "plan":
            plan, collapsed = self._session.plan, set(self.collapsed)
            jobs = [(f"job/{_q(name)}", name) for name in plan.job_names if name in collapsed]
            return jobs + [(f"task/{t.task_id}", t.name) for t in plan.tasks
                           if plan.job_names[t.job_id] not in collapsed]
        return [(f"op/{_q(j.name)}/{_q(op.name)}", op.name) for j in self._session.job_set.of_kind(self.view)
                for op in j.ops]

    def _resolve(self, key: str) -> tuple[Job, Any]:
        plan, job_set = self._session.plan, self._session.job_set
        if key.startswith("task/"):
            task = plan.task(int(key.split("/")[1]))
            return job_set.job(plan.job_names[task.job_id]), task.exec_sequence[0]
        if key.startswith("op/"):
            _, job_name, op_name = key.split("/", 2)
            job = job_set.job(unquote(job_name))
            return job, job.op(unquote(op_name))
        for job in job_set:  # a bare name: the first job that has it, user jobs first
            if job.has_op(key):
                return job, job.op(key)
        raise KeyError(f"no op or task {key!r} in this session")

    def _describe(self, job: Job, op: Any) -> dict[str, Any]:
        plan = self._session.plan
        tasks = [t for t in plan.tasks if t.name == op.name and plan.job_names[t.job_id] == job.name]
        registers = []
        for task in tasks:
            for name, regst in task.produced_regst_desc.items():
                block = plan.mem_block(regst.mem_block_id) if regst.mem_block_id >= 0 else None
                registers.append({"name": name, "regst": str(regst), "mem_block": str(block) if block else None})
        created = next((r.name for r in self._session.passes
                        if r.job_name == job.name and op.name in r.added), "user" if op.created_by == "user" else
                       op.created_by)
        return {
            "job": job.name, "op": op.name, "op_type": op.op_type, "line": job.format_op(op),
            "attrs": {k: str(v) for k, v in op.attrs.items()}, "placement": str(op.parallel_conf),
            "blobs": {lbn: str(job.blob_descs[lbn]) for lbn in op.output_lbns if lbn in job.blob_descs},
            "tasks": [f"{t.task_type} task {t.task_id} (thread {t.thrd_id})" for t in tasks],
            "registers": registers, "created_by": created, "loc": op.loc or "",
        }

    def _linked(self, job: Job, op: Any) -> list[str]:
        """The node itself, its tasks in the Plan, and for interface ops the same-named ops of other jobs."""
        plan = self._session.plan
        shared = op.name in self._session.job_set.shared_interfaces
        ids = []
        for task in plan.tasks:
            same_job = plan.job_names[task.job_id] == job.name
            if task.name == op.name and (same_job or shared):
                ids.append(f"task/{task.task_id}")
        for other in self._session.job_set:
            if other.has_op(op.name) and (other.name == job.name or shared):
                ids.append(f"op/{_q(other.name)}/{_q(op.name)}")
        return ids

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["image/svg+xml"] = self.svg  # a static picture for saved notebooks and other front ends
        data["text/plain"] = f"<PlanBrowser view={self.view}>"
        return bundle


class DebuggerWidget(anywidget.AnyWidget):
    """Buttons for the step debugger, the actors table, the next actor on the Plan, and a blob inspector."""

    _esm = STATIC / "debugger.js"
    _css = STATIC / "widgets.css"
    svg = traitlets.Unicode("").tag(sync=True)
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    next_id = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    blob_name = traitlets.Unicode("").tag(sync=True)
    blob = traitlets.Dict().tag(sync=True)

    def __init__(self, dbg: Any, **kwargs: Any) -> None:
        self._dbg = dbg
        super().__init__(svg=_render(dbg.plan), **kwargs)
        self.on_msg(self._on_msg)
        self.refresh()

    def _on_msg(self, widget: Any, content: dict[str, Any], buffers: Any) -> None:
        command = content.get("cmd")
        try:
            if command == "step":
                self.step()
            elif command == "step_n":
                self.step_n(int(content.get("n", 10)))
            elif command == "continue":
                self.continue_()
            elif command == "run_to":
                self.run_to(str(content.get("target", "")))
            elif command == "restart":
                self.restart()
            elif command == "inspect":
                self.inspect(str(content.get("name", "")))
            elif command == "end_of_job":
                self.run_to_end_of_job()
            elif command == "break_nan":
                self.break_on_nan()
            elif command == "clear":
                self._dbg.clear_breakpoints()
                self.refresh("breakpoints cleared")
            elif command == "inject":
                self.inject_fill(str(content.get("name", "")), float(content.get("value", 0.0)))
        except Exception as err:  # shown in the widget: a bad click must not kill the view
            self.status = f"error: {type(err).__name__}: {err}"

    def step(self) -> None:
        event = self._dbg.step()
        self.refresh(f"acted: {event}")

    def step_n(self, n: int) -> None:
        self.refresh(str(self._dbg.step_n(n)))

    def continue_(self) -> None:
        self.refresh(str(self._dbg.continue_()))

    def run_to(self, target: str) -> None:
        self.refresh(str(self._dbg.run_to(target)))

    def restart(self) -> None:
        self._dbg.restart()
        self.refresh("restarted")

    def run_to_end_of_job(self) -> None:
        self.refresh(str(self._dbg.run_to_end_of_job()))

    def break_on_nan(self) -> None:
        bp = self._dbg.break_on(nan=True)
        self.refresh(f"set {bp}")

    def inject_fill(self, name: str, value: float) -> None:
        """Overwrite a live blob with one value (the widget's injection; dbg.inject takes any array)."""
        import numpy as np

        current = self._dbg.value(name)
        self._dbg.inject(name, np.full(current.shape, value, current.dtype))
        self.blob_name = name
        self.refresh(f"injected {value} into {name}")

    def inspect(self, name: str) -> None:
        self.blob_name = name
        self.refresh(self.status)

    def refresh(self, status: str | None = None) -> None:
        dbg = self._dbg
        self.rows = [{"name": r.name.replace("  <- next", ""), "state": r.state, "acts": r.acts,
                      "reason": r.reason or "", "next": r.name.endswith("<- next"),
                      "registers": " ".join(f"r{rid} {used}/{num}" for rid, (used, num) in r.occupancy.items())}
                     for r in dbg.actors()]
        nxt = dbg.runtime.peek() if not dbg.finished else None
        self.next_id = f"task/{nxt.actor_id}" if nxt is not None else ""
        if status is not None:
            self.status = status
        elif not self.status:
            self.status = f"{dbg.acts} acts; next: {dbg.next_actor()}"
        if self.blob_name:
            stats = dbg.blob(self.blob_name)
            self.blob = {"name": stats.lbn, "shape": list(stats.shape), "dtype": stats.dtype, "min": stats.min,
                         "max": stats.max, "mean": stats.mean, "std": stats.std, "nan": stats.nan_count,
                         "inf": stats.inf_count, "preview": stats.preview,
                         "histogram": list(stats.histogram[1]) if stats.histogram else []}

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["image/svg+xml"] = self.svg
        data["text/plain"] = f"<DebuggerWidget {self.status}>"
        return bundle


def _q(part: str) -> str:
    from urllib.parse import quote

    return quote(part, safe="-_.~")
