"""`make demo`'s program: the seed programs' dumps, the executed quickstart as HTML, a run's HTML record."""

from __future__ import annotations

import html
import subprocess
import sys


def test_demo_writes_every_promised_file(tmp_path):
    result = subprocess.run([sys.executable, "-m", "flowlab.demo"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "all seed programs printed correct results" in result.stdout
    out = tmp_path / "build" / "demo"
    for program in ("pad", "two_jobs", "tuple", "callback"):
        for name in ("job_set.txt", "plan.txt", "job_set.json", "plan.json", "plan.dot", "plan.svg", "passes.txt"):
            assert (out / program / name).is_file(), f"{program}/{name}"
    assert "System-Pull-Return_0" in (out / "two_jobs" / "job_set.txt").read_text()
    quickstart = html.unescape((out / "quickstart.html").read_text())
    assert "plan: 18 tasks, 21 regsts, 10 mem blocks" in quickstart
    assert quickstart.count("jp-RenderedSVG") >= 5  # %%flowjob's, the job set, the Plan and both widgets' SVGs
    assert "unpkg.com" not in quickstart  # no widget state: nothing to fetch, it reads offline
    run = (out / "pad_Job_run.html").read_text()
    assert "<script" not in run and "reflection_pad2d_0" in run and "finished" in run
    assert f"wrote {(out / 'quickstart.html').resolve()}" in result.stdout
