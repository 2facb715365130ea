"""A multi-device Plan's task detail carries its op's SBP explanation (issue 24: "Explain SBP opens from an op in the
view"): the candidates with their order value and cost in bytes, what the order value is, the chosen one, and the
boxing tasks its choice caused as task ids the detail pane links."""

from __future__ import annotations

from flowlab.debug.sbp import explain_sbp
from flowlab.viz.payload import plan_payload
from tests.helpers.dp_train import _dp_train


def _sbp_rows(payload: dict, node: dict) -> dict[str, str]:
    (sec,) = [s for s in payload["graph"]["details"][node["detail"]]["sections"] if s["title"] == "sbp"]
    return dict(map(tuple, sec["rows"]))


def test_an_optimizer_task_explains_its_sbp_and_links_the_boxing_tasks_it_caused():
    session = _dp_train()
    plan, job = session.plan, session.job_set.job("dp")
    payload = plan_payload(plan, session.job_set)
    nodes = {n["id"]: n for n in payload["graph"]["nodes"]}
    opt = [n for n in nodes.values() if n["label"].startswith("fc1-weight_optimizer")]
    assert len(opt) == 2  # one task per device, each with the op's explanation
    rows = _sbp_rows(payload, opt[0])
    why = explain_sbp(job, "fc1-weight_optimizer").to_dict()
    assert rows["chosen"] == ", ".join(f"{bn}: {s}" for bn, s in why["chosen"].items())
    candidates = [v for k, v in rows.items() if k.startswith("candidate ")]
    assert len(candidates) == len(why["candidates"]) and sum("(chosen)" in c for c in candidates) == 1
    assert all(" B" in c or "infinite" in c for c in candidates)  # costs in bytes, never a raw 2147483647
    assert not any("2147483647" in c or "9223372036854775807" in c for c in candidates)
    assert "order value" in rows["how chosen"].lower()
    linked = [i.strip() for i in rows["boxing tasks"].split(",")]
    assert all(nodes[i]["kind"] == "task" and "boxing" in nodes[i]["classes"] for i in linked)
    # independent of the payload: walk the Plan backwards from the optimizer's tasks through boxing tasks only
    by_id = {t.task_id: t for t in plan.tasks}
    producer = {r.regst_desc_id: r.producer_task_id for t in plan.tasks for r in t.produced_regst_desc.values()}
    found, todo = set(), [t for t in plan.tasks if t.name.startswith("fc1-weight_optimizer")]
    while todo:
        for ids in todo.pop().consumed_regst_desc_id.values():
            for rid in ids:
                up = by_id[producer[rid]]
                if up.is_boxing and up.task_id not in found:
                    found.add(up.task_id)
                    todo.append(up)
    assert sorted(linked) == sorted(f"t:{t}" for t in found) and len(found) == 6  # P->B: 2 add + 2 copy; lr: 2 copy
    matmul = next(n for n in nodes.values() if n["label"] == "fc1-matmul")
    assert _sbp_rows(payload, matmul)["boxing tasks"] == "none"  # S(0) x B: data parallel needs no boxing
