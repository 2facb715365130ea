"""The views of a 2-device job: boxing tasks are marked (class "boxing", their kind in the detail pane), every op
of a multi-device job shows its SBP signature and explain_sbp's reasoning, and tasks carry their device lane."""

from __future__ import annotations

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from flowlab.debug.sbp import explain_sbp
from flowlab.viz.payload import jobset_payload, plan_payload
from tests.helpers.dp_train import _dp_train


def _job():
    flow.clear_default_session()
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def view_job(x: tp.Numpy.Placeholder((6, 4))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            a = flow.identity(x.with_distribute(flow.distribute.split(0)), name="src")
            return flow.identity(a.with_distribute(flow.distribute.broadcast()), name="dst")

    view_job(np.ones((6, 4), np.float32))
    return flow.default_session()


def _sections(payload, node):
    detail = payload["graph"]["details"][node["detail"]]
    return {s["title"]: dict(map(tuple, s["rows"])) for s in detail["sections"]}


def test_boxing_tasks_are_marked_with_their_kind_and_tasks_carry_their_device_lane():
    session = _job()
    payload = plan_payload(session.plan, session.job_set)
    nodes = [n for n in payload["graph"]["nodes"] if n["kind"] == "task"]
    boxing = [n for n in nodes if n["label"].startswith("System-Boxing-")]
    assert boxing and all("boxing" in n["classes"] for n in boxing)
    assert not any("boxing" in n["classes"] for n in nodes if n not in boxing)
    rows = _sections(payload, boxing[0])["boxing"]
    assert rows["kind"] == "slice_boxing_copy" and rows["blob"] == "src/out_0"
    by_id = {n["id"]: n for n in nodes}
    lanes = {by_id[f"t:{t.task_id}"]["device"] for t in session.plan.tasks if t.name.startswith("dst")}
    assert lanes == {"cpu:0", "cpu:1"}


def test_ops_of_a_two_device_job_show_their_sbp_signature_and_why():
    session = _job()
    job = session.job_set.job("view_job")
    payload = jobset_payload(session.job_set)
    node = next(n for n in payload["graph"]["nodes"] if n["label"] == "dst" and n["kind"] == "op")
    rows = _sections(payload, node)["sbp"]
    why = explain_sbp(job, "dst").to_dict()
    assert rows["chosen"] == ", ".join(f"{bn}: {s}" for bn, s in why["chosen"].items())
    assert rows["boxing"] == "; ".join(why["boxing"]) and "S(0)" in rows["boxing"]
    candidates = [k for k in rows if k.startswith("candidate ")]
    assert len(candidates) == len(why["candidates"]) > 1
    assert all("order" in rows[k] and "cost" in rows[k] for k in candidates)


def test_boxing_tasks_say_what_they_convert_and_edges_their_sbp():
    # issue 24: a data-parallel weight's gradient is a partial sum on each device (P) that the optimizer takes
    # whole on each (B): OneFlow's all-reduce, here a BoxingAdd (P -> S) and a BoxingCopy (S -> B) per device
    session = _dp_train()
    payload = plan_payload(session.plan, session.job_set)
    nodes = [n for n in payload["graph"]["nodes"] if n["kind"] == "task"]
    notes = {n["label"]: n.get("note") for n in nodes if "boxing" in n["classes"]}
    grad = [name for name, note in notes.items() if note == "fc1-weight grad: P → B over cpu:0-1"]
    assert any("BoxingAdd" in name for name in grad) and any("BoxingCopy" in name for name in grad), notes
    assert "fc1-bias grad: P → B over cpu:0-1" in notes.values()
    # the push job's whole batch on one device is split over both
    assert "System-Push-Input_0-ForeignInput/out: S(0) on cpu:0 → S(0) over cpu:0-1" in notes.values(), notes
    boxing = next(n for n in nodes if notes.get(n["label"], "").startswith("fc1-weight grad"))
    assert _sections(payload, boxing)["boxing"]["converts"] == "fc1-weight grad: P → B over cpu:0-1"
    # every task says its device; edges the SBP beside each device's piece (16 rows split over 2: [8,...])
    assert {n.get("device") for n in nodes} == {"cpu:0", "cpu:1"}
    by_id = {n["id"]: n for n in nodes}
    labels = {(by_id[e["source"]]["label"], e["label"]) for e in payload["graph"]["edges"] if e["source"] in by_id}
    assert ("fc1-matmul", "S(0) f32[8,4]") in labels and ("fc1-weight", "B f32[4,8]") in labels, labels
    assert ("matmul_0", "P f32[4,8]") in labels  # the gradient before boxing
    matmul = next(n for n in nodes if n["label"] == "fc1-matmul")
    assert matmul["sbp"] == "{a_0: S(0), b_0: B, out_0: S(0)}"  # the box's tooltip and detail pane


def test_a_one_device_plan_view_stays_as_it_was():
    session = _dp_train(1)
    payload = plan_payload(session.plan, session.job_set)
    assert not any("device" in n or "note" in n for n in payload["graph"]["nodes"])
    assert not any(e["label"].startswith(("S(", "B ", "P ")) for e in payload["graph"]["edges"])
