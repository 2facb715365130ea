"""Where a user's line is: errors made while tracing point at it (builder.py and scope.py both need it).

In IPython (a notebook, a console) a cell's code is compiled under a made-up file name (``1710005187.py``;
ipykernel's ``/tmp/ipykernel_<pid>/<hash>.py``); a location there reads ``cell [n], line m``, as JupyterLab
numbers the cell's prompt and lines, so ``str(job)``, the views, the debugger and error messages all name the cell
the user sees instead of a temp file.
"""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_location() -> str | None:
    """Where the innermost frame outside flowlab is (:func:`describe`): the user line that made the op."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            return describe(filename, frame.f_lineno)
        frame = frame.f_back
    return None


def describe(filename: str, line: int | None) -> str:
    """``cell [n], line m`` for a line of an IPython cell, else ``file.py:m``."""
    cell = ipython_cell(filename)
    if cell is not None:
        return f"cell [{cell}], line {line}"
    return f"{os.path.basename(filename)}:{line}"


def ipython_cell(filename: str) -> int | None:
    """The prompt number of the IPython cell compiled under ``filename``, or None (no IPython shell running, or
    not a cell). Looks IPython up in ``sys.modules`` only: flowlab never imports it for this."""
    module = sys.modules.get("IPython.core.interactiveshell")
    if module is None or not module.InteractiveShell.initialized():
        return None
    names = getattr(getattr(module.InteractiveShell.instance(), "compile", None), "_filename_map", None)
    number = names.get(filename) if isinstance(names, dict) else None
    return number if isinstance(number, int) else None
