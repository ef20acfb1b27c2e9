"""argparse ``type=`` functions shared by the subcommands: each refuses a bad value at parse time, so the usage
error (exit status 2, no traceback) names the option and the value it got."""

from __future__ import annotations

import argparse
import math

__all__ = ["positive_number", "factor_at_least_one", "positive_int"]


def _parsed(text: str, convert, ok, expected: str):
    """``convert(text)`` if it parses and passes ``ok``, else an ArgumentTypeError saying ``expected``."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_number(text: str) -> float:
    """argparse type: a finite number > 0 (``nan``, ``inf``, 0 and negatives are refused)."""
    return _parsed(text, float, lambda v: math.isfinite(v) and v > 0, "a finite number > 0")


def factor_at_least_one(text: str) -> float:
    """argparse type: a finite factor >= 1 (a safety factor below 1 asks for less than was measured)."""
    return _parsed(text, float, lambda v: math.isfinite(v) and v >= 1,
                   "a finite factor >= 1 (below 1 would request less than the plan measured)")


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    return _parsed(text, int, lambda v: v >= 1, "a whole number >= 1")
