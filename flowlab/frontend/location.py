"""Where a user's line is: errors made while tracing point at it (builder.py and scope.py both need it)."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_location() -> str | None:
    """``file.py:line`` of the innermost frame outside flowlab: the user line that made the op."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None
