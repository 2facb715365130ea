"""Where do the kernel backends disagree: one call run twice from the same variables, once on the NumPy reference
kernels and once on Numba's, every output of every act compared (docs/overlays.md).

```python
bd = flow.debug.backend_diff(train_job, x, y)
print(bd)                         # ops by their greatest difference, largest first
bd.overlay()                      # the Plan overlay of max |reference - numba| per task; .overlay("rel", "jobset")
```

Each run steps the protocol on its own Debugger (the session's variables copied in, never written back), so both
see the same inputs and both take the same acts in the same order; a task that acts several times (one act per
piece) is compared act by act.

``backends=("numba", "cuda")`` compares Numba's CPU kernels with its CUDA kernels: a GPU kernel runs where the Plan
places an op on a GPU, which is another Plan, so the job is traced again with GPU 0 as its default placement in a
second, private Session (``cuda_diff``), its variables copied from this session's, and each user op's outputs are
matched by logical blob name (the GPU Plan's CopyHd tasks have no counterpart and are left out).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import flags
from ..errors import FlowlabError
from ..runtime.variables import on_host
from .overlay import Overlay, task_labels, to_jobset

BACKENDS = ("reference", "numba")
PAIRS = (BACKENDS, ("numba", "cuda"))


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


def output_diff(task_id: int, names: dict[str, str], lbn: str, arrays: list[np.ndarray],
                other: list[np.ndarray]) -> OutputDiff:
    """One output's row: the greatest differences over the act's writes of it on the two backends (``arrays``,
    ``other``: the copies after each act that wrote it, in act order)."""
    worst = rel = 0.0
    differing = 0
    for a, b in zip(arrays, other, strict=True):
        w, r, d = compare(a, b)
        worst, rel, differing = max(worst, w), max(rel, r), differing + d
    return OutputDiff(f"t:{task_id}", names[f"t:{task_id}"], lbn, worst, rel, differing, sum(a.size for a in arrays))


def run_outputs(desc: Any, args: tuple[Any, ...], kwargs: dict[str, Any], kernels: str, session: Any = None
                ) -> tuple[Any, dict[tuple[int, str], list[np.ndarray]]]:
    """One call on a Debugger (of ``session``, the default one unless given) with the ``kernels`` flag: every act's
    written blobs, copied right after the act (a reused memory block overwrites them later), by (task id, lbn) in
    act order."""
    from ..session import default_session
    from .debugger import Debugger

    outputs: dict[tuple[int, str], list[np.ndarray]] = {}
    with flags.scoped(kernels=kernels):  # the kernels are bound when the runtime is built and as it acts
        dbg = Debugger(session or default_session(), desc, args, kwargs)
        dbg.record_stats = False
        while not dbg.finished and dbg.stepper.peek() is not None:
            event = dbg.step()
            for regst_id, index in event.written:
                for lbn, array in dbg.runtime.regsts[regst_id][index].blobs.items():
                    outputs.setdefault((event.actor_id, lbn), []).append(np.array(on_host(array), copy=True))
    return dbg, outputs


class BackendDiff:
    """The outputs of one call on the reference kernels (``a``) and on Numba's (``b``), compared act by act."""

    def __init__(self, plan: Any, job_set: Any, rows: list[OutputDiff], results: tuple[Any, Any],
                 tiers: tuple[set[str], set[str]] = (set(), set()), backends: tuple[str, str] = BACKENDS) -> None:
        self.plan, self.job_set, self.rows = plan, job_set, rows  # the plan: the first backend's (a CPU Plan)
        self.backends = backends
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
        a, b = self.backends
        what = f"max |{a} − {b}|" if metric == "abs" else f"max |{a} − {b}| / max |{a}|"
        return Overlay(what, "", values, view, thresholds, (), labels, f"{a} vs {b} kernels, one call")

    def __str__(self) -> str:
        rows = sorted(self.rows, key=lambda r: -r.max_abs)  # stable: of equal ones, the first to act (the source)
        differ = [r for r in rows if r.differing]
        lines = [f"backend diff ({self.backends[0]} vs {self.backends[1]}): {len(rows)} outputs, {len(differ)} differ"]
        lines += [f"  {r.max_abs:>10.3g} abs {r.max_rel:>10.3g} rel  {r.differing:>7} of {r.size:<8} {r.actor}  {r.lbn}"
                  for r in differ[:20]]
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def backend_diff(job_fn: Any, *args: Any, backends: tuple[str, str] = BACKENDS, **kwargs: Any) -> BackendDiff:
    """Run one call of ``job_fn`` on two kernel backends, from the same variables, and compare every output of
    every act (see the module docstring): ``backends`` is ``("reference", "numba")`` or ``("numba", "cuda")``."""
    desc = getattr(job_fn, "__flowlab_function_desc__", None)
    if desc is None:
        raise TypeError(f"flow.debug.backend_diff takes a @flow.global_function job; got {job_fn!r}")
    backends = tuple(backends)  # type: ignore[assignment]
    if backends not in PAIRS:
        raise ValueError(f"flow.debug.backend_diff: backends is one of {', '.join(map(repr, PAIRS))}; "
                         f"got {backends!r}")
    from ..session import default_session

    session = default_session()
    if session.function_descs.get(desc.job_name) is not desc:
        session.add_job(desc)
    if backends[1] == "cuda":
        return cuda_diff(session, desc, args, kwargs)
    (dbg_a, out_a), (dbg_b, out_b) = (run_outputs(desc, args, kwargs, k) for k in BACKENDS)
    if list(out_a) != list(out_b) or any(len(out_a[k]) != len(out_b[k]) for k in out_a):
        raise FlowlabError("backend_diff: the two runs took different acts; the Plan's schedule should not depend on "
                           "the kernels (please report this)")
    plan = dbg_a.plan
    names = task_labels(plan)
    rows = [output_diff(task_id, names, lbn, arrays, out_b[(task_id, lbn)]) for (task_id, lbn), arrays in out_a.items()]
    tiers = tuple({a["tier"] for a in d.recording().acts if a.get("tier")} for d in (dbg_a, dbg_b))
    return BackendDiff(plan, session.job_set, rows, (dbg_a.result if dbg_a.finished else None,
                                                     dbg_b.result if dbg_b.finished else None),
                       (tiers[0], tiers[1]))


def gpu_twin(desc: Any) -> Any:
    """A new FunctionDesc of the same job function whose default placement is GPU 0, untraced."""
    from ..frontend.function_config import FunctionConfig
    from ..scope import placement

    config = FunctionConfig()
    config._values.update(desc.config.values)
    config.default_placement_scope(placement("gpu", "0:0"))
    return dataclasses.replace(desc, config=config, return_structure=None, return_op_names=(), input_op_names=(),
                               watches=[], launch_names=(), session_ref=None)


def by_lbn(plan: Any, job_name: str, outputs: dict[tuple[int, str], list[np.ndarray]]
           ) -> dict[str, tuple[int, list[np.ndarray]]]:
    """The outputs of ``job_name``'s own tasks other than copies, by lbn: (task id, arrays in act order)."""
    tasks = {t.task_id: t for t in plan.tasks}
    return {lbn: (task_id, arrays) for (task_id, lbn), arrays in outputs.items()
            if plan.job_names[tasks[task_id].job_id] == job_name and tasks[task_id].task_type != "CopyHd"}


def cuda_diff(session: Any, desc: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> BackendDiff:
    """Numba's CPU kernels on ``session``'s Plan against the CUDA kernels on the job's GPU Plan, traced again with
    GPU 0 as its default placement in a private Session (the caller's session and its Plan stay as they are). The
    outputs are matched by logical blob name over the job's own tasks: the GPU Plan's CopyHd tasks carry copies
    of blobs that the CPU Plan has no task for, and the push/pull jobs' interface ops are named by session."""
    from ..kernels import cuda_available
    from ..session import Session

    if not cuda_available():
        raise FlowlabError("flow.debug.backend_diff(backends=('numba', 'cuda')) needs CUDA: no GPU was found and "
                           "Numba's CUDA simulator is off (set NUMBA_ENABLE_CUDASIM=1 before Numba is first "
                           "imported to run the CUDA kernels in the simulator)")
    dbg_cpu, out_cpu = run_outputs(desc, args, kwargs, "numba", session)
    twin, gpu_session = gpu_twin(desc), Session()
    try:
        gpu_session.add_job(twin)
        gpu_session.try_init()  # its own initializers run first; then the caller's values overwrite them
        ours = session.variables()
        for name, pieces in gpu_session.variables().items():
            if name in ours:
                pieces.write(ours[name].logical())
        dbg_gpu, out_gpu = run_outputs(twin, args, kwargs, "numba", gpu_session)
        result_gpu = dbg_gpu.result if dbg_gpu.finished else None
        tier_gpu = {a["tier"] for a in dbg_gpu.recording().acts if a.get("tier")}
    finally:
        gpu_session.close()
    cpu, gpu = by_lbn(dbg_cpu.plan, desc.job_name, out_cpu), by_lbn(dbg_gpu.plan, desc.job_name, out_gpu)
    names = task_labels(dbg_cpu.plan)
    rows = []
    for lbn, (task_id, arrays) in cpu.items():
        if lbn not in gpu:  # an op only one Plan has (none today: the user ops are the same in both jobs)
            continue
        other = gpu[lbn][1]
        if len(other) != len(arrays):
            raise FlowlabError(f"backend_diff: {lbn} was written {len(arrays)} times on the CPU Plan and "
                               f"{len(other)} on the GPU Plan; the job's schedule should not depend on the device "
                               "(please report this)")
        rows.append(output_diff(task_id, names, lbn, arrays, other))
    tier_cpu = {a["tier"] for a in dbg_cpu.recording().acts if a.get("tier")}
    return BackendDiff(dbg_cpu.plan, session.job_set, rows, (dbg_cpu.result if dbg_cpu.finished else None,
                                                             result_gpu), (tier_cpu, tier_gpu), ("numba", "cuda"))
