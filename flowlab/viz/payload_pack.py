"""Payload version 2: the form a view payload takes in a saved notebook (a mime bundle's
``application/vnd.flowlab.{jobset,plan,run}+json``), an nbconvert export, or anywhere else it is stored.

Version 1 (``payload.py``) is what flowlab builds and reads in the kernel; a 30-layer MLP's Plan is 1.5 MB of it,
and nbformat writes a notebook with one JSON value per indented line, so the jobs and the Plan of one ``%%flowjob``
output added 5.1 MiB to the .ipynb. Measured on that output (benchmarks/payload_size_time.py), the .ipynb bytes of
the two payloads:

- version 1 as it was: 5.1 MiB;
- a string table with the detail rows as indices: 1.0 MiB, 0.6 MiB if packed into one string;
- gzip of version 1's compact JSON, base64: 0.21 MiB (a string table under gzip saves nothing more).

So version 2 is version 1 gzipped: the head (``kind``, ``title``, a Plan's ``summary``) stays readable, the rest is
``body``, base64 of the gzip of its compact JSON. Decoded, it is exactly the version-1 payload (every node, edge,
group and detail row), so a saved notebook draws everything with no kernel; browsers decode it with
``DecompressionStream("gzip")`` (extension/src/payload.ts ``decodePayload``). The gzip header's time is 0, so the
same payload always writes the same bytes (a re-run notebook diffs clean).

A live widget's comm carries version 2 too, with the body binary (``live``: encoding ``gzip``, the body the gzip
bytes, which ipywidgets sends as a buffer beside the JSON message; the front end gets a DataView): base64 would add
a third, and JSON-in-a-trait version 1 was 1.4 MiB per 30-layer Plan on every (re)display.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

PACKED_VERSION = 2
ENCODING = "gzip+base64"
LIVE_ENCODING = "gzip"  # the same body as bytes: a widget trait (ipywidgets sends bytes as binary buffers)
HEAD = ("kind", "title", "summary")  # left readable: what a person or a tool reading the .ipynb wants first
LEVEL = 6  # level 9 is 5% smaller and 3x slower to write; a %%flowjob pays it on every run


def pack(payload: dict[str, Any]) -> dict[str, Any]:
    """A version-1 payload as version 2 (see the module's doc). Raises ``ValueError`` for NaN/Infinity, which
    JSON cannot hold (``run_payload`` writes them as strings)."""
    version = payload.get("flowlab_payload")
    if version != 1:
        raise ValueError(f"pack: expected a version-1 payload (flowlab_payload 1), got flowlab_payload {version!r}")
    head = {"flowlab_payload": PACKED_VERSION, **{k: payload[k] for k in HEAD if k in payload}}
    rest = {k: v for k, v in payload.items() if k != "flowlab_payload" and k not in HEAD}
    text = json.dumps(rest, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    body = gzip.compress(text.encode("utf-8"), compresslevel=LEVEL, mtime=0)
    return {**head, "encoding": ENCODING, "body": base64.b64encode(body).decode("ascii")}


def live(payload: dict[str, Any], packed: dict[str, Any] | None = None) -> dict[str, Any]:
    """A version-1 payload as a live widget sends it: version 2 with the body as bytes (see the module's doc).
    ``packed``, the same payload already packed for the notebook (``pack``), saves packing it again."""
    packed = packed if packed is not None else pack(payload)
    if packed.get("flowlab_payload") != PACKED_VERSION or packed.get("kind") != payload.get("kind"):
        raise ValueError(f"live: packed must be pack(payload) (a version-{PACKED_VERSION} {payload.get('kind')}), "
                         f"got a version-{packed.get('flowlab_payload')!r} {packed.get('kind')!r}")
    return {**packed, "encoding": LIVE_ENCODING, "body": base64.b64decode(packed["body"])}


def unpack(payload: dict[str, Any]) -> dict[str, Any]:
    """A stored payload of version 1 or 2 (its body base64 text, or bytes as ``live`` makes it) as version 1 (a
    version-1 payload comes back as it is)."""
    version = payload.get("flowlab_payload")
    if version == 1:
        return payload
    if version != PACKED_VERSION:
        raise ValueError(f"unpack: expected flowlab_payload 1 or {PACKED_VERSION}, got {version!r}")
    encoding, body = payload.get("encoding"), payload.get("body")
    if encoding == LIVE_ENCODING and isinstance(body, (bytes, bytearray, memoryview)):
        raw = bytes(body)
    elif encoding == ENCODING and isinstance(body, str):
        raw = base64.b64decode(body)
    else:
        raise ValueError(f"unpack: a version-{PACKED_VERSION} payload has encoding {ENCODING!r} and a string body "
                         f"(or {LIVE_ENCODING!r} and a bytes body); got encoding {encoding!r} and a "
                         f"{type(body).__name__} body")
    rest = json.loads(gzip.decompress(raw).decode("utf-8"))
    head = {k: payload[k] for k in HEAD if k in payload}
    return {"flowlab_payload": 1, **head, **rest}


def stored(payload: dict[str, Any]) -> dict[str, Any]:
    """What a mime bundle carries for ``payload``: version 2 (``pack``); one already packed is left as it is."""
    return payload if payload.get("flowlab_payload") == PACKED_VERSION else pack(payload)
