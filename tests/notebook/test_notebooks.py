"""The notebooks in notebooks/ run top to bottom in a real kernel, and show what they promise."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from flowlab.viz.payload_pack import unpack

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
JOBSET, PLAN = "application/vnd.flowlab.jobset+json", "application/vnd.flowlab.plan+json"


def run(name: str, tmp_path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), "commit without outputs"
    assert "widgets" not in nb.metadata, "commit without widget state (GitHub and nbconvert need it absent)"
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def outputs(nb: nbformat.NotebookNode, mime: str) -> list[str]:
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if mime == "stream" and out.get("output_type") == "stream":
                found.append(out["text"])
            elif mime in out.get("data", {}):
                found.append(out["data"][mime])
    return found


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs(name, tmp_path):
    run(name, tmp_path)


def test_quickstart_shows_every_stage(tmp_path):
    nb = run("01_quickstart.ipynb", tmp_path)
    text = "".join(outputs(nb, "stream"))
    assert "%reflection_pad2d_0/y_0 : f32[2,1,5,5] = reflection_pad2d(%Input_0/out)" in text
    assert "AutoSourceTick on pad_Job" in text and "plan: 18 tasks" in text
    assert "next: pad_Job/reflection_pad2d_0" in text and "min 0 max 17" in text and "finished" in text
    assert "reflection_pad2d_0 (NormalForward)" in text and "source: cell [" in text  # browser.describe
    flowjob = next(o for c in nb.cells for o in c.get("outputs", []) if "%%flowjob" in c.source)
    data = flowjob["data"]  # the %%flowjob output: payloads, a bounded picture, text, and the live widget
    assert data[JOBSET]["flowlab_payload"] == 2 and data[PLAN]["summary"]["tasks"] == 18  # stored packed
    assert {"image/svg+xml", "text/plain", "application/vnd.jupyter.widget-view+json"} <= set(data)
    svgs = outputs(nb, "image/svg+xml")
    assert len(svgs) >= 4  # %%flowjob's, the job set, the Plan, the browser's (and the debugger widget's, if any)
    assert "System-Push-Input_0" in svgs[1] and "System-Main-ReentrantLock_0" in svgs[2]
    assert len(outputs(nb, "application/vnd.jupyter.widget-view+json")) == 3
    (recorded,) = outputs(nb, "application/vnd.flowlab.run+json")  # show_run(dbg): the recorded run, widget-free
    recorded = unpack(recorded)
    assert recorded["kind"] == "run" and len(recorded["acts"]) >= 18 and recorded["memory"]["blocks"]


def test_debugger_tour_finds_the_nan_and_fixes_it(tmp_path):
    nb = run("03_debugger_tour.ipynb", tmp_path)
    text = "".join(outputs(nb, "stream"))
    assert "stopped by breakpoint 1 [nan]: after an act writes a NaN into any produced blob" in text
    assert "normalize_Job/broadcast_div_0 (act #" in text and "wrote broadcast_div_0/z_0" in text
    assert "acted: broadcast_div_0" in text and "nan 3 inf 0" in text  # row 1 / its zero scale: 3 NaNs
    assert "(of the 9 finite values)" in text and "(4, 3) float32 3 NaN" in text
    listed, after = text.split("after removing 2:\n")
    assert "breakpoint 2 [inf]: after an act writes an Inf" in listed
    assert after.splitlines()[:3] == [
        "breakpoint 3 [predicate]: after an act writes any produced blob and <lambda>(values) is true",
        "breakpoint 4 [op]: before op Return_0 acts", "breakpoint 5 [blob]: after the act that writes blob "
        "broadcast_div_0/z_0"]
    assert "broadcast_div_0 broadcast_div_0/z_0 NaN: 3" in text  # the widget's stop
    assert "catch_nan: the first Inf at step 4 (call 4 of regression, 0-based): op regression/squared" in text
    assert "weights kept:" in text and "nan" not in text.split("weights kept:")[1].splitlines()[0]
    assert len(outputs(nb, "application/vnd.jupyter.widget-view+json")) == 1
    assert "acts recorded" in text and (tmp_path / "normalize_trace.json").is_file()


def test_memory_notebook_shows_shared_and_reused_blocks(tmp_path):
    nb = run("04_memory.ipynb", tmp_path)
    text = "".join(outputs(nb, "stream"))
    assert "chain_Job              Input_0    -> block 0 offset 0" in text
    assert "System-Push-Input_0    Input_0    -> block 0 offset 0" in text
    assert "zero_pad2d_2 block 2 offset     0" in text and "zero_pad2d_0 block 2 offset     0" in text
    assert "block   mem_case      size B  peak live B  reuse" in text  # the memory table
    assert "zero_pad2d_2 takes zero_pad2d_0's bytes at act" in text
    assert "memory blocks: 3 added, 1 removed, 0 changed" in text  # the plan diff, reuse off
    assert len(outputs(nb, "application/vnd.jupyter.widget-view+json")) == 1


def test_training_notebook_reaches_90_percent(tmp_path):
    nb = run("02_training_mlp.ipynb", tmp_path)
    text = "".join(outputs(nb, "stream"))
    accuracy = float(text.split("test accuracy ")[1].split()[0])
    assert accuracy > 0.9
    assert "GenerateBackwardAndOptimizerOpConfs on train_job: +[" in text
    updates = ["hidden-weight_optimizer", "hidden-bias_optimizer", "output-weight_optimizer", "output-bias_optimizer"]
    assert str(updates) in text
    jobs = unpack(outputs(nb, JOBSET)[0])  # the %%flowjob --no-run output, stored packed
    assert "hidden-weight_optimizer" in [n["label"] for n in jobs["graph"]["nodes"]]
    assert "conf: %hidden-weight_optimizer = momentum_update(%hidden-weight/out" in text and "scale=0.02" in text
