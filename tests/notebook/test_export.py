"""The flowlab_html nbconvert exporter without a browser (tests/e2e/test_nbconvert_html.py opens its output in
chromium): one module per document, one inert payload script per flowlab payload, strings that cannot end a script
element, the widget view left out, the plain HTML exporter untouched, and the entry point naming the class."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbconvert")

from nbconvert import HTMLExporter

from flowlab.notebook.export import FlowlabHTMLExporter, script_json

ROOT = Path(__file__).resolve().parents[2]
EVIL = "</script><img src=x onerror=alert(1)><!--"
SVG = "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'></svg>"


def payload(kind: str, label: str) -> dict:
    graph = {"nodes": [{"id": "o:0", "label": label, "kind": "op", "parent": None, "classes": []}],
             "groups": [], "edges": [], "lanes": [], "details": {}}
    out = {"flowlab_payload": 1, "kind": kind, "title": f"{kind} {label}", "graph": graph}
    if kind == "run":
        out |= {"acts": [], "memory": {"blocks": [], "lifetimes": []}}
    return out


def notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    flowjob = nbformat.v4.new_code_cell("%%flowjob ...")
    flowjob.outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.flowlab.jobset+json": payload("jobset", EVIL),
        "application/vnd.flowlab.plan+json": payload("plan", "pad"),
        "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0},
        "image/svg+xml": SVG, "text/plain": "flowjob: 4 jobs"})]
    run = nbformat.v4.new_code_cell("show_run(dbg)")
    run.outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.flowlab.run+json": payload("run", "x"), "image/svg+xml": SVG, "text/plain": "run"})]
    plain = nbformat.v4.new_code_cell("1 + 1")
    plain.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]
    nb.cells = [flowjob, run, plain]
    return nb


def test_script_json_cannot_end_a_script_element_and_round_trips():
    value = {"label": EVIL, "amp": "a & b", "sep": "\u2028"}
    text = script_json(value)
    assert not re.search(r"<|>|&", text) and "\u2028" not in text
    assert json.loads(text) == value


def test_flowlab_html_embeds_the_module_once_and_every_payload():
    html, _ = FlowlabHTMLExporter().from_notebook_node(notebook())
    assert html.count('id="flowlab-views-module"') == 1 and html.count('id="flowlab-views-boot"') == 1
    scripts = re.findall(r'<script type="application/vnd\.flowlab\.payload\+json">(.*?)</script>', html, re.S)
    assert [json.loads(s)["kind"] for s in scripts] == ["jobset", "plan", "run"]
    assert json.loads(scripts[0])["graph"]["nodes"][0]["label"] == EVIL  # the data is intact, as text
    assert "<img src=x" not in html  # and nowhere markup
    assert "widget-view+json" not in html  # the live widget's view is left out: the payload draws offline
    assert html.count('alt="flowlab overview"') == 2  # the overviews stay for a reader without JavaScript
    assert html.index('id="flowlab-views-module"') > html.index("</main>")  # after the cells: they exist on load


def test_plain_html_export_is_unchanged_and_a_notebook_without_flowlab_gets_no_module():
    html, _ = HTMLExporter().from_notebook_node(notebook())
    assert "flowlab-views-module" not in html and "application/vnd.flowlab.payload+json" not in html
    nb = notebook()
    nb.cells = nb.cells[2:]
    html, _ = FlowlabHTMLExporter().from_notebook_node(nb)
    assert "flowlab-views-module" not in html


def test_the_entry_point_names_the_exporter():
    text = (ROOT / "pyproject.toml").read_text()  # (tomllib is 3.11+; flowlab supports 3.10)
    section = text.split('[project.entry-points."nbconvert.exporters"]', 1)[1].split("\n[", 1)[0]
    target = re.search(r'^flowlab_html = "([^"]+)"$', section, re.M).group(1)
    module, _, name = target.partition(":")
    assert getattr(__import__(module, fromlist=[name]), name) is FlowlabHTMLExporter
