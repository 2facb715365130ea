"""Source locations read as JupyterLab numbers them (issue 24): ``cell [n], line m`` under prompt ``[n]``, with the
``%%flowjob`` line as line 1, in ``str(job)``, the views' detail pane, error messages and IPython's traceback header
(they said ``cell [n+1]``, body-relative lines, IPython temp-file names such as ``1710005187.py:6`` and
``Cell In[n+1]``). Cells run through an InteractiveShell with ``store_history=True``, as ipykernel runs them."""

from __future__ import annotations

import re

import pytest
from IPython.core.interactiveshell import InteractiveShell

import flowlab as flow

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TEMP_FILE = re.compile(r"\b\d{6,}\.py:\d+|<ipython-input-")  # ipykernel's and a plain shell's cell files

DEFINE = """import numpy as np, flowlab as flow, flowlab.typing as tp

@flow.global_function()
def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
    y = flow.reflection_pad2d(x, padding=1)
    return flow.math.relu(y)
"""

FLOWJOB = """%%flowjob -o res
import numpy as np, flowlab as flow, flowlab.typing as tp

@flow.global_function()
def pad_Job(x: tp.Numpy.Placeholder((2, 1, 3, 3))) -> tp.Numpy:
    y = flow.reflection_pad2d(x, padding=1)
    return flow.math.relu(y)

out = pad_Job(np.zeros((2, 1, 3, 3), np.float32))
"""

SHAPE_ERROR = """%%flowjob
import numpy as np, flowlab as flow, flowlab.typing as tp

@flow.global_function()
def bad_Job(a: tp.Numpy.Placeholder((4, 3)), b: tp.Numpy.Placeholder((4, 5))) -> tp.Numpy:
    return flow.matmul(a, b)

bad_Job(np.zeros((4, 3), np.float32), np.zeros((4, 5), np.float32))
"""


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "flowlab")
    ip.run_cell("pass", store_history=True)  # prompts [1], [2]: a number that differs from the one after it
    ip.run_cell("pass", store_history=True)
    yield ip
    InteractiveShell.clear_instance()


def run(shell, source: str) -> tuple[int, object]:
    """Run ``source`` as the next cell; its prompt number and the result."""
    number = shell.execution_count
    return number, shell.run_cell(source, store_history=True)


def test_a_plain_cells_ops_name_the_cell_and_its_line(shell):
    n, outcome = run(shell, DEFINE)
    assert outcome.success
    run(shell, "pad_Job(np.zeros((2, 1, 3, 3), np.float32))")
    text = str(flow.default_session().traced_jobs["pad_Job"])
    assert f"# cell [{n}], line 5" in text and f"# cell [{n}], line 6" in text, text
    assert not TEMP_FILE.search(text), text


def test_a_flowjob_cell_counts_the_magic_line_and_its_own_prompt(shell):
    n, outcome = run(shell, FLOWJOB)
    assert outcome.success, outcome.error_in_exec
    res = shell.user_ns["res"]
    text = str(res.session.traced_jobs["pad_Job"])
    # JupyterLab's line 6 is `y = flow.reflection_pad2d(...)` (line 1 is %%flowjob), in the cell under prompt [n]
    assert f"reflection_pad2d(%Input_0/out) {{padding=[1,1,1,1]}}  # cell [{n}], line 6" in text, text
    assert f"# cell [{n}], line 7" in text and not TEMP_FILE.search(text), text
    assert not TEMP_FILE.search(str(res.session.plan))
    # the view's detail pane and the debugger's (the same payload rows)
    from flowlab.viz.payload import plan_payload

    payload = plan_payload(res.session.plan, res.session.job_set)
    rows = [row for detail in payload["graph"]["details"].values() for sec in detail["sections"] for row in sec["rows"]]
    sources = {row[1] for row in rows if row[0] == "source"}
    assert f"cell [{n}], line 6" in sources, sources
    assert not any(TEMP_FILE.search(str(row)) for row in rows)


def test_a_shape_error_names_the_cell_and_line_and_its_traceback_header_matches(shell, capsys):
    n, _ = run(shell, SHAPE_ERROR)
    out = ANSI.sub("", capsys.readouterr().out)
    assert f"OpInferError: cell [{n}], line 6: op 'matmul_0' (matmul)" in out, out[-2000:]
    assert f"Cell In[{n}], line 8" in out and f"Cell In[{n + 1}]" not in out, out[-3000:]
    assert not TEMP_FILE.search(out), out[-2000:]


def test_in_a_real_kernel_the_prompt_and_the_location_agree(tmp_path):
    """ipykernel names cell files /tmp/ipykernel_<pid>/<hash>.py and counts prompts itself: the same numbering."""
    import os

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        "%load_ext flowlab", FLOWJOB, "print(res.session.traced_jobs['pad_Job'])", SHAPE_ERROR)]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = root + (os.pathsep + env_path if env_path else "")
    try:
        NotebookClient(nb, timeout=180, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    flowjob, printed, error = nb.cells[1], nb.cells[2], nb.cells[3]
    text = "".join(o.get("text", "") for o in printed.outputs)
    assert f"# cell [{flowjob.execution_count}], line 6" in text and not TEMP_FILE.search(text), text
    tb = ANSI.sub("", "\n".join(line for o in error.outputs for line in o.get("traceback", [])))
    assert f"Cell In[{error.execution_count}], line 8" in tb, tb
    assert f"cell [{error.execution_count}], line 6: op 'matmul_0'" in tb and not TEMP_FILE.search(tb), tb
