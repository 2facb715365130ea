"""What the live widgets send over the comm: the payload as version 2 with a binary body (payload_pack.live), which
ipywidgets sends as a buffer beside the JSON message. The bytes are taken from the widget's state exactly as
ipywidgets separates them, then decoded by the built front end's own decoder in Node (a DataView at each buffer path,
as ipywidgets' put_buffers hands them to the model): decoded, they are the version-1 payload the kernel holds. The
comm message and the widget state a notebook saves stay a fraction of version 1's."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ipywidgets.widgets.widget import Widget, _remove_buffers

from flowlab.notebook.widgets import DebuggerWidget, PlanBrowser
from flowlab.viz.payload_pack import live, pack, unpack
from tests.helpers.pad_job import run_pad_job

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "flowlab" / "notebook" / "static" / "flowlab_widget.js"
DECODE = """
import { readFileSync } from "node:fs";
const [mod, dir] = process.argv.slice(2);
const { readPayload, parsePayload } = await import(mod);
const msg = JSON.parse(readFileSync(`${dir}/state.json`, "utf8"));
msg.buffer_paths.forEach((path, i) => {  // as ipywidgets' put_buffers: a DataView at each path
  const b = readFileSync(`${dir}/buffer${i}`);
  let o = msg.state;
  for (const k of path.slice(0, -1)) o = o[k];
  o[path.at(-1)] = new DataView(b.buffer, b.byteOffset, b.byteLength);
});
const got = await readPayload(msg.state.packed);
const want = parsePayload(JSON.parse(readFileSync(`${dir}/v1.json`, "utf8")));
const plain = (r) => JSON.stringify({ ...r.payload, flowlab_payload: 0 });
console.log(JSON.stringify({ ok: got.ok, message: got.ok ? "" : got.message, want_ok: want.ok,
  same: got.ok && want.ok && plain(got) === plain(want), nodes: got.ok ? got.payload.graph.nodes.length : 0 }));
"""


@pytest.fixture(scope="module")
def deep_mlp_session():
    from tests.helpers.deep_mlp import build_deep_mlp

    return build_deep_mlp()


@pytest.fixture
def pad_session():
    return run_pad_job()


def comm_message(widget: Widget) -> tuple[dict, list[list], list[bytes]]:
    """The widget's state as its comm_open carries it: JSON without the buffers, their paths, the buffers."""
    state, paths, buffers = _remove_buffers(widget.get_state())
    return state, paths, [bytes(b) for b in buffers]


def decoded_in_node(widget: Widget, tmp_path: Path) -> dict:
    if not shutil.which("node"):
        pytest.skip("node is not on PATH: decoding in the built front end needs Node 20")
    state, paths, buffers = comm_message(widget)
    (tmp_path / "state.json").write_text(json.dumps({"state": state, "buffer_paths": paths}))
    for i, b in enumerate(buffers):
        (tmp_path / f"buffer{i}").write_bytes(b)
    (tmp_path / "v1.json").write_text(json.dumps(widget.payload, allow_nan=False))
    (tmp_path / "decode.mjs").write_text(DECODE)
    out = subprocess.run(["node", str(tmp_path / "decode.mjs"), MODULE.as_uri(), str(tmp_path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def comm_bytes(widget: Widget) -> int:
    """The bytes of the widget's comm_open but for ``_esm``, the view module's source that anywidget sends with every
    widget (the same 160 KiB whatever the payload)."""
    state, _, buffers = comm_message(widget)
    state.pop("_esm")
    return len(json.dumps(state, separators=(",", ":"))) + sum(map(len, buffers))


def test_the_browser_sends_v2_with_a_binary_body_that_the_front_end_decodes(deep_mlp_session, tmp_path):
    browser = PlanBrowser(deep_mlp_session)
    for view in ("plan", "jobs"):
        browser.show(view)
        state, paths, buffers = comm_message(browser)
        assert "payload" not in state and "svg" not in state and paths == [["packed", "body"]] and len(buffers) == 1
        assert (state["packed"]["flowlab_payload"], state["packed"]["encoding"]) == (2, "gzip")
        assert unpack(browser.packed) == browser.payload  # the kernel's own reading of what it sent
        got = decoded_in_node(browser, tmp_path)
        assert got == {"ok": True, "message": "", "want_ok": True, "same": True,
                       "nodes": len(browser.payload["graph"]["nodes"])}, got
        v1 = len(json.dumps(browser.payload, separators=(",", ":")))
        assert comm_bytes(browser) * 5 < v1, (view, comm_bytes(browser), v1)  # plan: ~1.4 MiB -> ~0.15 MiB


def test_the_widget_state_a_notebook_saves_is_small(deep_mlp_session):
    browser = PlanBrowser(deep_mlp_session)
    saved = json.dumps(Widget.get_manager_state(widgets=[browser]))  # what "save widget state" writes
    v1 = len(json.dumps(browser.payload))  # 1.4 MiB; saved: the packed Plan ~140 KiB, the module's source 160 KiB
    assert len(saved) * 4 < v1 and len(saved) < 400 * 1024, (len(saved), v1)
    assert json.dumps(browser.payload["graph"]["nodes"][0]) not in saved  # no version-1 JSON in it


def test_expand_and_collapse_send_the_new_payload_packed(pad_session, tmp_path):
    browser = PlanBrowser(pad_session, "jobs")
    group = browser.payload["graph"]["groups"][0]
    first = browser.packed
    (browser.expand if group["collapsed"] else browser.collapse)(group["id"])
    assert browser.packed is not first and unpack(browser.packed) == browser.payload
    assert browser.payload["graph"]["groups"][0]["collapsed"] is not group["collapsed"]
    assert decoded_in_node(browser, tmp_path)["same"]


def test_a_flowjob_output_packs_each_payload_once(pad_session, monkeypatch):
    from flowlab.notebook import result as result_module
    from flowlab.viz import payload_pack

    calls = []
    monkeypatch.setattr(payload_pack, "pack", lambda p, _pack=pack: calls.append(p["kind"]) or _pack(p))
    res = result_module.FlowjobResult(pad_session)
    stored = res.stored_payloads()
    browser = res.browser()
    assert sorted(calls) == ["jobset", "plan"]  # the notebook's bundle and the comm share one packing
    assert browser.packed == live(res.payloads()["plan"], stored["plan"])


def test_the_debugger_sends_the_plan_packed(pad_session, tmp_path):
    from flowlab.debug.debugger import Debugger

    desc = next(iter(pad_session.function_descs.values()))
    widget = DebuggerWidget(Debugger(pad_session, desc, (np.zeros((2, 1, 3, 3), np.float32),), {}))
    state, paths, _ = comm_message(widget)
    assert "payload" not in state and paths == [["packed", "body"]] and "update" in state and "state" not in state
    assert decoded_in_node(widget, tmp_path)["same"]
    widget.payload = {**widget.payload, "title": "a new title"}  # a new payload goes out packed too
    assert unpack(widget.packed) == widget.payload


def test_live_says_what_it_expected():
    with pytest.raises(ValueError, match=r"live: packed must be pack\(payload\) \(a version-2 plan\), got a "
                                         r"version-1 'jobset'"):
        live({"flowlab_payload": 1, "kind": "plan"}, {"flowlab_payload": 1, "kind": "jobset"})
