"""What the compare view's browser tests look for in a screenshot."""

from __future__ import annotations

import pytest

from tests.e2e.harness import harness_page

DARK = "document.body.style.background = '#111'; document.querySelector('.fl-root').classList.add('fl-dark')"


ADDED, CHANGED = (185, 239, 194), (255, 216, 168)  # style.ts: .c-added and .c-changed fills


@pytest.fixture(scope="module")
def page():
    with harness_page(width=1300, height=1000) as pg:
        pg.set_viewport_size({"width": 1300, "height": 1000})
        pg.evaluate("document.getElementById('out').style.width = '1280px'")
        yield pg


def share_of(page, box: dict, rgb: tuple[int, int, int]) -> float:
    """The share of a box's screen pixels that have this colour (within 6 per channel), read from a screenshot."""
    import base64

    png = base64.b64encode(page.screenshot(clip=box)).decode()
    return page.evaluate("""async ([b64, rgb]) => {
      const img = new Image(); img.src = 'data:image/png;base64,' + b64; await img.decode();
      const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
      const g = c.getContext('2d'); g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
      for (let i = 0; i < d.length; i += 4)
        if (Math.abs(d[i] - rgb[0]) <= 6 && Math.abs(d[i + 1] - rgb[1]) <= 6 && Math.abs(d[i + 2] - rgb[2]) <= 6) n++;
      return n / (d.length / 4);
    }""", [png, list(rgb)])
