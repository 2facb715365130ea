"""anywidget views: the plan browser (here) and the step debugger (``debugger_widget.py``, re-exported). Every
button or click is a Python method (``select``, ``search``, ``debug``, ...), so tests and scripts drive them
without a browser; the ES module in ``static/`` only draws and forwards clicks."""

from __future__ import annotations

import pathlib
import warnings
from typing import Any

import anywidget
import traitlets

from ..viz.payload_svg import new_id_prefix
from .debugger_widget import DebuggerWidget

__all__ = ["DebuggerWidget", "PlanBrowser"]

STATIC = pathlib.Path(__file__).parent / "static"
# the front end built from extension/ (one module for every view; it inserts its own CSS)
_ESM = STATIC / "flowlab_widget.js"


class PlanBrowser(anywidget.AnyWidget):
    """A session's jobs and Plan as view payloads (``flowlab.viz.payload``): the front end groups, lays out,
    pans, zooms and searches in the browser; the kernel answers selections with linked highlights and opens
    the debugger. Traits and messages are those of payload.md; ``svg`` is the bounded static picture."""

    _esm = _ESM
    payload = traitlets.Dict()  # the view's jobset or plan payload (payload.md, version 1), in the kernel only
    packed = traitlets.Dict().tag(sync=True)  # what the comm carries: ``payload`` as payload_pack.live makes it
    views = traitlets.List(traitlets.Unicode()).tag(sync=True)
    view = traitlets.Unicode("plan").tag(sync=True)
    # the bounded Graphviz overview of ``payload``, for the mime bundle's image/svg+xml: the live view draws the
    # payload, so the comm never carries it (it was 30 KiB a view switch)
    svg = traitlets.Unicode("")
    selected = traitlets.Unicode("").tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    highlighted = traitlets.List(traitlets.Unicode()).tag(sync=True)
    detail = traitlets.Dict().tag(sync=True)
    can_debug = traitlets.Bool(False).tag(sync=True)  # shows a "debug" button that toggles the debugger
    debug_open = traitlets.Bool(False).tag(sync=True)
    id_prefix = traitlets.Unicode("").tag(sync=True)  # this output's own prefix for DOM/SVG ids
    error = traitlets.Unicode("").tag(sync=True)  # what the last click got wrong; the next good one clears it

    def __init__(self, session: Any, view: str = "plan", *, payloads: dict[str, dict[str, Any]] | None = None,
                 svgs: dict[str, str] | None = None, id_prefix: str | None = None,
                 stored: dict[str, dict[str, Any]] | None = None, **kwargs: Any) -> None:
        """``payloads``, ``svgs`` and ``stored`` (the payloads packed as version 2, ``payload_pack.pack``), by view,
        are what the caller (a %%flowjob output) already made."""
        self._session = session
        self._payloads = dict(payloads or {})
        # view -> (payload, pack(payload)): the comm's body is the notebook's, so a %%flowjob output packs once
        self._stored = {v: (self._payloads[v], p) for v, p in (stored or {}).items() if v in self._payloads}
        self._svgs = dict(svgs or {})
        kinds = [k for k in ("user", "push", "pull", "model_io", "main") if session.job_set.of_kind(k)]
        super().__init__(views=["jobs", *kinds, "plan"], id_prefix=id_prefix or new_id_prefix(), **kwargs)
        self._schedule_of: Any = None  # the job function the "schedule" view shows (show_schedule)
        self.on_debug: Any = None  # set by whoever can start a debugger (the %%flowjob result): -> widget
        self.on_close_debug: Any = None  # closes what on_debug opened
        self.on_msg(self._on_msg)
        self.show(view)

    def _on_msg(self, widget: Any, content: dict[str, Any], buffers: Any) -> None:
        kind = content.get("type") or content.get("cmd")  # "cmd": the messages of the first ES module
        try:
            if kind == "select":
                self.select(str(content.get("id", "")))
            elif kind == "debug":
                self.debug()
            elif kind == "show":
                self.show(str(content.get("view", "")))
            else:
                raise ValueError(f"unknown message type {kind!r}; expected select, debug or show")
        except Exception as err:  # shown in the view: an exception here would only reach the Log Console
            self.error = f"{type(err).__name__}: {err}"
        else:
            self.error = ""

    def debug(self) -> Any:
        """The debug button, a toggle: open the step debugger for the cell's job call; a second press closes
        it, a third opens a fresh one. Returns the debugger widget when it opens, else None."""
        if self.on_debug is None:
            raise RuntimeError("this browser has no job call to debug; use flow.debug(job, *args)")
        if self.debug_open:
            if self.on_close_debug is not None:
                self.on_close_debug()
            self.debug_open = False
            return None
        widget = self.on_debug()
        self.debug_open = True
        return widget

    # -- views -------------------------------------------------------------------------------------
    def payload_of(self, view: str) -> dict[str, Any]:
        """The payload of one view ("jobs", a job kind or "plan"), built once."""
        from ..ir import JobSet
        from ..viz.payload import jobset_payload, plan_payload

        if view not in self._payloads:
            session, cells = self._session, _cell_names()
            if view == "schedule":
                from .plan_views import schedule_plan_payload

                self._payloads[view] = schedule_plan_payload(session, self._schedule_of)
            elif view == "plan":
                self._payloads[view] = plan_payload(session.plan, session.job_set, passes=session.passes,
                                                    loc_names=cells)
            elif view == "jobs":
                self._payloads[view] = jobset_payload(session.job_set, session.passes, loc_names=cells)
            else:
                jobs = session.job_set.of_kind(view)
                self._payloads[view] = jobset_payload(JobSet(jobs), session.passes, loc_names=cells,
                                                      title=f"{view} jobs: {', '.join(j.name for j in jobs)}")
        return self._payloads[view]

    def svg_of(self, view: str) -> str:
        """The view's static picture; never raises: the picture is the fallback, and its failure must not cost
        the interactive view (payload_svg degrades by itself; anything else becomes a note in the picture)."""
        from ..viz.payload_svg import payload_svg, placeholder_svg

        if view not in self._svgs:
            prefix = f"{self.id_prefix}{view}-"
            try:
                self._svgs[view] = payload_svg(self.payload_of(view), id_prefix=prefix)
            except Exception as err:  # a bug in the DOT emitter: say so in the picture and as a warning
                warnings.warn(f"flowlab: no static picture of the {view} view: {type(err).__name__}: {err}",
                              stacklevel=2)
                self._svgs[view] = placeholder_svg(self.payload_of(view), err, id_prefix=prefix)
        return self._svgs[view]

    def show_schedule(self, job_fn: Any, show: bool = True) -> None:
        """Add the "Schedule" view (beside the Plan in the view switch) for ``job_fn``'s captured calls (a job
        function or its FunctionDesc: its steps, fused segments and lanes on the Plan, the execution policy), and
        show it (``show=False``: only offer it; it is built when first shown); again with another function
        replaces it."""
        self._schedule_of = job_fn
        for cache in (self._payloads, self._stored, self._svgs):
            cache.pop("schedule", None)
        if show:
            self.payload_of("schedule")  # an error (no schedule yet) before the view switch offers it
        if "schedule" not in self.views:
            self.views = [*self.views, "schedule"]
        if show:
            self.show("schedule")

    def show(self, view: str) -> None:
        if view not in self.views:
            raise ValueError(f"no view {view!r}; views are {self.views}")
        with self.hold_sync():  # one comm message for the whole switch, not one per trait
            self.view, self.payload = view, self.payload_of(view)
            self.svg = self.svg_of(view)
            self.selected = ""  # the detail pane of another view's node would be stale here
            self.highlighted = self._matches(self.query)  # the search box keeps its text: show its matches here

    def _matches(self, text: str) -> list[str]:
        return [n["id"] for n in self.payload["graph"]["nodes"] if text and text in n["label"]]

    def expand(self, *group_ids: str) -> None:
        """Open groups of the current view (what a click on a collapsed group does in the browser)."""
        self._set_collapsed(group_ids, False)

    def collapse(self, *group_ids: str) -> None:
        """Close groups of the current view (all groups when none is named)."""
        self._set_collapsed(group_ids or tuple(g["id"] for g in self.payload["graph"]["groups"]), True)

    def _set_collapsed(self, group_ids: tuple[str, ...], value: bool) -> None:
        groups = {g["id"]: g for g in self.payload["graph"]["groups"]}
        unknown = [g for g in group_ids if g not in groups]
        if unknown:
            labels = ", ".join(f"{g['id']} ({g['label']})" for g in list(groups.values())[:5])
            raise KeyError(f"no group {unknown[0]!r} in the {self.view} view; groups are e.g. {labels}")
        graph = dict(self.payload["graph"])
        graph["groups"] = [{**g, "collapsed": value} if g["id"] in group_ids else g for g in graph["groups"]]
        self._payloads[self.view] = self.payload = {**self.payload, "graph": graph}

    def search(self, text: str) -> list[str]:
        """Highlight every node of the current view whose label contains ``text``."""
        self.query = text
        return list(self.highlighted)

    def select(self, key: str) -> dict[str, Any]:
        """Select a node by payload id (``t:12``, ``o:0:3``), by this output's SVG id, or by op/task name;
        fills ``detail`` (the node's detail pane) and highlights the linked nodes."""
        self._resolve(key)  # an unknown key raises here, before anything changes
        self.selected = key
        return dict(self.detail)

    def describe(self, key: str) -> str:
        """The detail pane of a node (see ``select``) as plain text."""
        detail = self.select(key)
        lines = [detail.get("title", "")]
        for sec in detail.get("sections", ()):
            lines.append(f"{sec['title']}:")
            lines.extend(f"  {k}: {v}" for k, v in sec["rows"])
        return "\n".join(lines)

    def focus(self, node_id: str) -> None:
        """Ask the front end to select, highlight and scroll to a node (payload.md's kernel -> front end)."""
        self.send({"type": "focus", "id": node_id})

    def set_overlay(self, overlay: Any) -> None:
        """Colour a view by ``flow.debug.overlay(...)``'s numbers and show it: an overlay built for the Plan
        (``view="plan"``) goes on the plan view, one for the job view (``view="jobset"``) on the jobs view
        (docs/overlays.md). ``None`` takes every overlay off."""
        from ..viz.payload_overlay import overlay_section

        targets = ["plan", "jobs"] if overlay is None else ["plan" if overlay.view == "plan" else "jobs"]
        for target in targets:
            payload = {k: v for k, v in self.payload_of(target).items() if k != "overlay"}
            if overlay is not None:
                payload["overlay"] = overlay_section(overlay.to_dict(), payload["graph"])
            self._payloads[target] = payload
        if overlay is not None or self.view in targets:
            self.show(targets[0] if overlay is not None else self.view)

    @traitlets.observe("payload")
    def _on_payload(self, change: dict[str, Any]) -> None:
        from ..viz.payload_pack import live, pack

        payload = change["new"]
        known = self._stored.get(self.view)
        if known is None or known[0] is not payload:  # a new view, or expand/collapse made a new payload
            known = self._stored[self.view] = (payload, pack(payload))
        self.packed = live(payload, known[1])

    @traitlets.observe("query")
    def _on_query(self, change: dict[str, Any]) -> None:
        self.highlighted = self._matches(change["new"])

    @traitlets.observe("selected")
    def _on_selected(self, change: dict[str, Any]) -> None:
        if not change["new"]:
            self.detail = {}
            return
        try:
            node = self._resolve(change["new"])
        except KeyError as err:  # the front end set the trait: say so in the view, never raise into the comm
            self.detail, self.highlighted, self.error = {}, [], f"KeyError: {err.args[0]}"
            return
        graph = self.payload["graph"]
        self.detail = {"id": node["id"], **graph["details"].get(node.get("detail", ""), {"title": node["label"]})}
        self.highlighted, self.error = self._linked(node), ""

    # -- model -------------------------------------------------------------------------------------
    def _resolve(self, key: str) -> dict[str, Any]:
        nodes = self.payload["graph"]["nodes"]
        prefix = f"{self.id_prefix}{self.view}-"
        key = key[len(prefix):] if key.startswith(prefix) else key
        if key.startswith("task/"):  # the first front end's SVG ids
            key = f"t:{key.split('/')[1]}"
        for node in nodes:
            if node["id"] == key:
                return node
        for node in nodes:  # a bare name: the first node with that label (user jobs come first)
            if node["label"] == key:
                return node
        raise KeyError(f"no node {key!r} in the {self.view} view (ids look like "
                       f"{', '.join(n['id'] for n in nodes[:3])}; names like {nodes[0]['label'] if nodes else '-'})")

    def _linked(self, node: dict[str, Any]) -> list[str]:
        """The node, its op's tasks (or task's op) in the other views, and for a shared interface blob the
        same-named nodes of the other jobs and the shared block between them."""
        shared = self._session.job_set.shared_interfaces
        graph = self.payload["graph"]
        same = [n["id"] for n in graph["nodes"] if n["id"] == node["id"]
                or (node["label"] in shared and n["label"] == node["label"] and n["kind"] == node["kind"])]
        blocks = {e["source"] if e["target"] in same else e["target"] for e in graph["edges"]
                  if e["kind"] == "shared_mem" and (e["source"] in same or e["target"] in same)}
        return same + sorted(blocks)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        from ..viz.payload import MIME
        from ..viz.payload_pack import stored

        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data[MIME["plan" if self.payload.get("kind") == "plan" else "jobset"]] = stored(self.payload)
        data["image/svg+xml"] = self.svg  # a static picture for saved notebooks and other front ends
        data["text/plain"] = f"<PlanBrowser view={self.view}: {self.payload.get('title', '')}>"
        return bundle


def _cell_names() -> dict[str, str]:
    """IPython's cell file names -> "cell [n]" when running under IPython (see magics._cell_names)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the notebook package needs IPython
        return {}
    from .magics import cell_names

    shell = get_ipython()
    return cell_names(shell) if shell is not None else {}
