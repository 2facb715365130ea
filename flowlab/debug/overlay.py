"""Numbers on the graph: one value per Plan task (``t:<task_id>``) or per job-view op (``o:<job>:<op>``), coloured
by a gradient, threshold bins or categories, from a recorded run (docs/overlays.md).

```python
ov = flow.debug.overlay(train_job, x, y, metric="time", calls=5)   # median act time per task over 5 calls
print(ov)                                                           # the scale, min/median/max, the top nodes
show_plan(session.plan, session.job_set, overlay=ov)                # the Plan view, boxes coloured by it
```

An overlay is data (``Overlay``): the metric, its unit, ``values`` (node id -> float) and how to colour them. The
builders read what a ``Debugger`` recorded (``overlay_of``): per act its duration (``dbg.timeline()``), what it
wrote (with NaN/Inf counts: ``dbg.recording()``), the kernel tier and, where act records carry one, the executor.
Times are those of the debugger's protocol stepping (kernel plus the act's bookkeeping), not of a fused call.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import FlowlabError
from .debugger import Debugger
from .nan_watch import NanCatcher

# metric -> (what it is, unit, how several tasks of one op combine in the job view)
METRICS: dict[str, tuple[str, str]] = {
    "time": ("act time (median over calls)", "µs"),
    "nan": ("NaN values written", "NaN"),
    "inf": ("Inf values written", "Inf"),
    "nonfinite": ("NaN and Inf values written", "values"),
    "bytes": ("bytes written", "B"),
    "tier": ("kernel tier", ""),
    "executor": ("executor", ""),
}
CATEGORICAL = ("tier", "executor")
VIEWS = ("plan", "jobset")
# Light fills: a box's label (#111) stays readable on every colour, in the light and the dark theme alike.
# (the box's type line, #454555, keeps a contrast of 3.5 or more on the reddest)
GRADIENT = ("#fff7bc", "#fec44f", "#f9837a")
BINS = ("#e5f5e0", "#fff3a0", "#fed976", "#feb24c", "#fd9f5c", "#fb8f6a", "#f9837a")
CATEGORY_COLORS = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d")


def bin_colors(n: int) -> tuple[str, ...]:
    """``n`` threshold bins' colours, evenly spread over ``BINS`` (the first bin the palest)."""
    if n == 1:
        return BINS[:1]
    return tuple(BINS[round(i * (len(BINS) - 1) / (n - 1))] for i in range(n))


@dataclass(frozen=True)
class Overlay:
    """One number per node of a view. ``view``: ``plan`` (ids ``t:<task_id>``) or ``jobset`` (``o:<j>:<i>``).
    Colouring: ``categories`` (a value is an index into them), else ``thresholds`` (ascending bin edges: a value
    ``v`` lies in bin ``k``, the number of edges ``<= v``), else a gradient from the least to the greatest value.
    ``labels``: node id -> a name to print."""

    metric: str
    unit: str
    values: Mapping[str, float]
    view: str = "plan"
    thresholds: tuple[float, ...] = ()
    categories: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        if self.view not in VIEWS:
            raise ValueError(f"Overlay: view must be one of {', '.join(VIEWS)}; got {self.view!r}")
        values = {}
        for node, value in self.values.items():
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(f"Overlay {self.metric!r}: node {node!r} has value {value!r}; values must be finite")
            values[str(node)] = number
        edges = tuple(float(t) for t in self.thresholds)
        if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
            raise ValueError(f"Overlay {self.metric!r}: thresholds must be strictly ascending; got {list(edges)}")
        if len(edges) >= len(BINS):
            raise ValueError(f"Overlay {self.metric!r}: at most {len(BINS) - 1} thresholds ({len(BINS)} colours); "
                             f"got {len(edges)}")
        if self.categories:
            bad = {n: v for n, v in values.items() if not (v.is_integer() and 0 <= v < len(self.categories))}
            if bad:
                raise ValueError(f"Overlay {self.metric!r}: a categorical value is an index into "
                                 f"{list(self.categories)}; got {dict(list(bad.items())[:3])}")
        object.__setattr__(self, "values", MappingProxyType(values))
        object.__setattr__(self, "thresholds", edges)
        object.__setattr__(self, "categories", tuple(self.categories))
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))

    @property
    def scale(self) -> str:
        return "categories" if self.categories else "thresholds" if self.thresholds else "gradient"

    @property
    def colors(self) -> tuple[str, ...]:
        if self.categories:
            return tuple(CATEGORY_COLORS[i % len(CATEGORY_COLORS)] for i in range(len(self.categories)))
        return bin_colors(len(self.thresholds) + 1) if self.thresholds else GRADIENT

    def bin(self, value: float) -> int:
        """The colour index of ``value``: its category, or its threshold bin (the gradient has no bins: 0)."""
        if self.categories:
            return int(value)
        return sum(1 for t in self.thresholds if value >= t)

    def text(self, value: float) -> str:
        """``value`` as people read it: its category's name, or the number and the unit."""
        if self.categories:
            return self.categories[int(value)]
        shown = f"{value:,.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"
        return f"{shown} {self.unit}".strip()

    def stats(self, ids: Iterable[str] | None = None) -> dict[str, float]:
        """count, min, median, max and sum over ``ids`` (default: every node with a value)."""
        vals = [self.values[i] for i in (self.values if ids is None else ids) if i in self.values]
        if not vals:
            return {"count": 0}
        return {"count": len(vals), "min": min(vals), "median": statistics.median(vals), "max": max(vals),
                "sum": math.fsum(vals)}

    def top(self, n: int = 10, largest: bool = True) -> list[tuple[str, str, float]]:
        """The ``n`` nodes with the greatest (``largest``) or least values: (id, label, value)."""
        order = sorted(self.values.items(), key=lambda kv: (-kv[1] if largest else kv[1], kv[0]))
        return [(node, self.labels.get(node, node), value) for node, value in order[:n]]

    def to_dict(self) -> dict[str, Any]:
        """The payload's ``overlay`` section without its per-group statistics (viz/payload_overlay.py adds them)."""
        out: dict[str, Any] = {"metric": self.metric, "unit": self.unit, "view": self.view, "scale": self.scale,
                               "values": dict(self.values), "colors": list(self.colors),
                               "labels": {k: v for k, v in self.labels.items() if k in self.values}}
        if self.thresholds:
            out["thresholds"] = list(self.thresholds)
        if self.categories:
            out["categories"] = list(self.categories)
        if self.source:
            out["source"] = self.source
        return out

    def __str__(self) -> str:
        st = self.stats()
        head = f"overlay {self.metric} on the {'Plan' if self.view == 'plan' else 'job view'}" + \
            (f" ({self.source})" if self.source else "") + f": {st['count']} nodes"
        if self.categories:
            counts = {c: sum(1 for v in self.values.values() if int(v) == i) for i, c in enumerate(self.categories)}
            lines = [head, "  " + ", ".join(f"{c}: {n}" for c, n in counts.items())]
        else:
            scale = f"thresholds {list(self.thresholds)}" if self.thresholds else "gradient"
            lines = [head, f"  {scale}" + (f"; min {self.text(st['min'])}, median {self.text(st['median'])}, "
                                           f"max {self.text(st['max'])}, sum {self.text(st['sum'])}"
                                           if st["count"] else "")]
        lines += [f"  {self.text(v):>16}  {label}" for _node, label, v in self.top(10)]
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


# -- from recorded runs ----------------------------------------------------------------------------------------------
def _blob_count(stats: Mapping[str, Any], key: str) -> float:
    """NaN (``key`` "nan") or Inf counts of one written register, over every blob it holds."""
    parts = stats.get("blobs") or [stats]
    return float(sum(int(p.get(key, 0)) for p in parts))


def _per_task(acts: Sequence[Mapping[str, Any]],
              value: Callable[[Mapping[str, Any]], float | None]) -> dict[str, float]:
    out: dict[str, float] = {}
    for act in acts:
        v = value(act)
        if v is not None:
            out[act["node"]] = out.get(act["node"], 0.0) + v
    return out


def task_values(dbg: Any, metric: str) -> dict[str, Any]:
    """One call's value per task (``t:<id>``) from a Debugger that ran it: a float, or a category name."""
    acts = dbg.recording().acts
    if metric == "time":
        out: dict[str, Any] = {}
        for entry in dbg.timeline():
            node = f"t:{entry.event.actor_id}"
            out[node] = out.get(node, 0.0) + entry.duration_s * 1e6
        return out
    if metric in ("nan", "inf", "nonfinite"):
        keys = ("nan", "inf") if metric == "nonfinite" else (metric,)
        if acts and not dbg.record_stats:
            raise FlowlabError(f"overlay {metric!r}: this debugger recorded no statistics (record_stats=False)")
        return _per_task(acts, lambda a: sum(_blob_count(s, k) for s in a["blobs"].values() for k in keys))
    if metric == "bytes":
        descs = dbg.plan.regst_descs
        size = {rid: sum(d.nbytes for d in desc.lbi2blob_desc.values()) for rid, desc in descs.items()}
        return _per_task(acts, lambda a: float(sum(size[int(w[2:])] for w in a["writes"])))
    if metric in CATEGORICAL:
        found = {a["node"]: str(a[metric]) for a in acts if a.get(metric)}
        if acts and not found and metric == "executor":
            raise FlowlabError("overlay 'executor': these act records name no executor (the runtime that recorded "
                               "them does not say which one ran each act)")
        return found
    raise ValueError(f"overlay: metric {metric!r} is not one of {', '.join(METRICS)}")


def combine_calls(per_call: Sequence[Mapping[str, Any]], metric: str) -> dict[str, Any]:
    """Several calls' values per node as one: the median for numbers (a node a call did not run counts 0), the last
    call's category (the tier of a session's first call is the reference, of every later one Numba)."""
    nodes = {n for call in per_call for n in call}
    if metric in CATEGORICAL:
        out: dict[str, Any] = {}
        for call in per_call:
            out.update(call)
        return out
    return {n: float(statistics.median([call.get(n, 0.0) for call in per_call])) for n in nodes}


def task_labels(plan: Any) -> dict[str, str]:
    return {f"t:{t.task_id}": f"{plan.job_names[t.job_id]}/{t.name}" for t in plan.tasks}


def to_jobset(plan: Any, job_set: Any, values: Mapping[str, Any], categorical: bool
              ) -> tuple[dict[str, Any], dict[str, str]]:
    """Task values as job-view op values (``o:<job index>:<op index>``, as viz/payload.py numbers them): the sum
    over an op's tasks (one per device), or their category ("mixed" where the devices differ). Boxing and copy
    tasks have no op in the job view and are left out."""
    where = {(job.name, op.name): (f"o:{j}:{i}", f"{job.name}/{op.name}")
             for j, job in enumerate(job_set) for i, op in enumerate(job.ops)}
    out: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for task in plan.tasks:
        value = values.get(f"t:{task.task_id}")
        if value is None or not task.exec_sequence:
            continue
        hit = where.get((plan.job_names[task.job_id], task.exec_sequence[0].name))
        if hit is None:
            continue
        node, labels[node] = hit
        if categorical:
            out[node] = value if out.get(node, value) == value else "mixed"
        else:
            out[node] = out.get(node, 0.0) + value
    return out, labels


def overlay_of(debuggers: Sequence[Any], metric: str, view: str = "plan", thresholds: Sequence[float] | None = None,
               source: str = "") -> Overlay:
    """The overlay of ``metric`` over the calls these Debuggers ran (the median over them; see ``combine_calls``)."""
    if metric not in METRICS:
        raise ValueError(f"overlay: metric {metric!r} is not one of {', '.join(METRICS)}")
    if view not in VIEWS:
        raise ValueError(f"overlay: view must be 'plan' (tasks) or 'jobset' (the job view's ops); got {view!r}")
    if not debuggers:
        raise ValueError("overlay: no recorded call to take the numbers from")
    plan = debuggers[0].plan
    values = combine_calls([task_values(d, metric) for d in debuggers], metric)
    labels = task_labels(plan)
    if view == "jobset":
        values, labels = to_jobset(plan, debuggers[0].session.job_set, values, metric in CATEGORICAL)
    categories: tuple[str, ...] = ()
    if metric in CATEGORICAL:
        categories = tuple(sorted(set(values.values())))
        values = {n: float(categories.index(v)) for n, v in values.items()}
    if thresholds is None and metric in ("nan", "inf", "nonfinite"):
        thresholds = (1,)  # two bins: clean, and any NaN/Inf at all
    what, unit = METRICS[metric]
    if metric == "time":
        n = len(debuggers)
        what = f"act time (median of {n} calls)" if n > 1 else "act time"
    return Overlay(what, unit, values, view, tuple(thresholds or ()), categories, labels, source)


def overlay(source: Any, *args: Any, metric: str = "time", view: str = "plan",
            thresholds: Sequence[float] | None = None, calls: int | None = None, **kwargs: Any) -> Overlay:
    """An overlay of ``metric`` (``time``, ``nan``, ``inf``, ``nonfinite``, ``bytes``, ``tier``, ``executor``) for
    ``view`` (``plan`` or ``jobset``), from:

    - a ``@flow.global_function`` and its inputs: ``calls`` calls (default 5 for ``time``, else 1), each on its own
      Debugger from the session's current variables, run to the end;
    - a Debugger (the acts it recorded so far), or a list of them (the median over their calls);
    - a ``catch_nan`` catcher that caught a call: that call, run to its end."""
    if isinstance(source, NanCatcher):
        if not source.caught or source.debugger is None:
            raise FlowlabError(f"overlay: this catch_nan caught nothing ({source}); an overlay needs the caught call")
        bad = source.debugger
        dbg = Debugger(bad.session, bad.desc, source.args, source.kwargs)  # no breakpoints: the whole call
        dbg.continue_()
        return overlay_of([dbg], metric, view, thresholds, f"call {source.step} of {source.job}, caught by catch_nan")
    if isinstance(source, Debugger):
        return overlay_of([source], metric, view, thresholds, f"{source.acts} acts of {source.desc.job_name}")
    if isinstance(source, (list, tuple)) and source and all(isinstance(d, Debugger) for d in source):
        return overlay_of(list(source), metric, view, thresholds, f"{len(source)} calls of {source[0].desc.job_name}")
    if getattr(source, "__flowlab_function_desc__", None) is None:
        raise TypeError("flow.debug.overlay takes a @flow.global_function job (and its inputs), a Debugger, a list "
                        f"of Debuggers or a catch_nan catcher; got {source!r}")
    n = calls if calls is not None else (5 if metric == "time" else 1)
    if n < 1:
        raise ValueError(f"overlay: calls must be at least 1; got {n}")
    from ..session import default_session

    desc, session = source.__flowlab_function_desc__, default_session()
    if session.function_descs.get(desc.job_name) is not desc:
        session.add_job(desc)
    runs = []
    for _ in range(n):
        dbg = Debugger(session, desc, args, kwargs)
        dbg.record_stats = metric in ("nan", "inf", "nonfinite")  # statistics cost a pass over every blob
        dbg.continue_()
        runs.append(dbg)
    return overlay_of(runs, metric, view, thresholds, f"{n} call{'s' if n > 1 else ''} of {desc.job_name}")
