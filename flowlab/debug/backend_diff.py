"""Where do the kernel backends disagree: one call run twice from the same variables, once on the NumPy reference
kernels and once on Numba's, every output of every act compared (docs/overlays.md).

```python
bd = flow.debug.backend_diff(train_job, x, y)
print(bd)                         # ops by their greatest difference, largest first
bd.overlay()                      # the Plan overlay of max |reference - numba| per task; .overlay("rel", "jobset")
```

Each run steps the protocol on its own Debugger (the session's variables copied in, never written back), so both
see the same inputs and both take the same acts in the same order; a task that acts several times (one act per
piece) is compared act by act. The CUDA kernels are not compared: a GPU kernel runs where the Plan places a task
on a GPU, which is another Plan, not another backend for the same tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import flags
from ..errors import FlowlabError
from ..runtime.variables import on_host
from .overlay import Overlay, task_labels, to_jobset

BACKENDS = ("reference", "numba")


@dataclass(frozen=True)
class OutputDiff:
    """One output blob of one task, over all its acts: the greatest |a - b|, that over the greatest |a| (the
    reference's scale), and how many values differ at all (NaN against NaN and an infinity against itself are
    equal; NaN against a number differs by inf)."""

    node: str  # t:<task_id>
    actor: str  # job/task
    lbn: str
    max_abs: float
    max_rel: float
    differing: int
    size: int


def compare(a: np.ndarray, b: np.ndarray) -> tuple[float, float, int]:
    """(max |a - b|, that / max |a|, count of differing values) of two arrays of one shape, in float64."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    same = (x == y) | (np.isnan(x) & np.isnan(y))  # equal infinities too: inf - inf would be NaN
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(x - y))
    diff = np.where(np.isnan(diff), np.inf, diff)  # NaN against a number
    if diff.size == 0:
        return 0.0, 0.0, 0
    worst = float(diff.max())
    finite = np.abs(x[np.isfinite(x)])
    scale = float(finite.max()) if finite.size else 0.0
    rel = worst / scale if scale > 0 else (0.0 if worst == 0 else float("inf"))
    return worst, rel, int(np.count_nonzero(diff))


def run_outputs(desc: Any, args: tuple[Any, ...], kwargs: dict[str, Any], kernels: str
                ) -> tuple[Any, dict[tuple[int, str], list[np.ndarray]]]:
    """One call on a Debugger with the ``kernels`` flag: every act's written blobs, copied right after the act
    (a reused memory block overwrites them later), by (task id, lbn) in act order."""
    from ..session import default_session
    from .debugger import Debugger

    outputs: dict[tuple[int, str], list[np.ndarray]] = {}
    with flags.scoped(kernels=kernels):  # the kernels are bound when the runtime is built and as it acts
        dbg = Debugger(default_session(), desc, args, kwargs)
        dbg.record_stats = False
        while not dbg.finished and dbg.runtime.peek() is not None:
            event = dbg.step()
            for regst_id, index in event.written:
                for lbn, array in dbg.runtime.regsts[regst_id][index].blobs.items():
                    outputs.setdefault((event.actor_id, lbn), []).append(np.array(on_host(array), copy=True))
    return dbg, outputs


class BackendDiff:
    """The outputs of one call on the reference kernels (``a``) and on Numba's (``b``), compared act by act."""

    def __init__(self, plan: Any, job_set: Any, rows: list[OutputDiff], results: tuple[Any, Any],
                 tiers: tuple[set[str], set[str]] = (set(), set())) -> None:
        self.plan, self.job_set, self.rows = plan, job_set, rows
        self.results = results  # the call's return value on each backend
        self.tiers = tiers  # the kernel tiers each run's acts said they ran on: {"reference"}, {"numba"}

    def per_task(self, metric: str = "abs") -> dict[str, float]:
        """Each task's greatest difference over its outputs: ``abs`` or ``rel``."""
        if metric not in ("abs", "rel"):
            raise ValueError(f"backend_diff: metric is 'abs' or 'rel'; got {metric!r}")
        out: dict[str, float] = {}
        for row in self.rows:
            value = row.max_abs if metric == "abs" else row.max_rel
            out[row.node] = max(out.get(row.node, 0.0), value)
        return out

    def overlay(self, metric: str = "abs", view: str = "plan", thresholds: tuple[float, ...] = ()) -> Overlay:
        """The "where do the backends disagree" overlay: a task's (or, ``view="jobset"``, an op's: the greatest of
        its tasks') greatest difference. An infinite difference (a NaN on one side only) is drawn as the greatest
        finite one's double, and named in ``print(bd)``."""
        values = self.per_task(metric)
        finite = [v for v in values.values() if np.isfinite(v)]
        cap = 2 * max(finite) if finite and max(finite) > 0 else 1.0
        values = {k: (v if np.isfinite(v) else cap) for k, v in values.items()}
        labels = task_labels(self.plan)
        if view == "jobset":
            jobset_values, labels = to_jobset(self.plan, self.job_set, values, categorical=False)
            values = jobset_values
        what = "max |reference − numba|" if metric == "abs" else "max |reference − numba| / max |reference|"
        return Overlay(what, "", values, view, thresholds, (), labels,
                       "reference vs numba kernels, one call")

    def __str__(self) -> str:
        rows = sorted(self.rows, key=lambda r: -r.max_abs)  # stable: of equal ones, the first to act (the source)
        differ = [r for r in rows if r.differing]
        lines = [f"backend diff (reference vs numba): {len(rows)} outputs, {len(differ)} differ"]
        lines += [f"  {r.max_abs:>10.3g} abs {r.max_rel:>10.3g} rel  {r.differing:>7} of {r.size:<8} {r.actor}  {r.lbn}"
                  for r in differ[:20]]
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def backend_diff(job_fn: Any, *args: Any, **kwargs: Any) -> BackendDiff:
    """Run one call of ``job_fn`` on the reference kernels and on Numba's, from the same variables, and compare
    every output of every act (see the module docstring)."""
    desc = getattr(job_fn, "__flowlab_function_desc__", None)
    if desc is None:
        raise TypeError(f"flow.debug.backend_diff takes a @flow.global_function job; got {job_fn!r}")
    from ..session import default_session

    session = default_session()
    if session.function_descs.get(desc.job_name) is not desc:
        session.add_job(desc)
    (dbg_a, out_a), (dbg_b, out_b) = (run_outputs(desc, args, kwargs, k) for k in BACKENDS)
    if list(out_a) != list(out_b) or any(len(out_a[k]) != len(out_b[k]) for k in out_a):
        raise FlowlabError("backend_diff: the two runs took different acts; the Plan's schedule should not depend on "
                           "the kernels (please report this)")
    plan = dbg_a.plan
    names = task_labels(plan)
    rows = []
    for (task_id, lbn), arrays in out_a.items():
        worst = rel = 0.0
        differing = 0
        for a, b in zip(arrays, out_b[(task_id, lbn)], strict=True):
            w, r, d = compare(a, b)
            worst, rel, differing = max(worst, w), max(rel, r), differing + d
        rows.append(OutputDiff(f"t:{task_id}", names[f"t:{task_id}"], lbn, worst, rel, differing,
                               sum(a.size for a in arrays)))
    tiers = tuple({a["tier"] for a in d.recording().acts if a.get("tier")} for d in (dbg_a, dbg_b))
    return BackendDiff(plan, session.job_set, rows, (dbg_a.result if dbg_a.finished else None,
                                                     dbg_b.result if dbg_b.finished else None),
                       (tiers[0], tiers[1]))
