"""``jupyter nbconvert --to flowlab_html``: an HTML export whose flowlab outputs stay interactive, offline.

The plain ``--to html`` export shows a flowlab output as its static fallback (the bounded SVG overview), since
nbconvert knows nothing of ``application/vnd.flowlab.{jobset,plan,run}+json``. This exporter is that same HTML
exporter (same templates, same look) plus:

- :class:`FlowlabViewsPreprocessor` gives every output holding a flowlab payload a ``text/html`` representation:
  a box with the payload as JSON in a ``<script type="application/vnd.flowlab.payload+json">`` (inert: the browser
  never runs it) and the output's SVG overview, which stays what a reader without JavaScript sees;
- :class:`FlowlabHTMLExporter` adds flowlab's built view module (``static/flowlab_widget.js``, the one the live
  widgets load) ONCE per document, inline, with a few lines that draw each box's payload with ``renderStored``
  (a stored payload is version 2, gzipped: the browser decodes it, so the HTML is as small as the notebook):
  the graph with pan/zoom/expand and the detail pane, a recorded run with its slider. No CDN, no server: the
  file opens from disk.

Strings are data here as in the views: JSON inside ``<script>`` has ``<``, ``>`` and ``&`` written as ``\\u003c``
etc., so an op named ``</script><img src=x onerror=alert(1)>`` cannot end the script element.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from jinja2 import DictLoader
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import default

from ..viz.payload import MIME
from .compare import COMPARE_MIME

MODULE = Path(__file__).with_name("static") / "flowlab_widget.js"
PAYLOAD_SCRIPT = "application/vnd.flowlab.payload+json"
BOX_CLASS = "flowlab-export"
# one output of %%flowjob holds the jobs and the Plan; show_diff's output holds a compare payload
_ORDER = (MIME["jobset"], MIME["plan"], MIME["run"], COMPARE_MIME)

# Runs once the page is parsed (module scripts are deferred): import the inline view module through a Blob URL
# (a module cannot be imported from a <script> element's text otherwise), then draw every box. A failure leaves
# the SVG overview in place and says why above it.
BOOT = """
const say = (box, text) => { const p = document.createElement("div"); p.className = "flowlab-export-problem";
  p.textContent = text; box.prepend(p); };
const boxes = [...document.querySelectorAll(".BOX")];
let views = null;
try {
  const code = JSON.parse(document.getElementById("flowlab-views-module").textContent);
  views = await import(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
} catch (err) {
  for (const box of boxes) say(box, `flowlab's interactive view could not load here (${err}); the overview follows.`);
}
if (views) for (const box of boxes) {
  // nbconvert's templates style HTML outputs as documents (right-aligned cells, svg {height: auto}); the views
  // bring their own styles, as in JupyterLab where the mime renderer's node has no such class
  box.closest(".jp-RenderedHTMLCommon")?.classList.remove("jp-RenderedHTMLCommon", "jp-RenderedHTML");
  box.closest(".rendered_html")?.classList.remove("rendered_html");
  for (const script of box.querySelectorAll('script[type="SCRIPT"]')) {
    const el = document.createElement("div");
    script.before(el);
    try {
      // a notebook stores version 2 (gzipped): renderStored decodes it first
      if ((await views.renderStored(el, JSON.parse(script.textContent))).payload) box.classList.add("flowlab-drawn");
    } catch (err) { say(box, "flowlab's view failed: " + err); }
  }
}
""".replace("BOX", BOX_CLASS).replace("SCRIPT", PAYLOAD_SCRIPT)
# the SVG overview only where no view was drawn (no JavaScript, an old browser, a payload of a newer version)
STYLE = f".{BOX_CLASS}.flowlab-drawn > .flowlab-export-fallback{{display:none}}" \
        f".{BOX_CLASS} > div + div{{margin-top:8px}}" \
        ".flowlab-export-problem{color:#a40000;margin:4px 0}"


# nbconvert's lab template loads require.js and MathJax (and, with widget metadata, the widget manager; with a
# mermaid diagram, mermaid) from CDNs: offline that is a console error each, and flowlab's views need none of them
# (the view module is inline and self-contained). This template is the lab one without those scripts, so the file
# makes no network request; the price is that LaTeX in Markdown cells shows as its source text.
OFFLINE_TEMPLATE = "flowlab_offline.html.j2"
_OFFLINE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
"""


def script_json(value: Any) -> str:
    """JSON that is safe as the text of an HTML ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def flowlab_payloads(data: dict[str, Any]) -> list[Any]:
    """The flowlab payloads of one output's mime bundle, jobs before Plan before run."""
    out = []
    for mime in _ORDER:
        value = data.get(mime)
        if isinstance(value, str):  # a front end may store a JSON mime type as text
            value = json.loads(value)
        if value is not None:
            out.append(value)
    return out


def box_html(payloads: list[Any], svg: str | None) -> str:
    scripts = "".join(f'<script type="{PAYLOAD_SCRIPT}">{script_json(p)}</script>' for p in payloads)
    # as nbconvert shows an SVG output: an image, so nothing in the picture is markup of this page
    src = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii") if svg else ""
    fallback = f'<div class="flowlab-export-fallback"><img src="{src}" alt="flowlab overview"></div>' if svg else ""
    return f'<div class="{BOX_CLASS}">{scripts}{fallback}</div>'


class FlowlabViewsPreprocessor(Preprocessor):
    """Gives each output with a flowlab payload the ``text/html`` box the exporter's script draws into; counts
    them in ``resources["flowlab_views"]`` so the module is embedded only where it is used."""

    def preprocess_cell(self, cell: Any, resources: dict[str, Any], index: int) -> tuple[Any, dict[str, Any]]:
        for output in cell.get("outputs", ()):
            data = output.get("data")
            if not data:
                continue
            payloads = flowlab_payloads(data)
            if not payloads:
                continue
            # a live widget's view needs the kernel, or widget state and a widget manager from a CDN: the payload
            # draws the same views offline
            data.pop("application/vnd.jupyter.widget-view+json", None)
            svg = data.get("image/svg+xml")
            data["text/html"] = box_html(payloads, "".join(svg) if isinstance(svg, list) else svg)
            resources["flowlab_views"] = resources.get("flowlab_views", 0) + len(payloads)
        return cell, resources


def module_html() -> str:
    """The view module and the script that draws the boxes; once per document."""
    return (f"<style>{STYLE}</style>"
            f'<script type="application/json" id="flowlab-views-module">{script_json(MODULE.read_text("utf-8"))}'
            f'</script><script type="module" id="flowlab-views-boot">{BOOT}</script>')


class FlowlabHTMLExporter(HTMLExporter):
    """nbconvert's HTML exporter with flowlab's views; registered as ``flowlab_html``."""

    export_from_notebook = "HTML with flowlab views"

    @default("file_extension")
    def _file_extension_default(self) -> str:
        return ".html"

    @default("template_file")
    def _template_file_default(self) -> str:
        return OFFLINE_TEMPLATE

    @default("extra_loaders")
    def _extra_loaders_default(self) -> list[Any]:
        return [DictLoader({OFFLINE_TEMPLATE: _OFFLINE})]

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.register_preprocessor(FlowlabViewsPreprocessor(), enabled=True)

    def from_notebook_node(self, nb: Any, resources: dict[str, Any] | None = None,
                           **kw: Any) -> tuple[str, dict[str, Any]]:
        body, resources = super().from_notebook_node(nb, resources, **kw)
        if resources.get("flowlab_views"):
            head, sep, tail = body.rpartition("</body>")
            body = head + module_html() + sep + tail if sep else body + module_html()
        return body, resources
