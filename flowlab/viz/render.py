"""``render_svg``: DOT text -> SVG text through a Graphviz-compatible program.

Renderers are tried in order: ``$FLOWLAB_DOT`` (a path or command name of any ``dot``-compatible program),
``dot`` on ``PATH``, then the ``graphviz-pure`` program (a static Rust port of Graphviz that flowlab depends on),
looked up on ``PATH`` and beside ``sys.executable`` (a virtual environment's ``bin`` need not be on ``PATH``).
Each runs as ``<program> -Tsvg`` with the DOT on stdin and a timeout. A renderer that is missing, fails or
times out is skipped; when none works, :class:`RenderError` lists every attempt and why it failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..flags import get

ENV_VAR = "FLOWLAB_DOT"
DEFAULT_TIMEOUT = 60.0


class RenderError(RuntimeError):
    """No renderer could turn the DOT into SVG; ``attempts`` holds (renderer, what happened) pairs."""

    def __init__(self, message: str, attempts: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.attempts = attempts


@dataclass(frozen=True)
class Renderer:
    source: str  # "$FLOWLAB_DOT", "dot on PATH", "graphviz-pure"
    command: str  # what was looked for
    path: str | None  # the resolved executable, None when not found


def _resolve(command: str) -> str | None:
    if os.sep in command or (os.altsep and os.altsep in command):
        return command if os.path.isfile(command) and os.access(command, os.X_OK) else None
    return shutil.which(command)


def _graphviz_pure() -> str | None:
    found = shutil.which("graphviz-pure")
    if found:
        return found
    exe = "graphviz-pure.exe" if os.name == "nt" else "graphviz-pure"
    dirs = [Path(sys.executable).parent]
    try:
        dirs.append(Path(sysconfig.get_path("scripts")))
    except KeyError:  # pragma: no cover - unusual install schemes
        pass
    for folder in dirs:
        candidate = folder / exe
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def renderers() -> list[Renderer]:
    """The renderers :func:`render_svg` will try, in order, with where each was found (or ``None``)."""
    out = []
    env = get("dot")
    if env:
        out.append(Renderer(f"${ENV_VAR}", env, _resolve(env)))
    out.append(Renderer("dot on PATH", "dot", shutil.which("dot")))
    out.append(Renderer("graphviz-pure", "graphviz-pure", _graphviz_pure()))
    return out


def render_svg(dot: str, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Render DOT text to an SVG document (str) with the first renderer that works."""
    if not isinstance(dot, str):
        raise TypeError(f"render_svg takes DOT text (str); got {type(dot).__name__}")
    data = dot.encode("utf-8", "backslashreplace")
    attempts: list[tuple[str, str]] = []
    outcomes: list[str] = []  # per attempt: "missing", "timeout" or "failed"
    for renderer in renderers():
        label = f"{renderer.source} ({renderer.command})"
        if renderer.path is None:
            attempts.append((label, "not found"))
            outcomes.append("missing")
            continue
        try:
            proc = subprocess.run(
                [renderer.path, "-Tsvg"], input=data, capture_output=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            attempts.append((label, f"{renderer.path}: timed out after {timeout:g} s"))
            outcomes.append("timeout")
            continue
        except OSError as exc:
            attempts.append((label, f"{renderer.path}: could not run: {exc}"))
            outcomes.append("failed")
            continue
        out = proc.stdout.decode("utf-8", "replace")
        if proc.returncode != 0 or "<svg" not in out:
            err = proc.stderr.decode("utf-8", "replace").strip()[-500:] or "no output"
            attempts.append((label, f"{renderer.path}: exit status {proc.returncode}: {err}"))
            outcomes.append("failed")
            continue
        if attempts and attempts[0][0].startswith(f"${ENV_VAR}"):
            warnings.warn(
                f"${ENV_VAR} did not work ({attempts[0][1]}); rendered with {renderer.source} instead",
                stacklevel=2,
            )
        return out
    tried = "\n".join(f"  - {label}: {what}" for label, what in attempts)
    raise RenderError(f"could not render DOT to SVG; tried, in order:\n{tried}\n{_advice(outcomes, timeout)}", attempts)


def _advice(outcomes: list[str], timeout: float) -> str:
    """What to do, from what really happened: only a missing renderer is a reason to install one."""
    if "timeout" in outcomes:
        return (f"The graph is too large to lay out within {timeout:g} s: draw fewer nodes (%%flowjob --show user, "
                "collapsed groups; flowlab.viz.payload_svg bounds the picture), or pass a longer timeout.")
    if "failed" in outcomes:
        return ("A renderer was found but failed on this graph (see its message above); if the DOT came from "
                "flowlab, that is a bug: please report it with the DOT text.")
    return (f"Install flowlab's graphviz-pure dependency (pip install graphviz-pure), put Graphviz's `dot` on "
            f"PATH, or set ${ENV_VAR} to a dot-compatible program.")
