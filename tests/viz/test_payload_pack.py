"""Payload version 2 (viz/payload_pack.py): what a saved notebook stores. Decoded it is the version-1 payload,
every node, edge, group and detail row; it is several times smaller in the .ipynb; it is deterministic."""

from __future__ import annotations

import json

import nbformat
import pytest

from flowlab.viz.payload import jobset_payload, plan_payload, run_payload
from flowlab.viz.payload_pack import pack, stored, unpack
from tests.helpers.synthetic_plan import synthetic_plan


def notebook_bytes(data: dict) -> int:
    """The bytes one display_data output with this mime bundle adds to a notebook as nbformat writes it."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(""))
    empty = len(nbformat.writes(nb).encode())
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data=data)]
    return len(nbformat.writes(nb).encode()) - empty


def every_row(payload: dict) -> set[tuple]:
    """Every fact a view shows, flattened: nodes, groups, edges, lanes and each detail row with where it is."""
    g = payload["graph"]
    out: set[tuple] = {("lane", lane) for lane in g["lanes"]}
    for kind in ("nodes", "groups", "edges"):
        out |= {(kind, json.dumps(item, sort_keys=True)) for item in g[kind]}
    for key, detail in g["details"].items():
        out.add(("detail", key, detail["title"]))
        for k, sec in enumerate(detail["sections"]):
            out |= {("row", key, k, sec["title"], a, b) for a, b in sec["rows"]}
    return out


def test_the_30_layer_job_round_trips_row_for_row_and_is_3x_smaller(deep_mlp_session):
    s = deep_mlp_session
    for payload in (jobset_payload(s.job_set, s.passes), plan_payload(s.plan, s.job_set, passes=s.passes)):
        packed = pack(payload)
        assert (packed["flowlab_payload"], packed["kind"], packed["title"]) == (2, payload["kind"], payload["title"])
        back = unpack(json.loads(json.dumps(packed)))  # as a notebook stores it and reads it back
        assert every_row(back) == every_row(payload) and len(every_row(payload)) > 5000
        assert back == payload  # and nothing else changed either (summary, shared_interfaces)
        before = notebook_bytes({"application/json": payload})
        after = notebook_bytes({"application/json": packed})
        assert before >= 3 * after, (payload["kind"], before, after)
    plan = pack(plan_payload(s.plan, s.job_set, passes=s.passes))
    assert plan["summary"]["tasks"] == 754  # the head stays readable in the .ipynb


def test_a_run_payload_round_trips_with_its_acts_memory_and_nan_strings(pad_session):
    plan = pad_session.plan
    task = plan.tasks[0].task_id
    recording = {"acts": [{"node": task, "actor": "a <b>", "job": "pad_Job", "reads": [], "writes": [],
                           "blobs": {1: {"min": float("nan"), "max": float("inf"), "nan": 3}}, "tier": "numba"}],
                 "memory": {"blocks": [{"id": "b:0", "size": 8, "mem_case": "cpu"}], "lifetimes": []}}
    payload = run_payload(plan, pad_session.job_set, recording, title="run — ünïcode")
    back = unpack(json.loads(json.dumps(pack(payload))))
    assert back == payload and back["acts"][0]["blobs"]["r:1"]["min"] == "NaN"
    assert back["acts"][0]["tier"] == "numba"  # the kernel tier the run view shows


def test_packing_is_deterministic_and_idempotent(pad_session):
    payload = plan_payload(pad_session.plan, pad_session.job_set)
    assert pack(payload) == pack(plan_payload(pad_session.plan, pad_session.job_set))  # no time in the gzip header
    assert stored(stored(payload)) == pack(payload) and unpack(payload) is payload  # version 1 reads as it is


def test_the_10000_task_plan_payload_size():
    payload = plan_payload(synthetic_plan(10_000))
    v1, v2 = len(json.dumps(payload, separators=(",", ":"))), len(json.dumps(pack(payload)))
    # the size it had when measured (v1 ~10 MiB compact, v2 ~1.0 MiB): a bound, so a regression shows
    assert v2 < 1.5 * 2**20 and v1 > 5 * v2, (v1, v2)
    assert unpack(pack(payload)) == payload


def test_bad_payloads_say_what_was_expected():
    with pytest.raises(ValueError, match=r"pack: expected a version-1 payload \(flowlab_payload 1\), got "
                                         r"flowlab_payload 7"):
        pack({"flowlab_payload": 7, "kind": "plan"})
    with pytest.raises(ValueError, match=r"unpack: expected flowlab_payload 1 or 2, got 3"):
        unpack({"flowlab_payload": 3})
    with pytest.raises(ValueError, match=r"encoding 'gzip\+base64' and a string body \(or 'gzip' and a bytes body\); "
                                         r"got encoding 'zstd' and a str body"):
        unpack({"flowlab_payload": 2, "kind": "plan", "encoding": "zstd", "body": ""})
