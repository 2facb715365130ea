"""The debugger findings of the newcomer evaluation (issue 10): NaN stops name the producer, NaN-aware stats,
``np.asarray(dbg.blob(...))``, unwritten registers, every breakpoint kind listed and removed, recording, memory."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp

X = np.arange(18, dtype=np.float32).reshape(2, 1, 3, 3)
PADDED = np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")


@pytest.fixture
def pad_job():
    @flow.global_function()
    def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
        return flow.reflection_pad2d(x, padding=1)

    return pad_Job


def _poisoned(value: float) -> np.ndarray:
    poisoned = X.copy()
    poisoned[1, 0, 1, 1] = value  # the centre of sample 1 appears 9 times in the padded output
    return poisoned


@pytest.mark.parametrize("kind, value", [("nan", np.nan), ("inf", np.inf)])
def test_a_nan_or_inf_stop_names_the_producing_op_and_register(pad_job, kind, value):
    dbg = flow.debug(pad_job, X)
    bp = dbg.break_on(**{kind: True})
    dbg.run_to("pad_Job/reflection_pad2d_0")
    dbg.inject("Input_0/out", _poisoned(value))
    stop = dbg.continue_()
    pad_regst = dbg.plan.task("reflection_pad2d_0").produced_regst_desc["out"].regst_desc_id
    assert stop.breakpoint is bp and (stop.op, stop.actor) == ("reflection_pad2d_0", "pad_Job/reflection_pad2d_0")
    assert (stop.lbn, stop.regst) == ("reflection_pad2d_0/y_0", pad_regst)
    assert stop.next_actor == "pad_Job/Return_0"  # the next actor is reported as next, not as the culprit
    assert (stop.blob.nan_count, stop.blob.inf_count) == ((9, 0) if kind == "nan" else (0, 9))
    text = str(stop)
    assert f"pad_Job/reflection_pad2d_0 (act #{stop.event.seq}) wrote reflection_pad2d_0/y_0 (r{pad_regst})" in text
    state = stop.to_dict()
    assert state["op"] == "reflection_pad2d_0" and state["regst"] == f"r:{pad_regst}" and state[kind] == 9
    assert state["node"] == f"t:{dbg.plan.task('reflection_pad2d_0').task_id}"


def test_stats_of_a_blob_with_nan_are_over_its_finite_values(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.run_to("pad_Job/reflection_pad2d_0")
    dbg.inject("Input_0/out", _poisoned(np.nan))
    dbg.step()
    stats = dbg.blob("reflection_pad2d_0/y_0")
    finite = PADDED[~np.isnan(np.pad(_poisoned(np.nan), ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))]
    assert (stats.nan_count, stats.inf_count, stats.finite_count) == (9, 0, 41) and finite.size == 41
    assert (stats.min, stats.max) == (float(finite.min()), float(finite.max()))
    assert stats.mean == pytest.approx(float(finite.mean())) and stats.std == pytest.approx(float(finite.std()))
    edges, counts = stats.histogram
    assert sum(counts) == 41 and edges[0] == finite.min() and edges[-1] == finite.max()
    assert "(of the 41 finite values); nan 9 inf 0" in str(stats)
    d = stats.to_dict()
    assert d["stats"]["nan"] == 9 and d["stats"]["min"] == 0.0 and d["values"][:6] == [4.0, 3.0, 4.0, 5.0, 4.0, 1.0]
    assert len(d["values"]) == 50 and d["values"].count("NaN") == 9  # JSON has no NaN: sent as "NaN"


def test_all_nan_blob_has_counts_and_no_stats(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.run_to("pad_Job/reflection_pad2d_0")
    dbg.inject("Input_0/out", np.full_like(X, np.nan))
    stats = dbg.blob("Input_0/out")
    assert stats.nan_count == 18 and stats.min is None and "no finite values: nan 18 inf 0" in str(stats)


def test_blob_is_an_array_of_the_live_register(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.run_to("pad_Job/reflection_pad2d_0")
    blob = dbg.blob("reflection_pad2d_0/y_0")
    live = np.asarray(blob)
    assert live.shape == (2, 1, 5, 5) and live.dtype == np.float32
    dbg.step()
    np.testing.assert_array_equal(live, PADDED)  # a view: the act wrote through it
    np.testing.assert_array_equal(np.asarray(dbg.blob("Input_0/out")), X)
    assert dbg.value("reflection_pad2d_0/y_0") is not live


def test_a_register_not_yet_written_says_so(pad_job):
    dbg = flow.debug(pad_job, X)
    before = dbg.blob("reflection_pad2d_0/y_0")
    assert not before.written and "not yet written" in str(before) and before.to_dict()["values"] == []
    dbg.run_to("pad_Job/Return_0")
    after = dbg.blob("reflection_pad2d_0/y_0")
    assert after.written and after.min == 0.0 and after.max == 17.0
    assert dbg.blob("Input_0/out").written  # the push job wrote the shared interface block


def test_a_blob_name_typo_suggests_the_name(pad_job):
    dbg = flow.debug(pad_job, X)
    with pytest.raises(KeyError, match="no blob 'Input_0/y_0'; did you mean Input_0/out"):
        dbg.blob("Input_0/y_0")


def test_every_breakpoint_kind_is_set_listed_and_removed(pad_job):
    dbg = flow.debug(pad_job, X)
    def too_big(a):
        return a.max() > 100

    made = [dbg.break_on(nan=True), dbg.break_on(inf=True, blob="reflection_pad2d_0/y_0"),
            dbg.break_on(predicate=too_big), dbg.break_on(op="Return_0"), dbg.break_on(job="System-Pull-Return_0"),
            dbg.break_on(blob="Return_0/out"), dbg.break_on(actor="pad_Job/Return_0")]
    assert str(dbg.breakpoints) == (
        "breakpoint 1 [nan]: after an act writes a NaN into any produced blob\n"
        "breakpoint 2 [inf]: after an act writes an Inf into blob reflection_pad2d_0/y_0\n"
        "breakpoint 3 [predicate]: after an act writes any produced blob and too_big(values) is true\n"
        "breakpoint 4 [op]: before op Return_0 acts\n"
        "breakpoint 5 [job]: before job System-Pull-Return_0 acts\n"
        "breakpoint 6 [blob]: after the act that writes blob Return_0/out\n"
        "breakpoint 7 [actor]: before actor pad_Job/Return_0 acts")
    assert [bp.to_dict()["kind"] for bp in dbg.breakpoints] == ["nan", "inf", "predicate", "op", "job", "blob",
                                                                "actor"]
    assert dbg.remove_breakpoint(4) is made[3]
    dbg.remove_breakpoint(made[6])
    assert [bp.id for bp in dbg.breakpoints] == [1, 2, 3, 5, 6]
    with pytest.raises(KeyError, match=r"no breakpoint 4; the breakpoints are \[1, 2, 3, 5, 6\]"):
        dbg.remove_breakpoint(4)
    stop = dbg.continue_()  # the blob breakpoint: after pad_Job's Return_0 wrote Return_0/out
    assert stop.breakpoint is made[5] and stop.actor == "pad_Job/Return_0" and stop.lbn == "Return_0/out"
    stop = dbg.continue_()  # then the pull job is about to begin
    assert stop.breakpoint is made[4] and stop.next_actor == "System-Pull-Return_0/Return_0"
    stop = dbg.continue_()  # its Return_0 writes the same lbn (the shared interface block)
    assert stop.breakpoint is made[5] and stop.actor == "System-Pull-Return_0/Return_0"
    dbg.clear_breakpoints()
    assert str(dbg.breakpoints) == "no breakpoints"
    assert dbg.continue_().reason == "finished"
    np.testing.assert_array_equal(dbg.result, PADDED)


def test_run_to_reports_reaching_its_target_and_steps_count(pad_job):
    dbg = flow.debug(pad_job, X)
    stop = dbg.run_to("pad_Job/reflection_pad2d_0")
    assert stop.reason == "reached" and str(stop) == f"reached pad_Job/reflection_pad2d_0 after {dbg.acts} acts"
    assert dbg.breakpoints == []  # run_to's own breakpoint is gone
    stop = dbg.step_n(2)
    assert str(stop).startswith("steps after 2 acts; last: #") and stop.steps == 2


def test_finished_run_has_no_next_actor_in_the_table(pad_job):
    dbg = flow.debug(pad_job, X)
    dbg.continue_()
    assert not any(row.name.endswith("<- next") for row in dbg.actors())
