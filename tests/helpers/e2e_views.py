"""Mounting a stored view in a page, taking its screenshot, and where the fixtures are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.harness import harness_page

SHOTS = Path(os.environ.get("FLOWLAB_E2E_SHOTS", "")) if os.environ.get("FLOWLAB_E2E_SHOTS") else None


FIXTURES = Path(__file__).resolve().parents[1] / "e2e" / "fixtures"


@pytest.fixture(scope="module")
def page():
    with harness_page() as pg:
        dialogs: list[str] = []
        pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        pg.dialogs = dialogs
        yield pg


def shot(page, name: str) -> None:
    if SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"))


def mount(page, name: str, state: dict | None = None) -> float:
    return page.evaluate("([n, s]) => window.flowlab.mount(n, s === null ? undefined : s)", [name, state])


def inside(box: dict, outer: dict, slack: float = 1.0) -> bool:
    return (box["x"] >= outer["x"] - slack and box["y"] >= outer["y"] - slack
            and box["x"] + box["width"] <= outer["x"] + outer["width"] + slack
            and box["y"] + box["height"] <= outer["y"] + outer["height"] + slack)
