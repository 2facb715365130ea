"""The debugger view (extension/src/debugger.ts) and DebuggerWidget agree on the commands and arguments: every
command the TypeScript sends is one Python accepts, every breakpoint kind it offers is one ``break`` handles, and
extension/README.md documents each. Read from the TypeScript source, so a renamed command fails here, not in a
user's browser as an "unknown command" error."""

from __future__ import annotations

import re
from pathlib import Path

from flowlab.notebook.debugger_widget import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
TS = (ROOT / "extension/src/debugger.ts").read_text()
README = (ROOT / "extension/README.md").read_text()


def sent_commands() -> set[str]:
    # Both spellings the view uses: cmd("step") and { type: "command", cmd: "step_n", ... }.
    return set(re.findall(r'\bcmd\("(\w+)"', TS)) | set(re.findall(r'\bcmd: "(\w+)"', TS))


def test_every_command_the_view_sends_is_accepted_and_documented():
    sent = sent_commands()
    assert {"step", "step_n", "continue", "run_to", "restart", "break", "unbreak", "inspect", "inject"} <= sent
    assert sent <= set(COMMANDS), f"the view sends commands Python refuses: {sorted(sent - set(COMMANDS))}"
    undocumented = {c for c in sent if f"`{c} " not in README}
    assert not undocumented, f"extension/README.md does not list {sorted(undocumented)}"


def test_every_breakpoint_kind_the_view_offers_is_handled():
    kinds = re.search(r"BREAK_KINDS = \[([^\]]*)\]", TS)
    assert kinds, "BREAK_KINDS not found in debugger.ts"
    offered = re.findall(r'"(\w+)"', kinds.group(1))
    documented = re.search(r'`break \{"kind": ([^,]*),', README)
    assert documented and set(re.findall(r'"(\w+)"', documented.group(1))) == set(offered)
    src = (ROOT / "flowlab/notebook/debugger_widget.py").read_text()
    for kind in offered:
        assert f'"{kind}"' in src, f"DebuggerWidget.break_ does not handle kind {kind!r}"


def test_the_argument_names_the_view_sends_are_the_ones_python_reads():
    src = (ROOT / "flowlab/notebook/debugger_widget.py").read_text()
    for arg in ("n", "target", "kind", "id", "name", "regst", "node", "value"):
        assert re.search(rf"\b{arg}\s*:", TS), f"the view never sends {arg!r}"
        assert f'args.get("{arg}"' in src or f'args["{arg}"]' in src, f"Python never reads {arg!r}"
