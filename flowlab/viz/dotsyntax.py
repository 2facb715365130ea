"""DOT syntax helpers: quoting that is safe for any op or job name, stable node ids, attribute lists.

Names come from users (an op may be called ``a<b&"c``), so every text that goes into DOT passes through
:func:`quote`, which makes it one DOT string whose rendered SVG shows exactly that text:

* ``\\`` and ``"`` are escaped for the DOT lexer, newlines become DOT's ``\\n`` line break;
* ``&`` becomes ``&amp;``, because Graphviz decodes HTML entities in labels and tooltips (a name
  ``a&lt;b`` must not be shown as ``a<b``); Graphviz escapes ``<``, ``>``, ``&`` and ``"`` itself when it
  writes SVG, so nothing in a name ever becomes markup;
* characters XML cannot hold (C0 controls, lone surrogates, U+FFFE/U+FFFF) are shown as ``\\xNN``/``\\uNNNN``.

Graphviz expands ``\\N`` (node name), ``\\G`` (graph name), ``\\E``, ``\\T``, ``\\H`` and ``\\L`` in labels
and tooltips, so a user's backslash must reach Graphviz as an escaped one. A label's text is unescaped once
(``\\\\`` -> ``\\``), a tooltip's twice (Graphviz 16's escape expansion, then its tooltip pass; graphviz-pure
does the same), so in tooltip attributes each backslash is doubled once more (:func:`quote` with
``tooltip=True``; :func:`attr_list` does it for every ``*tooltip`` attribute).

Node names in the DOT text are never user text: they are identifiers made by :func:`safe_ident`, and the
SVG ``id`` attributes are made by :func:`svg_id` (percent-encoded, ASCII only).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from urllib.parse import quote as _percent

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_IDENT = re.compile(r"[A-Za-z0-9_]+")
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_text(text: object) -> str:
    """``str(text)`` with line ends as ``\\n``, tabs as spaces and XML-invalid characters made visible."""
    s = str(text).replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    return _XML_INVALID.sub(_visible, s)


def quote(text: object, tooltip: bool = False) -> str:
    """One quoted DOT string that renders as exactly ``text`` (see the module docstring); ``tooltip``: for a
    tooltip attribute, whose backslash escapes Graphviz expands twice."""
    backslash = "\\\\\\\\" if tooltip else "\\\\"
    s = clean_text(text).replace("&", "&amp;").replace("\\", backslash).replace('"', '\\"').replace("\n", "\\n")
    return f'"{s}"'


def svg_id(*parts: object) -> str:
    """An SVG/HTML id from parts joined by ``/``; each part percent-encoded, so ``/`` separates unambiguously.

    ``svg_id("op", "pad_Job", "a<b")`` -> ``"op/pad_Job/a%3Cb"``; a browser gets a part back with
    ``decodeURIComponent``.
    """
    return "/".join(_percent(str(p), safe="-_.~") for p in parts)


def safe_ident(prefix: str, name: str) -> str:
    """A DOT identifier for ``name``: ``prefix + name`` when ``name`` is ``[A-Za-z0-9_]+``, else the name with
    other characters replaced by ``_`` plus a CRC32 of the name, so different names stay different and the
    same name always gets the same id. ``prefix`` must start with a letter."""
    if _IDENT.fullmatch(name):
        return prefix + name
    digest = zlib.crc32(name.encode("utf-8", "surrogatepass")) & 0xFFFFFFFF
    return f"{prefix}{_NOT_IDENT.sub('_', name)}_{digest:08x}"


class IdAllocator:
    """Hands out :func:`safe_ident` ids, one per distinct name, and never the same id twice."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._by_name: dict[str, str] = {}
        self._used: set[str] = set()

    def __call__(self, name: str) -> str:
        got = self._by_name.get(name)
        if got is None:
            base = got = safe_ident(self.prefix, name)
            n = 2
            while got in self._used:
                got, n = f"{base}_{n}", n + 1
            self._by_name[name] = got
            self._used.add(got)
        return got


def attr_list(attrs: Mapping[str, object]) -> str:
    """``[k="v", ...]`` with every value quoted; empty string when there are none."""
    items = [f"{key}={quote(value, tooltip=key.endswith('tooltip'))}" for key, value in attrs.items()
             if value is not None]
    return f" [{', '.join(items)}]" if items else ""


def node_stmt(ident: str, attrs: Mapping[str, object]) -> str:
    return f"{ident}{attr_list(attrs)};"


def edge_stmt(src: str, dst: str, attrs: Mapping[str, object]) -> str:
    return f"{src} -> {dst}{attr_list(attrs)};"


def defaults_stmt(kind: str, attrs: Mapping[str, object]) -> str:
    """``graph [...]``, ``node [...]`` or ``edge [...]``."""
    return f"{kind}{attr_list(attrs)};"


def indent(lines: Iterable[str], depth: int = 1) -> list[str]:
    pad = "  " * depth
    return [pad + line for line in lines]


def check_choice(option: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"to_dot option {option}={value!r} is not one of {choices}")
    return value
