"""Overlays (issue 27 §3): numbers per Plan task / job-view op from recorded calls, checked against the recordings'
own numbers, a hand count of NaNs, the Plan's register sizes and a direct NumPy comparison of two backends' runs."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.debug.overlay import Overlay, overlay_of
from flowlab.kernels import registry
from flowlab.notebook import show_jobset, show_plan
from flowlab.viz.payload import jobset_payload

X = np.array([[4.0, -1.0, 0.0, 2.0], [1.0, -3.0, 0.5, 8.0], [1.0, 2.0, 3.0, 4.0]], np.float32)  # 2 NaN, 1 -inf


@pytest.fixture
def log_job():
    flow.clear_default_session()

    @flow.global_function()
    def log_job(x: tp.Numpy.Placeholder((3, 4))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            return flow.math.relu(flow.math.log(x, name="ln") * 2.0, name="act")

    yield log_job
    flow.clear_default_session()


def node(dbg, op: str) -> str:
    return f"t:{dbg.plan.task(op).task_id}"


def test_time_is_the_median_over_calls_of_each_tasks_recorded_act_durations(log_job):
    runs = [flow.debug(log_job, X) for _ in range(3)]
    for dbg in runs:
        dbg.continue_()
    ov = overlay_of(runs, "time")
    per_call = []
    for dbg in runs:  # the debugger's own timeline, summed per task by hand
        totals: dict[str, float] = {}
        for entry in dbg.timeline():
            totals[f"t:{entry.event.actor_id}"] = totals.get(f"t:{entry.event.actor_id}", 0.0) + entry.duration_s
        per_call.append(totals)
    assert set(ov.values) == set(per_call[0])
    for task, value in ov.values.items():
        assert value == pytest.approx(statistics.median(c[task] for c in per_call) * 1e6, rel=1e-9)
    assert ov.unit == "µs" and ov.scale == "gradient" and "median of 3 calls" in ov.metric
    assert ov.top(1)[0][2] == max(ov.values.values())


def test_nan_and_inf_counts_match_a_hand_count(log_job):
    ov = flow.debug.overlay(log_job, X, metric="nan")
    inf = flow.debug.overlay(log_job, X, metric="inf")
    both = flow.debug.overlay(log_job, X, metric="nonfinite")
    dbg = flow.debug(log_job, X)
    ln, mul, act = node(dbg, "ln"), next(f"t:{t.task_id}" for t in dbg.plan.tasks if t.name.startswith("scalar_mul")), \
        node(dbg, "act")
    # log: two negatives give NaN, the zero -inf; times 2 keeps both; relu(NaN) is NaN, relu(-inf) is 0
    assert (ov.values[ln], inf.values[ln], both.values[ln]) == (2, 1, 3)
    assert (ov.values[mul], inf.values[mul]) == (2, 1)
    assert (ov.values[act], inf.values[act]) == (2, 0)
    assert ov.values[node(dbg, "Input_0")] == 0
    assert ov.thresholds == (1.0,) and ov.bin(0) == 0 and ov.bin(2) == 1  # clean / any NaN at all
    assert "2 NaN" in str(ov) and "ln" in str(ov)


def test_an_overlay_from_catch_nan_is_the_caught_call(log_job):
    with flow.debug.catch_nan() as catcher:
        log_job(np.ones((3, 4), np.float32))
        log_job(X)
    assert catcher.caught and catcher.step == 1
    ov = flow.debug.overlay(catcher, metric="nonfinite")
    assert ov.values[f"t:{catcher.debugger.plan.task('ln').task_id}"] == 3
    assert "caught by catch_nan" in ov.source


def test_bytes_are_the_written_registers_blob_sizes(log_job):
    dbg = flow.debug(log_job, X)
    dbg.continue_()
    ov = flow.debug.overlay(dbg, metric="bytes")
    task = dbg.plan.task("ln")
    (regst,) = task.produced_regst_desc.values()
    acts = sum(1 for e in dbg.timeline() if e.event.actor_id == task.task_id)
    assert ov.values[f"t:{task.task_id}"] == acts * 3 * 4 * 4  # f32[3,4] per act


def test_tier_is_categorical_and_the_job_view_maps_ops(log_job):
    dbg = flow.debug(log_job, X)
    dbg.continue_()
    ov = flow.debug.overlay(dbg, metric="tier", view="jobset")
    assert ov.categories and ov.scale == "categories"
    payload = jobset_payload(flow.default_session().job_set)
    labels = {n["id"]: n["label"] for n in payload["graph"]["nodes"]}
    named = {labels[k]: ov.categories[int(v)] for k, v in ov.values.items()}
    assert named["ln"] == "reference" and named["act"] == "reference"  # a session's first call: the reference
    # the debugger's acts are the protocol's own (act records name their executor: runtime/policy.py)
    executors = flow.debug.overlay(dbg, metric="executor")
    assert set(executors.categories) == {"protocol"} and executors.values


def test_payload_section_has_group_stats_and_checks_the_view(log_job):
    dbg = flow.debug(log_job, X)
    dbg.continue_()
    session = flow.default_session()
    ov = flow.debug.overlay(dbg, metric="nan")
    view = show_plan(session.plan, session.job_set, overlay=ov)
    section = view.payload["overlay"]
    assert section["values"] == dict(ov.values) and section["colors"] == list(ov.colors)
    nodes = {n["id"]: n for n in view.payload["graph"]["nodes"]}
    user_job = nodes[node(dbg, "ln")]["parent"]
    while next(g for g in view.payload["graph"]["groups"] if g["id"] == user_job)["parent"] is not None:
        user_job = next(g for g in view.payload["graph"]["groups"] if g["id"] == user_job)["parent"]
    tasks = [f"t:{t.task_id}" for t in dbg.plan.tasks if dbg.plan.job_names[t.job_id] == "log_job"]
    expect = [ov.values[t] for t in tasks if t in ov.values]
    assert section["groups"][user_job] == {"count": len(expect), "min": min(expect), "max": max(expect),
                                           "median": statistics.median(expect), "sum": sum(expect)}
    with pytest.raises(ValueError, match="show_plan"):
        show_jobset(session.job_set, overlay=ov)
    with pytest.raises(KeyError, match="names 1 nodes"):
        show_plan(session.plan, session.job_set, overlay=Overlay("x", "", {"t:999999": 1.0}))


def test_overlay_validates_its_values():
    with pytest.raises(ValueError, match="finite"):
        Overlay("t", "µs", {"t:1": float("nan")})
    with pytest.raises(ValueError, match="ascending"):
        Overlay("t", "µs", {"t:1": 1.0}, thresholds=(2.0, 1.0))
    ov = Overlay("t", "µs", {"t:1": 1.0, "t:2": 5.0, "t:3": 10.0}, thresholds=(2.0, 8.0))
    assert [ov.bin(v) for v in (1.0, 2.0, 5.0, 8.0, 10.0)] == [0, 1, 1, 2, 2] and len(ov.colors) == 3


def _outputs(job, kernels: str) -> dict[str, np.ndarray]:
    with flow.flags(kernels=kernels):
        dbg = flow.debug(job, X)
        out = {}
        while not dbg.finished:
            event = dbg.step()
            for regst, i in event.written:
                out.update({lbn: a.copy() for lbn, a in dbg.runtime.regsts[regst][i].blobs.items()})
    return out


def test_backend_diff_matches_a_direct_comparison_of_the_two_runs(log_job):
    log_job(X)
    log_job(X)  # the session's calls are on Numba now: the flags, not the session's tier, pick each run's kernels
    bd = flow.debug.backend_diff(log_job, X)
    assert bd.tiers == ({"reference"}, {"numba"})
    ref, nb = _outputs(log_job, "reference"), _outputs(log_job, "numba")
    for row in bd.rows:
        a, b = ref[row.lbn].astype(np.float64), nb[row.lbn].astype(np.float64)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        with np.errstate(invalid="ignore"):  # -inf - -inf where both are -inf (masked by `same`)
            direct = float(np.where(same, 0.0, np.abs(a - b)).max())
        assert row.max_abs == direct, (row, direct)
        assert row.differing == int((~same).sum())
    ov = bd.overlay()
    assert ov.values == {r.node: max(x.max_abs for x in bd.rows if x.node == r.node) for r in bd.rows}


def test_backend_diff_finds_a_kernel_that_differs_by_construction(log_job, monkeypatch):
    key = ("relu", "reference", "cpu")
    original = registry.get_kernel_factory("relu", "reference")

    def off_by_a_quarter(ctx):
        kernel = original(ctx)

        def run(inputs, outputs):
            kernel(inputs, outputs)
            outputs[0] += 0.25
        return run

    monkeypatch.setitem(registry._KERNELS, key, off_by_a_quarter)
    bd = flow.debug.backend_diff(log_job, X)
    worst = max(bd.rows, key=lambda r: r.max_abs)
    assert worst.lbn.startswith("act/") and worst.max_abs == pytest.approx(0.25)
    assert worst.differing == 10  # every value but relu's two NaNs
    jobset = bd.overlay(view="jobset")
    labels = dict(jobset.labels)
    assert labels[jobset.top(1)[0][0]] == "log_job/act"
    assert "act" in str(bd).splitlines()[1]


def test_the_plan_browser_widget_takes_an_overlay_on_its_plan_and_jobs_views(log_job):
    pytest.importorskip("anywidget")
    from flowlab.notebook.widgets import PlanBrowser

    log_job(np.ones((3, 4), np.float32))
    widget = PlanBrowser(flow.default_session(), "jobs")
    ov = flow.debug.overlay(log_job, X, metric="nan", view="jobset")
    widget.set_overlay(ov)
    assert widget.view == "jobs" and widget.payload["overlay"]["values"] == dict(ov.values)
    labels = {n["id"]: n["label"] for n in widget.payload["graph"]["nodes"]}
    assert {labels[k] for k, v in ov.values.items() if v} >= {"ln", "act"}  # the job view's own ids
    widget.set_overlay(flow.debug.overlay(log_job, X, metric="bytes"))
    assert widget.view == "plan" and widget.payload["overlay"]["unit"] == "B"
    widget.set_overlay(None)
    assert "overlay" not in widget.payload and "overlay" not in widget.payload_of("jobs")


def test_the_static_picture_fills_boxes_as_the_live_view_does(log_job):
    from flowlab.viz.payload_overlay import fill_of
    from flowlab.viz.payload_svg import payload_dot

    section = {"scale": "gradient", "colors": ["#000000", "#808080", "#ffffff"], "min": 0.0, "max": 10.0}
    assert [fill_of(section, v) for v in (0, 2.5, 5, 10)] == ["#000000", "#404040", "#808080", "#ffffff"]
    dbg = flow.debug(log_job, X)
    dbg.continue_()
    session = flow.default_session()
    ov = flow.debug.overlay(dbg, metric="nan")
    dot = payload_dot(show_plan(session.plan, session.job_set, overlay=ov).payload)
    ln_line = next(line for line in dot.splitlines() if f'"{node(dbg, "ln")}"' in line)
    assert ov.colors[1] in ln_line  # NaNs: the second bin's colour
