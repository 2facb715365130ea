"""flowlab/flags.py: one table of switches. Parsing, precedence (scope > set > env > default), scopes restoring on
exit and on exception, show()'s text, the ``%flowlab`` magic, docs/flags.md against the declarations, and a scan of
flowlab's source (with ``ast``) that fails on any environment read outside flags.py and a short allow-list."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

import flowlab as flow
import flowlab.flags as flags_module
from flowlab.flags import FLAGS, FlagError, get, markdown, source, table
from flowlab.kernels import registry

ROOT = Path(__file__).resolve().parents[2]
ALL_ENV = [f.env for f in FLAGS.values()]


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    """Each test starts from the defaults: no FLOWLAB_* variable, nothing set by flow.flags.set."""
    for env in ALL_ENV:
        monkeypatch.delenv(env, raising=False)
    saved = dict(flags_module._set)
    flags_module._set.clear()
    yield
    flags_module._set.clear()
    flags_module._set.update(saved)


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "on", "Yes", " 1 "])
def test_true_forms(monkeypatch, raw):
    monkeypatch.setenv("FLOWLAB_REPLAY", "0")
    assert get("replay") is False
    monkeypatch.setenv("FLOWLAB_REPLAY", raw)
    assert get("replay") is True


@pytest.mark.parametrize("raw", ["0", "false", "False", "off", "no", "NO"])
def test_false_forms(monkeypatch, raw):
    monkeypatch.setenv("FLOWLAB_WINOGRAD", raw)  # before the table, FLOWLAB_WINOGRAD=false left Winograd on
    assert get("winograd") is False


def test_empty_is_unset(monkeypatch):
    monkeypatch.setenv("FLOWLAB_KERNELS", "")
    monkeypatch.setenv("FLOWLAB_DEBUG", " ")
    assert get("kernels") == "tiered" and get("debug") is False
    assert source("kernels") == "default"


def test_auto_bool(monkeypatch):
    assert get("threads") is None
    for raw, want in (("auto", None), ("on", True), ("0", False)):
        monkeypatch.setenv("FLOWLAB_THREADS", raw)
        assert get("threads") is want


@pytest.mark.parametrize(("env", "raw", "accepted"), [
    ("FLOWLAB_REPLAY", "maybe", "1/true/on/yes or 0/false/off/no"),
    ("FLOWLAB_THREADS", "2", "1/true/on/yes, 0/false/off/no or auto"),
    ("FLOWLAB_KERNELS", "cuda", "tiered, reference or numba"),
    ("FLOWLAB_MACHINE_TIMEOUT", "soon", "a positive number of seconds"),
    ("FLOWLAB_DOWNLOAD_TIMEOUT", "-3", "a positive number of seconds"),
])
def test_bad_env_value_names_variable_value_and_forms(monkeypatch, env, raw, accepted):
    monkeypatch.setenv(env, raw)
    name = env.removeprefix("FLOWLAB_").lower()
    with pytest.raises(FlagError) as err:
        get(name)
    assert str(err.value) == f"{env}={raw!r}: expected {accepted} (flag {name!r}, docs/flags.md)"
    assert isinstance(err.value, ValueError)


def test_seconds_are_floats(monkeypatch):
    monkeypatch.setenv("FLOWLAB_RAY_CONNECT_TIMEOUT", "2.5")
    assert get("ray_connect_timeout") == 2.5


def test_unknown_name_suggests():
    with pytest.raises(FlagError, match=r"unknown flag 'kernel'; did you mean kernels\?"):
        get("kernel")
    with pytest.raises(FlagError, match="did you mean fuse_background"):
        with flow.flags(fuse_backgound=False):
            pass
    with pytest.raises(FlagError, match="unknown flag 'zzz'; the flags are kernels, replay"):
        flow.flags.set(zzz=1)


def test_precedence_scope_over_set_over_env_over_default(monkeypatch):
    assert (get("kernels"), source("kernels")) == ("tiered", "default")
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")
    assert (get("kernels"), source("kernels")) == ("numba", "env")
    flow.flags.set(kernels="reference")
    assert (get("kernels"), source("kernels")) == ("reference", "set")
    with flow.flags(kernels="tiered"):
        assert (get("kernels"), source("kernels")) == ("tiered", "scoped")
    assert (get("kernels"), source("kernels")) == ("reference", "set")
    flow.flags.set(kernels=None)
    assert (get("kernels"), source("kernels")) == ("numba", "env")


def test_scope_restores_on_exit_nested_and_on_exception():
    with flow.flags(replay=False, kernels="reference"):
        assert flow.flags.replay is False and flow.flags.kernels == "reference"
        with flow.flags(replay="on"):
            assert flow.flags.replay is True
        assert flow.flags.replay is False
    assert flow.flags.replay is True and flow.flags.kernels == "tiered"
    with pytest.raises(RuntimeError, match="boom"):
        with flow.flags(callgen=False):
            assert get("callgen") is False
            raise RuntimeError("boom")
    assert get("callgen") is True and source("callgen") == "default"


def test_a_bad_scope_value_applies_nothing():
    with pytest.raises(FlagError, match=r"flow.flags\(fuse='sometimes'\): expected 1/true/on/yes"):
        with flow.flags(replay=False, fuse="sometimes"):
            pass
    assert get("replay") is True and source("replay") == "default"


def test_a_scope_is_seen_by_other_threads():
    """Scopes are process-wide: the runtime's lanes and background compiles run on other threads."""
    seen = []
    with flow.flags(fuse_background=False):
        thread = threading.Thread(target=lambda: seen.append(get("fuse_background")))
        thread.start()
        thread.join()
    assert seen == [False]


def test_readers_read_the_table(monkeypatch):
    """The functions the runtime calls return the flag's value: through a scope as through the environment."""
    from flowlab.kernels.numba_cpu.winograd_conv import winograd_enabled
    from flowlab.replay import replay_enabled
    from flowlab.replay.callgen import callgen_enabled
    from flowlab.replay.fused import fusion_enabled
    from flowlab.runtime.threads import threads_setting

    readers = [registry.default_impl, replay_enabled, fusion_enabled, lambda: get("fuse_background"), callgen_enabled,
               threads_setting, winograd_enabled]
    assert [r() for r in readers] == ["tiered", True, True, True, True, None, None]
    with flow.flags(kernels="reference", replay=False, fuse=False, fuse_background=False, callgen=False,
                    threads=True, winograd=False):
        assert [r() for r in readers] == ["reference", False, False, False, False, True, False]
    monkeypatch.setenv("FLOWLAB_KERNELS", "numba")
    assert registry.default_impl() == "numba"


def test_kernels_choices_are_the_registry_modes():
    assert FLAGS["kernels"].choices == registry.MODES


def test_show_text(monkeypatch, capsys):
    monkeypatch.setenv("FLOWLAB_DEBUG", "yes")
    with flow.flags(replay=False):
        flow.flags.show()
        text = capsys.readouterr().out
        assert text == table() + "\n"
    lines = text.splitlines()
    assert lines[0].split() == ["flag", "value", "from", "variable"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert list(rows) == list(FLAGS)
    assert rows["replay"] == ["False", "scoped", "FLOWLAB_REPLAY"]
    assert rows["debug"] == ["True", "env", "FLOWLAB_DEBUG"]
    assert rows["kernels"] == ["tiered", "default", "FLOWLAB_KERNELS"]
    assert rows["threads"] == ["auto", "default", "FLOWLAB_THREADS"]
    assert rows["dot"] == ["(none)", "default", "FLOWLAB_DOT"]
    assert flow.flags is flags_module and flow.flags.debug is True
    with pytest.raises(AttributeError, match="no flag or function 'nope'"):
        flow.flags.nope  # noqa: B018


def test_docs_table_lists_every_flag():
    doc = (ROOT / "docs" / "flags.md").read_text()
    assert markdown() in doc, "docs/flags.md is out of date: regenerate its table with flowlab.flags.markdown()"
    for flag in FLAGS.values():
        assert f"`{flag.env}`" in doc and flag.doc


def test_magic_sets_and_shows_flags():
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "flowlab")
    assert shell.run_line_magic("flowlab", "") == table()
    assert shell.run_line_magic("flowlab", "kernels numba") == "flowlab kernels: numba (set)"
    assert get("kernels") == "numba"
    out = shell.run_line_magic("flowlab", "replay=off threads=auto")
    assert out == "flowlab replay: False (set)\nflowlab threads: auto (set)"
    assert shell.run_line_magic("flowlab", "replay") == "flowlab replay: False (set)"
    assert shell.run_line_magic("flowlab", "kernels default") == "flowlab kernels: tiered (default)"
    with pytest.raises(UsageError, match=r"flow\.flags\.set\(kernels='gpu'\): expected tiered, reference or numba"):
        shell.run_line_magic("flowlab", "kernels gpu")
    with pytest.raises(UsageError, match="did you mean kernels"):
        shell.run_line_magic("flowlab", "kernel numba")
    with pytest.raises(UsageError, match="usage: %flowlab"):
        shell.run_line_magic("flowlab", "a b c")


# Environment reads outside flags.py that are not switches: (module, variable) -> why.
ALLOWED = {
    ("flowlab/kernels/numba_cpu/_numba.py", "XDG_CACHE_HOME"): "the default cache folder, as every XDG program",
    ("flowlab/kernels/numba_cpu/_numba.py", "NUMBA_CACHE_DIR"): "Numba's own variable, set before Numba is imported",
    ("flowlab/distributed/cluster.py", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"): "Ray's settings, written for ray.init",
    ("flowlab/distributed/cluster.py", "RAY_USAGE_STATS_ENABLED"): "Ray's settings, written for ray.init",
    ("flowlab/distributed/cluster.py", "RAY_AUTH_MODE"): "Ray's settings, written for ray.init",
    ("flowlab/distributed/cluster.py", "RAY_enable_worker_prestart"): "Ray's settings, written for ray.init",
    ("flowlab/distributed/cluster.py", "RAY_prestart_worker_first_driver"): "Ray's settings, written for ray.init",
}


def environment_uses(root: Path) -> list[tuple[str, int, str | None]]:
    """(module, line, variable or None when not a constant) of every ``os.environ``/``getenv`` use under
    ``root/flowlab`` except in flags.py."""
    found = []
    for path in sorted((root / "flowlab").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "flowlab/flags.py":
            continue
        tree = ast.parse(path.read_text(), rel)
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            is_environ = (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb")) or (
                isinstance(node, ast.Name) and node.id in ("environ", "getenv"))
            is_import = isinstance(node, ast.ImportFrom) and any(a.name in ("environ", "getenv") for a in node.names)
            if not (is_environ or is_import):
                continue
            key = None
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant):
                key = parent.slice.value
            elif isinstance(parent, ast.Call) and parent.args and isinstance(parent.args[0], ast.Constant):
                key = parent.args[0].value  # os.getenv("X")
            elif isinstance(parent, ast.Attribute) and isinstance(grand := parents.get(parent), ast.Call) and (
                    grand.args and isinstance(grand.args[0], ast.Constant)):
                key = grand.args[0].value  # os.environ.get("X") / setdefault / pop
            found.append((rel, node.lineno, key))
    return sorted(found, key=lambda use: (use[0], use[1]))


def test_no_environment_read_outside_flags():
    bad = [f"{rel}:{line}: {key or 'a computed name'}" for rel, line, key in environment_uses(ROOT)
           if (rel, key) not in ALLOWED]
    assert not bad, ("read flowlab's switches through flowlab/flags.py (declare a new one there); other environment "
                     "uses need an entry in ALLOWED with a reason:\n" + "\n".join(bad))


def test_scan_sees_reads(tmp_path):
    """The scan is able to fail: it finds each form of read in a made-up module."""
    (tmp_path / "flowlab").mkdir()
    (tmp_path / "flowlab" / "m.py").write_text(
        "import os\nfrom os import getenv\na = os.environ.get('FLOWLAB_X')\nb = os.environ['FLOWLAB_Y']\n"
        "c = getenv('FLOWLAB_Z')\nd = os.getenv(NAME)\ne = dict(os.environ)\n")
    keys = [key for _, _, key in environment_uses(tmp_path)]
    assert keys == [None, "FLOWLAB_X", "FLOWLAB_Y", "FLOWLAB_Z", None, None]
