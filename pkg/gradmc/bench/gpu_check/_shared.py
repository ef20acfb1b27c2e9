"""What the modules of :mod:`gradmc.bench.gpu_check` share: the repository root, the two devices, and the
JSON-friendly scalar of a table cell."""

from __future__ import annotations

import math
from pathlib import Path

__all__ = ["REPO"]

#: the repository root (pkg/gradmc/bench/gpu_check/_shared.py is four folders below it)
REPO = Path(__file__).resolve().parents[4]

#: the two devices of the check, in the order of the table columns
_DEVICES = ("cpu", "cuda")


def _plain(value):
    """A JSON-friendly scalar (numpy scalars to Python, NaN to None)."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
