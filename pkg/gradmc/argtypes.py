"""argparse ``type=`` functions shared by the subcommands: each refuses a bad value at parse time, so the usage
error (exit status 2, no traceback) names the option and the value it got."""

from __future__ import annotations

import argparse
import math

__all__ = ["positive_number", "factor_at_least_one", "positive_int"]


def positive_number(text: str) -> float:
    """argparse type: a finite number > 0 (``nan``, ``inf``, 0 and negatives are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def factor_at_least_one(text: str) -> float:
    """argparse type: a finite factor >= 1 (a safety factor below 1 asks for less than was measured)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite factor >= 1, got {text!r}") from None
    if not (math.isfinite(value) and value >= 1):
        raise argparse.ArgumentTypeError(f"expected a finite factor >= 1 (below 1 would request less than the "
                                         f"plan measured), got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value
