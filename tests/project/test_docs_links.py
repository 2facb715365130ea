"""The front door and the docs stay true (issue 26): every relative link in README.md, docs/**/*.md and
benchmarks/RESULTS.md reaches an existing file (and a heading, where it names an anchor), the README stays within
200 lines, and every ```python block of the README runs, printing the lines the README shows after it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, ROOT / "benchmarks" / "RESULTS.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(```+|~~~+)(.*)$")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+).+?\1")


def fenced_blocks(text: str) -> list[tuple[str, list[str], int]]:
    """(info string, lines, line number of the opening fence) of every fenced code block."""
    blocks: list[tuple[str, list[str], int]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            fence, info, start = m.group(1), m.group(2).strip(), i
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].startswith(fence):
                body.append(lines[i])
                i += 1
            blocks.append((info, body, start + 1))
        i += 1
    return blocks


def prose_lines(text: str, keep_code: bool = False) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, inline code spans removed unless keep_code."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for n, line in enumerate(text.split("\n"), start=1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.startswith(fence):
            fence = None
        elif fence is None:
            out.append((n, line if keep_code else INLINE_CODE.sub("", line)))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link in a heading anchors by its text
    text = text.replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose_lines(page.read_text(), keep_code=True):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    text = page.read_text()
    for n, line in prose_lines(text):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ... not checked offline
                continue
            path_part, _, anchor = target.partition("#")
            where = f"{page.relative_to(root)}:{n}: {target}"
            dest = (page.parent / path_part).resolve() if path_part else page
            if not dest.is_relative_to(root):
                broken.append(f"{where}: points outside the repository")
            elif not dest.exists():
                broken.append(f"{where}: no file {dest.relative_to(root)}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where}: {dest.relative_to(root)} has no heading with anchor #{anchor}")
    return broken


def test_the_link_checker_finds_what_is_broken(tmp_path: Path) -> None:
    """The checker itself can fail: a missing file, a missing anchor and an anchor that exists."""
    page = tmp_path / "probe.md"
    page.write_text("# Title: one `two`\n\n## A b\n\n## A b\n\n[ok](#title-one-two) [ok2](#a-b-1) [bad](#nope) "
                    "[gone](missing.md) [web](https://example.com) `[code](missing2.md)` [out](../../../x.md)\n\n"
                    "```\n[fenced](missing3.md)\n```\n")
    found = broken_links(page, root=tmp_path)
    assert [f.split(": ", 2)[1:] for f in found] == [
        ["#nope", "probe.md has no heading with anchor #nope"], ["missing.md", "no file missing.md"],
        ["../../../x.md", "points outside the repository"]], found


def test_every_relative_link_resolves() -> None:
    broken = [b for page in PAGES for b in broken_links(page)]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text().split("\n")
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; keep it within 200 and move detail to docs/"
    # the two commands a fresh machine runs come first (.ci/run runs `make test`)
    head = "\n".join(lines[:15])
    assert "make demo" in head and "make test" in head


def python_blocks_with_output() -> list[tuple[int, list[str], list[str] | None]]:
    """Each ```python block of the README, with the ```text block that follows it (before the next python block)."""
    blocks = fenced_blocks(README.read_text())
    out: list[tuple[int, list[str], list[str] | None]] = []
    for i, (info, body, start) in enumerate(blocks):
        if info != "python":
            continue
        shown = None
        if i + 1 < len(blocks) and blocks[i + 1][0] == "text":
            shown = blocks[i + 1][1]
        out.append((start, body, shown))
    return out


def matches_in_order(shown: list[str], printed: list[str]) -> list[str]:
    """The shown lines (``...`` marks a cut) that are not found, in order, among the printed ones."""
    missing, at = [], 0
    printed = [p.rstrip() for p in printed]
    for line in shown:
        if line.strip() == "...":
            continue
        try:
            at = printed.index(line.rstrip(), at) + 1
        except ValueError:
            missing.append(line)
    return missing


def test_matching_reports_a_line_out_of_order() -> None:
    assert matches_in_order(["a", "...", "c"], ["a", "b", "c"]) == []
    assert matches_in_order(["c", "a"], ["a", "b", "c"]) == ["a"]


@pytest.mark.parametrize("start,body,shown", python_blocks_with_output(),
                         ids=lambda v: f"line{v}" if isinstance(v, int) else "")
def test_readme_python_blocks_run(tmp_path: Path, start: int, body: list[str], shown: list[str] | None) -> None:
    """Run in a fresh process from the block's own file name (a first line ``# name.py``), so the source
    locations the Job prints (``# pad.py:6``) are the ones the README shows."""
    first = body[0].strip() if body else ""
    name = first[2:] if re.fullmatch(r"# [\w-]+\.py", first) else f"readme_line_{start}.py"
    (tmp_path / name).write_text("\n".join(body) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    got = subprocess.run([sys.executable, name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, f"README.md line {start}: the python block failed:\n{got.stderr[-3000:]}"
    if shown is not None:
        missing = matches_in_order(shown, got.stdout.split("\n"))
        assert not missing, (f"README.md line {start}: its output block shows lines the program does not print "
                             f"(in order):\n" + "\n".join(missing) + "\n--- printed:\n" + got.stdout[-4000:])
