"""Input checks shared by the surrogates: clear ValueErrors naming what is wrong and what was expected."""

from __future__ import annotations

import math

import torch

__all__ = ["check_points", "check_positive", "check_positive_int", "check_grids"]


def check_points(x: torch.Tensor, dim: int | None = None, name: str = "x", min_rows: int = 1) -> None:
    """Raise unless x is a floating (N, dim) tensor with at least ``min_rows`` rows and finite entries.

    Raises:
        TypeError: x is not a torch.Tensor.
        ValueError: wrong rank, wrong number of columns, too few rows, integer dtype or non-finite values.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2 or (dim is not None and x.shape[1] != dim) or x.shape[1] < 1:
        want = "d" if dim is None else dim
        raise ValueError(f"{name} must have shape (num_points, {want}), got {tuple(x.shape)}")
    if x.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} points, got {x.shape[0]}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor, got dtype {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains non-finite values")


def check_positive(value: float, name: str) -> float:
    """Return float(value); raise ValueError unless it is finite and > 0."""
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_positive_int(value: int, name: str) -> int:
    """Return int(value); raise ValueError unless it is an integer >= 1."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


def check_grids(widths, lambdas, width_name: str = "width") -> tuple[list[float], list[float]]:
    """The two cross-validation grids (kernel widths or length scales, ridge lambdas) as lists of floats > 0.

    Raises:
        ValueError: an empty grid or a value that is not a finite number > 0 (named as ``width_name`` / lam).
    """
    if len(widths) == 0 or len(lambdas) == 0:
        raise ValueError(f"{width_name}s and lambdas must be non-empty")
    return [check_positive(w, width_name) for w in widths], [check_positive(v, "lam") for v in lambdas]
