"""Where the devices view's browser tests keep their screenshots."""

from __future__ import annotations

from pathlib import Path

SHOTS = Path(__file__).resolve().parents[2] / "build" / "e2e-shots"
