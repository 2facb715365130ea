"""show_diff / flow.debug.compare: the compare payload's marks, pairs and lists, against hand-listed differences."""

from __future__ import annotations

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.debug.job_diff import diff_jobs
from flowlab.ir import BlobDesc, Job, OpConf
from flowlab.ir import dtype as dtypes
from flowlab.notebook.compare import COMPARE_MIME, show_diff, show_pass
from flowlab.viz.payload import plan_payload
from flowlab.viz.payload_pack import unpack


def _session(layers: int = 2, activation: str = "relu", reuse: bool = True):
    flow.clear_default_session()
    config = flow.FunctionConfig()
    config.enable_reuse_mem(reuse)

    @flow.global_function(function_config=config)
    def mlp(x: tp.Numpy.Placeholder((2, 4))) -> tp.Numpy:
        h = x
        for i in range(layers):
            h = flow.layers.dense(h, 3, activation=getattr(flow.nn, activation) if i == 0 else None, name=f"fc{i + 1}")
        return h

    mlp(np.zeros((2, 4), np.float32))
    return flow.default_session()


def _by_class(pane: dict, cls: str) -> set[str]:
    return {n["label"] for n in pane["graph"]["nodes"] if cls in n["classes"]}


def _task_id(plan, op: str) -> str:
    return f"t:{next(t.task_id for t in plan.tasks if t.name == op and plan.job_names[t.job_id] == 'mlp')}"


def test_a_changed_activation_is_changed_on_both_panes_and_everything_else_pairs():
    a, b = _session().plan, _session(activation="sigmoid").plan
    p = show_diff(a, b).payload
    assert p["kind"] == "compare" and p["counts"] == {"added": 0, "removed": 0, "changed": 1}
    assert _by_class(p["a"], "changed") == _by_class(p["b"], "changed") == {"fc1-activation"}
    assert not _by_class(p["a"], "added") | _by_class(p["b"], "added") | _by_class(p["a"], "removed")
    (item,) = p["items"]
    assert item == {"what": "task", "status": "changed", "label": "mlp/fc1-activation",
                    "a": _task_id(a, "fc1-activation"), "b": _task_id(b, "fc1-activation"),
                    "summary": "mlp/fc1-activation: op_type: relu -> sigmoid"}
    # the same program otherwise: every task is paired with the task of the same name
    assert len(p["pairs"]) >= len(a.tasks) == len(b.tasks)
    assert [_task_id(a, "fc2-matmul"), _task_id(b, "fc2-matmul")] in p["pairs"]


def test_a_third_layer_is_added_on_the_right_only():
    a, b = _session(layers=2).plan, _session(layers=3).plan
    p = show_diff(a, b, labels=("2 layers", "3 layers")).payload
    # flow.layers.dense(name="fc3") makes a weight and a bias variable, a matmul and a bias_add (hand-listed)
    added = {"fc3-weight", "fc3-bias", "fc3-matmul", "fc3-bias_add"}
    assert _by_class(p["b"], "added") >= added
    assert not _by_class(p["a"], "added") and not _by_class(p["b"], "removed")
    assert {i["label"].split("/")[-1] for i in p["items"] if i["status"] == "added" and i["what"] == "task"} >= added
    assert all(i["a"] is None and i["b"] for i in p["items"] if i["status"] == "added")
    assert p["labels"] == ["2 layers", "3 layers"] and "2 layers / 3 layers" in p["title"]


def test_register_marks_stay_on_the_producers_box():
    """Reuse off moves 5 registers out of the shared block: only registers and blocks change, so without a mark on
    the producer's box (edges are bundled when groups collapse) the view would show nothing."""
    a, b = _session().plan, _session(reuse=False).plan
    d = flow.debug.diff(a, b)
    moved = [int(k[2:]) for k in d.marks_b if k.startswith("r:")]
    assert len(moved) == 5
    payload = plan_payload(b, marks=d.marks_b)
    marked = {n["id"] for n in payload["graph"]["nodes"] if "out-changed" in n["classes"]}
    assert marked == {f"t:{b.regst_descs[r].producer_task_id}" for r in moved}


def test_the_autograd_pass_before_and_after():
    flow.clear_default_session()

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((2, 4)), y: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        logits = flow.layers.dense(x, 3, name="fc")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits, name="loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1])).minimize(loss)
        return loss

    train(np.zeros((2, 4), np.float32), np.zeros((2,), np.int32))
    session = flow.default_session()
    view = show_pass(session, "GenerateBackwardAndOptimizerOpConfs")
    p = view.payload
    record = next(r for r in session.passes if r.name == "GenerateBackwardAndOptimizerOpConfs")
    assert record.added and not record.removed
    assert _by_class(p["b"], "added") == set(record.added) and not _by_class(p["a"], "added")
    assert p["labels"] == ["before GenerateBackwardAndOptimizerOpConfs", "after GenerateBackwardAndOptimizerOpConfs"]
    # the forward ops are on both sides and linked
    ids_a = {n["label"]: n["id"] for n in p["a"]["graph"]["nodes"]}
    ids_b = {n["label"]: n["id"] for n in p["b"]["graph"]["nodes"]}
    assert [ids_a["fc-matmul"], ids_b["fc-matmul"]] in p["pairs"]
    bundle = view._repr_mimebundle_()
    assert unpack(bundle[COMPARE_MIME])["kind"] == "compare" and "ops:" in bundle["text/plain"]
    with pytest.raises(KeyError, match="no pass 'autograd'.*GenerateBackwardAndOptimizerOpConfs"):
        show_pass(session, "autograd")


def _job(ops: list[OpConf]) -> Job:
    f32 = dtypes.float32
    descs = {lbn: BlobDesc((2, 3), f32) for op in ops for lbn in op.output_lbns}
    return Job("j", "user", tuple(ops), descs)


def test_hand_built_jobs():
    x = OpConf("x", "input", outputs={"out": ("x/out",)})
    relu = OpConf("act", "relu", inputs={"x": ("x/out",)}, outputs={"y": ("act/y_0",)})
    gone = OpConf("gone", "identity", inputs={"in": ("x/out",)}, outputs={"out": ("gone/out_0",)})
    new = OpConf("new", "identity", inputs={"in": ("x/out",)}, outputs={"out": ("new/out_0",)})
    a, b = _job([x, relu, gone]), _job([x, relu.replace(op_type="sigmoid"), new])
    d = diff_jobs(a, b)
    assert [(c.op, c.status) for c in d.changes] == [("act", "changed"), ("gone", "removed"), ("new", "added")]
    assert d.changes[0].fields == {"op_type": ("relu", "sigmoid")}
    assert d.pairs == (("j", "j", "x"), ("j", "j", "act"))
    p = flow.debug.compare(a, b).payload
    assert p["pairs"] == [["o:0:0", "o:0:0"], ["o:0:1", "o:0:1"]]
    assert _by_class(p["a"], "removed") == {"gone"} and _by_class(p["b"], "added") == {"new"}
    assert _by_class(p["a"], "changed") == _by_class(p["b"], "changed") == {"act"}
    with pytest.raises(TypeError, match="compares two Plans"):
        show_diff(a, 3)


def test_an_html_export_keeps_the_compare_payload():
    from flowlab.notebook.export import flowlab_payloads

    a, b = _session().plan, _session(activation="sigmoid").plan
    bundle = show_diff(a, b)._repr_mimebundle_()
    (payload,) = flowlab_payloads(bundle)
    assert unpack(payload)["kind"] == "compare"


def test_a_flowjob_result_compares_itself():
    from flowlab.notebook.result import FlowjobResult

    a, b = _session(), _session(activation="sigmoid")
    res_a = FlowjobResult(a)
    p = res_a.compare(b).payload
    assert p["counts"] == {"added": 0, "removed": 0, "changed": 1}
    q = res_a.compare(pass_name="AutoSourceTick", job="mlp").payload
    assert q["labels"] == ["before AutoSourceTick", "after AutoSourceTick"] and q["counts"]["added"] >= 1


def test_flow_debug_compare_is_a_value_that_needs_no_notebook():
    """flow.debug.compare returns the diff itself (debug/comparison.py): it prints as text and is the compare
    output, and neither IPython nor flowlab.notebook is imported to make it (a script or a test can use it)."""
    import subprocess
    import sys

    code = """
import sys
import flowlab as flow
from flowlab.ir import BlobDesc, Job, OpConf, dtype
x = OpConf("x", "input", outputs={"out": ("x/out",)})
relu = OpConf("act", "relu", inputs={"x": ("x/out",)}, outputs={"y": ("act/y_0",)})
descs = {"x/out": BlobDesc((2, 3), dtype.float32), "act/y_0": BlobDesc((2, 3), dtype.float32)}
a = Job("j", "user", (x, relu), descs)
b = Job("j", "user", (x, relu.replace(op_type="sigmoid")), descs)
c = flow.debug.compare(a, b)
print(type(c).__name__, sorted(c._repr_mimebundle_()), c.payload["counts"])
print(c)
print("notebook" if "flowlab.notebook" in sys.modules or "IPython" in sys.modules else "no notebook")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == ("Comparison ['application/vnd.flowlab.compare+json', 'text/plain'] "
                                   "{'added': 0, 'removed': 0, 'changed': 1}")
    assert "act" in out and "relu -> sigmoid" in out and out.splitlines()[-1] == "no notebook"
