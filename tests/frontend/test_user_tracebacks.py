"""A user-facing error's traceback ends at the user's line (issue 24): a shape error had nine flowlab frames between
the user's call and the user's line. flowlab's frames are taken out (IPython hides the job wrapper's one frame by
``__tracebackhide__``); ``FLOWLAB_DEBUG=1`` keeps them all."""

from __future__ import annotations

import os
import re
import traceback

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.errors import OpInferError

FLOWLAB_DIR = os.path.dirname(os.path.abspath(flow.__file__)) + os.sep


def call_a_bad_matmul() -> OpInferError:
    @flow.global_function()
    def bad_job(a: tp.Numpy.Placeholder((4, 3)), b: tp.Numpy.Placeholder((4, 5))) -> tp.Numpy:
        return flow.matmul(a, b)  # the user's line

    with pytest.raises(OpInferError) as info:
        bad_job(np.zeros((4, 3), np.float32), np.zeros((4, 5), np.float32))
    return info.value


def frames(err: BaseException) -> list[traceback.FrameSummary]:
    return traceback.extract_tb(err.__traceback__)


def test_a_shape_errors_traceback_ends_at_the_users_line():
    err = call_a_bad_matmul()
    stack = frames(err)
    assert stack[-1].filename == __file__ and stack[-1].line == "return flow.matmul(a, b)  # the user's line"
    own = [f for f in stack if os.path.abspath(f.filename).startswith(FLOWLAB_DIR)]
    assert [f.name for f in own] == ["run"], own  # only the job function's wrapper (hidden in IPython)
    assert "inner dimensions differ" in str(err) and "test_user_tracebacks.py:" in str(err)


def test_flowlab_debug_keeps_flowlabs_frames(monkeypatch):
    monkeypatch.setenv("FLOWLAB_DEBUG", "1")
    stack = frames(call_a_bad_matmul())
    own = [f for f in stack if os.path.abspath(f.filename).startswith(FLOWLAB_DIR)]
    assert len(own) >= 6 and stack[-1].filename.endswith("builder.py"), [f.name for f in own]


def test_ipython_shows_the_users_frames_only(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    try:
        ip.run_cell("\n".join([
            "import numpy as np, flowlab as flow, flowlab.typing as tp",
            "@flow.global_function()",
            "def bad_job(a: tp.Numpy.Placeholder((4, 3)), b: tp.Numpy.Placeholder((4, 5))) -> tp.Numpy:",
            "    return flow.matmul(a, b)",
            "bad_job(np.zeros((4, 3), np.float32), np.zeros((4, 5), np.float32))"]), store_history=True)
    finally:
        InteractiveShell.clear_instance()
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "OpInferError: cell [1], line 4: op 'matmul_0' (matmul)" in out, out
    assert FLOWLAB_DIR not in out, out  # no frame of flowlab's is listed
    headers = re.findall(r"^(Cell In\[.*|File .*)$", out, re.M)
    assert headers == ["Cell In[1], line 5", "Cell In[1], line 4, in bad_job(a, b)"], out
