"""Hyvarinen (2005) score-matching objective of a fitted surrogate, on any data (docs/EXPERIMENTS.md B0).

    J(f; X) = (1/N) sum_i sum_l [ d^2 f / dx_l^2 (x_i) + 0.5 (d f / dx_l (x_i))^2 ],

which equals E[0.5 ||grad f - grad log pi||^2] minus a constant independent of f when X ~ pi; lower is
better. Unlike the authors' finite-model code, which ignores its held-out argument, this is always
evaluated on the points it is given, so cross-validation scores held-out folds.
"""

from __future__ import annotations

from typing import Protocol

import torch

from gradmc.surrogates._checks import check_points

__all__ = ["Surrogate", "score_matching_objective"]


class Surrogate(Protocol):
    """What the objective needs from a fitted surrogate f: R^d -> R (log-density up to a constant)."""

    dim: int

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """grad f(x): (N, d) -> (N, d)."""
        ...

    def laplacian(self, x: torch.Tensor) -> torch.Tensor:
        """sum_l d^2 f / dx_l^2 (x): (N, d) -> (N,)."""
        ...


def score_matching_objective(surrogate: Surrogate, x: torch.Tensor) -> torch.Tensor:
    """J(f; x), a 0-dim tensor, mean over the N points of x (N, d) (units of f / units of x^2).

    Raises:
        ValueError: x is not a floating (N, d) tensor with N >= 1 and d = surrogate.dim.
    """
    check_points(x, dim=surrogate.dim, name="x")
    g = surrogate.grad(x)
    return (surrogate.laplacian(x) + 0.5 * (g * g).sum(-1)).mean()
