"""No package imports another package's private names (issue 26: "where a package needs another's private name,
the seam is in the wrong place: move the seam, not the name").

Every ``from X import _name`` (or ``X._name`` on an imported module X) where X lies in another top-level package
of flowlab than the importer (``flowlab.<pkg>``, or a top-level module itself: ``session``, ``call_guard``, ...) is
a break; ``ALLOWED`` lists the ones that remain, each with why, and may only shrink. Imports between modules of one
package (kernels/numba_cpu's siblings sharing ``_copy_nd``) are that package's business.
"""

from __future__ import annotations

from tests.helpers.imports import PrivateImport, private_imports

# "importer -> module._name": why it remains. 28 at issue 26's count; 6 sites of 4 names when this test came (call_guard
# ._Wrapper, numba_cpu.array._copy_flat, system_kernels._mirrored_list, compile._watch_pieces): none now.
ALLOWED: dict[str, str] = {}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _crossing(found: list[PrivateImport] | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in private_imports() if found is None else found:
        if p.module.split(".")[0] == "flowlab" and _package(p.importer) != _package(p.module):
            out.setdefault(f"{p.importer} -> {p.module}.{p.name}", []).append(f"{p.importer}:{p.line}")
    return out


def test_no_package_imports_another_packages_private_names() -> None:
    new = {k: sites for k, sites in _crossing().items() if k not in ALLOWED}
    assert not new, ("private names imported across packages (make the name public where it is its package's API, "
                     "or move the helper where it belongs):\n" + "\n".join(f"{k}  ({', '.join(s)})"
                                                                         for k, s in sorted(new.items())))


def test_the_allowed_list_only_shrinks() -> None:
    stale = sorted(set(ALLOWED) - set(_crossing()))
    assert not stale, f"no longer imported, remove from ALLOWED: {stale}"


def test_the_check_sees_a_private_import() -> None:
    """A cross-package private import is reported with its site; one within a package, or of a submodule, is not."""
    found = [PrivateImport("flowlab.replay.callgen", "flowlab.call_guard", "_Wrapper", 42),
             PrivateImport("flowlab.kernels.numba_cpu.zoo", "flowlab.kernels.numba_cpu.array", "_copy_nd", 10),
             PrivateImport("flowlab.session", "flowlab.runtime.system_kernels", "_ref_part", 7)]
    assert _crossing(found) == {
        "flowlab.replay.callgen -> flowlab.call_guard._Wrapper": ["flowlab.replay.callgen:42"],
        "flowlab.session -> flowlab.runtime.system_kernels._ref_part": ["flowlab.session:7"]}
    assert not any(p.name == "_version" for p in private_imports())  # `from . import _version`: a module
