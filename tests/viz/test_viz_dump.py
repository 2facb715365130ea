"""Debug mode writes OneFlow's debug files under ./log/<hostname>/ when a session starts."""

from __future__ import annotations

import socket
import warnings

import flowlab as flow
from flowlab.ir import from_json
from flowlab.viz import dump_debug_files


def _expected_files(n_jobs: int) -> set[str]:
    files = {
        "job_set.txt",
        "job_set.json",
        "merged_plan.txt",
        "merged_plan.json",
        "critical_section_desc.txt",
        "dot/merged_plan.dot",
        "passes.txt",
    }
    files |= {f"optimized_job{i}.txt" for i in range(n_jobs)}
    files |= {f"dot/optimized_job{i}.dot" for i in range(n_jobs)}
    return files


def test_debug_mode_dumps_every_file(tmp_path, monkeypatch, run_pad):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWLAB_DEBUG_MODE", raising=False)
    flow.clear_default_session()
    flow.config.enable_debug_mode(True)
    try:
        session = run_pad()
        log_dir = tmp_path / "log" / socket.gethostname()
        written = {str(p.relative_to(log_dir)) for p in log_dir.rglob("*") if p.is_file()}
        job_set, plan = session.job_set, session.plan
        assert written == _expected_files(len(job_set.jobs))
        assert (log_dir / "job_set.txt").read_text() == str(job_set) + "\n"
        for job_id, job in enumerate(job_set.jobs):
            assert (log_dir / f"optimized_job{job_id}.txt").read_text() == str(job) + "\n"
            assert (log_dir / f"dot/optimized_job{job_id}.dot").read_text().startswith("digraph job {")
        assert (log_dir / "merged_plan.txt").read_text() == str(plan) + "\n"
        assert (log_dir / "dot/merged_plan.dot").read_text().startswith("digraph merged_plan {")
        assert from_json((log_dir / "job_set.json").read_text()) == job_set
        assert from_json((log_dir / "merged_plan.json").read_text()) == plan
        cs = (log_dir / "critical_section_desc.txt").read_text()
        assert "cs 0: job 0 pad_Job total_job" in cs and "job_id2critical_section_ids:" in cs
    finally:
        flow.config.enable_debug_mode(False)
        flow.clear_default_session()


def test_env_var_enables_the_dump(tmp_path, monkeypatch, run_pad):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOWLAB_DEBUG_MODE", "1")
    flow.clear_default_session()
    try:
        run_pad()
        assert (tmp_path / "log" / socket.gethostname() / "dot" / "merged_plan.dot").is_file()
    finally:
        flow.clear_default_session()


def test_no_dump_without_debug_mode(tmp_path, monkeypatch, run_pad):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWLAB_DEBUG_MODE", raising=False)
    run_pad()
    assert not (tmp_path / "log").exists()


def test_root_overrides_and_unwritable_root_warns(tmp_path, pad_session):
    out = dump_debug_files(pad_session, root=tmp_path / "here")
    assert out == (tmp_path / "here").resolve()
    assert (out / "merged_plan.txt").is_file() and (out / "dot" / "merged_plan.dot").is_file()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dump_debug_files(pad_session, root=blocker / "sub")
    assert any("could not write" in str(w.message) for w in caught)
