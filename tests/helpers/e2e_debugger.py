"""Mounting the debugger controls in a page and reading the commands they send."""

from __future__ import annotations

MOUNT = """async ([payload, update]) => {
  const out = document.getElementById('out'); out.replaceChildren();
  const el = document.createElement('div'); out.append(el);
  const mod = await import('/flowlab/notebook/static/flowlab_widget.js');
  const model = new window.flowlab.FakeModel({ payload, selected: '', query: '', update });
  window.model = model;
  mod.default.render({ model, el });
}"""


def sent_commands(page) -> list[dict]:
    return page.evaluate("window.model.sent.filter((m) => m.type === 'command')")
