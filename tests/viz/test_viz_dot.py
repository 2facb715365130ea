"""to_dot for a Job (golden text), a JobSet and a Plan."""

from __future__ import annotations

import re

import pytest

from flowlab.ir import JobSet
from flowlab.viz import job_set_to_dot, plan_to_dot, to_dot
from flowlab.viz.dotsyntax import IdAllocator, quote, safe_ident, svg_id

GOLDEN_SMALL_JOB = r"""digraph job {
  graph [id="job/pad_job", label="job pad_job (user, predict)", labelloc="t", rankdir="TB", fontname="Helvetica", fontsize="11"];
  node [shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10"];
  edge [fontname="Helvetica", fontsize="9"];
  op_Input_0 [id="op/pad_job/Input_0", class="op user", label="Input_0\ninput", tooltip="Input_0\ntype: input\ncreated by: user\nplacement: cpu:0:0\nat: pad.py:9", fillcolor="#cfe2ff"];
  op_pad [id="op/pad_job/pad", class="op user", label="pad\nreflection_pad2d", tooltip="pad\ntype: reflection_pad2d\ncreated by: user\nplacement: cpu:0:0\nattrs: padding=[1,1,1,1]\nat: pad.py:10", fillcolor="#cfe2ff"];
  op_Return_0 [id="op/pad_job/Return_0", class="op user", label="Return_0\nreturn", tooltip="Return_0\ntype: return\ncreated by: user\nplacement: cpu:0:0", fillcolor="#cfe2ff"];
  op_System_SinkTick_d41a86ad [id="op/pad_job/System-SinkTick", class="op system", label="System-SinkTick\nsink_tick", tooltip="System-SinkTick\ntype: sink_tick\ncreated by: AutoSinkTick\nplacement: cpu:0:0", fillcolor="#e9ecef"];
  op_Input_0 -> op_pad [id="blob/pad_job/Input_0%2Fout/pad", class="data", label="f32[2,1,3,3]", tooltip="Input_0/out -> pad.x_0\nf32[2,1,3,3]"];
  op_pad -> op_Return_0 [id="blob/pad_job/pad%2Fy_0/Return_0", class="data", label="f32[2,1,5,5]", tooltip="pad/y_0 -> Return_0.in_0\nf32[2,1,5,5]"];
  op_Return_0 -> op_System_SinkTick_d41a86ad [id="ctrl/pad_job/Return_0/System-SinkTick", class="ctrl", style="dashed", color="#6c757d", tooltip="ctrl: Return_0 -> System-SinkTick"];
}
"""  # noqa: E501


def test_small_job_golden(small_job):
    assert to_dot(small_job) == GOLDEN_SMALL_JOB


def test_job_dot_is_deterministic_and_takes_options(small_job):
    assert to_dot(small_job) == to_dot(small_job)
    lr = to_dot(small_job, rankdir="LR", id_prefix="cell3-", title="mine")
    assert 'rankdir="LR"' in lr and 'label="mine"' in lr
    assert 'id="cell3-op/pad_job/pad"' in lr
    with pytest.raises(TypeError, match="did you mean 'rankdir'"):
        to_dot(small_job, rankdr="LR")
    with pytest.raises(ValueError, match="rankdir"):
        to_dot(small_job, rankdir='TB"];evil')
    with pytest.raises(TypeError, match="Job, JobSet or Plan"):
        to_dot("digraph {}")


def test_job_dot_draws_missing_producers_dotted(small_job):
    job = small_job.replace(ops=small_job.ops[1:])  # drop Input_0: pad's input has no producer in the job
    dot = to_dot(job)
    assert re.search(r'op_Input_0 \[id="external/pad_job/Input_0".*style="dotted"', dot)
    assert "op_Input_0 -> op_pad" in dot


def test_job_set_one_cluster_per_job_and_shared_links(pad_session):
    job_set = pad_session.job_set
    dot = to_dot(job_set)
    for job_id, job in enumerate(job_set.jobs):
        assert f"subgraph cluster_job{job_id} {{" in dot
        assert f'id="{svg_id("job", job.name)}"' in dot
        for op in job.ops:
            assert f'id="{svg_id("op", job.name, op.name)}"' in dot
    assert dot.count("subgraph cluster_") == len(job_set.jobs)
    # Input_0 is shared by the user job and its push job: one dotted, non-constraining link
    assert re.search(r'j0_op_Input_0 -> j1_op_Input_0 \[id="shared/Input_0/pad_Job/System-Push-Input_0"', dot)
    assert "shared/" not in job_set_to_dot(job_set, show_shared=False)


def test_job_set_user_and_system_ops_styled_apart(pad_session):
    dot = to_dot(pad_session.job_set)
    assert re.search(r'j0_op_reflection_pad2d_0 \[[^\n]*class="op user"[^\n]*fillcolor="#cfe2ff"', dot)
    assert re.search(r'j0_op_System_AutoTick_SourceTick_\w+ \[[^\n]*class="op system"[^\n]*fillcolor="#e9ecef"', dot)


def test_plan_dot_clusters_tasks_and_edges(pad_session):
    plan = pad_session.plan
    dot = to_dot(plan)
    assert dot.startswith("digraph merged_plan {")
    # one cluster per job, with (machine, thread) clusters inside
    for job_id, name in enumerate(plan.job_names):
        assert f"subgraph cluster_job{job_id} {{" in dot
        assert f'label="job {job_id} {name} ({plan.job_kinds[job_id]})"' in dot
        for task in plan.tasks_of_job(job_id):
            assert f"subgraph cluster_job{job_id}_m{task.machine_id}_t{task.thrd_id} {{" in dot
    # every task, with its id, label and tooltip type/id/machine:thread
    for task in plan.tasks:
        line = next(ln for ln in dot.splitlines() if ln.strip().startswith(f"task{task.task_id} ["))
        assert f'id="task/{task.task_id}"' in line
        assert f'label="{task.name}\\n{task.task_type}"' in line
        assert f'tooltip="{task.task_type}  {task.task_id}-{task.machine_id}:{task.thrd_id}:' in line
        assert f'fillcolor="{task.job_id % 12 + 1}"' in line
    # one edge per (regst, consumer): ctrl regsts dashed, data regsts solid
    edges = [ln for ln in dot.splitlines() if " -> " in ln]
    pairs = [(r, c) for t in plan.tasks for r in t.produced_regst_desc.values() for c in r.consumer_task_ids]
    assert len(edges) == len(pairs)
    n_ctrl = sum(1 for r, _ in pairs if r.is_ctrl)
    assert n_ctrl > 0
    ctrl_edges = [ln for ln in edges if 'class="regst ctrl"' in ln]
    assert len(ctrl_edges) == n_ctrl
    assert all('style="dashed"' in ln for ln in ctrl_edges)
    assert all('style="solid"' in ln for ln in edges if 'class="regst data"' in ln)
    for regst, consumer in pairs:
        assert f'id="regst/{regst.regst_desc_id}/{consumer}"' in dot
        assert f'xlabel="regst:{regst.regst_desc_id}:{regst.register_num}"' in dot
    # OneFlow draws the Esac -> ReentrantLock edge reversed, so the main job's loop reads top-down
    esac, lock = plan.task("System-Main-Esac_0"), plan.task("System-Main-ReentrantLock_0")
    assert re.search(rf'task{lock.task_id} -> task{esac.task_id} \[[^\n]*dir="back"', dot)


def test_plan_dot_options(pad_session):
    plan = pad_session.plan
    flat = plan_to_dot(plan, thread_clusters=False, edge_labels=False)
    assert "_m0_t" not in flat and "xlabel=" not in flat
    assert flat.count("subgraph cluster_") == len(plan.job_names)


def test_quote_escapes_for_dot_and_graphviz_entities():
    assert quote('a<b&"c') == r'"a<b&amp;\"c"'
    assert quote("x\\y") == r'"x\\y"'
    assert quote("ends\\") == r'"ends\\"'
    assert quote("two\nlines\r\n") == r'"two\nlines\n"'
    assert quote("bell\x07") == r'"bell\\x07"'
    assert quote("lone\ud800") == r'"lone\\ud800"'


def test_node_ids_are_safe_stable_and_distinct():
    assert safe_ident("op_", "relu_1") == "op_relu_1"
    ident = safe_ident("op_", 'a<b&"c')
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident)
    assert ident == safe_ident("op_", 'a<b&"c')
    assert safe_ident("op_", "a-b") != safe_ident("op_", "a.b")
    alloc = IdAllocator("op_")
    assert alloc("node") == "op_node" and alloc("node") == "op_node"  # DOT keywords are prefixed, never bare
    assert svg_id("op", "j/1", 'a<b&"c') == "op/j%2F1/a%3Cb%26%22c"


def test_empty_job_set():
    assert to_dot(JobSet(())) == (
        "digraph job_set {\n"
        '  graph [rankdir="TB", fontname="Helvetica", fontsize="11"];\n'
        '  node [shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10"];\n'
        '  edge [fontname="Helvetica", fontsize="9"];\n'
        "}\n"
    )
