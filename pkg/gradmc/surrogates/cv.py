"""Cross-validated choice of (sigma, lambda) by the held-out score-matching objective (docs/EXPERIMENTS.md B0).

k-fold: the points are split into k folds by one random permutation; for each grid point and fold the
surrogate is fitted on the other k - 1 folds and scored by J(f; held-out fold) (``score_matching``); the
grid point with the lowest mean over folds wins. For KMC lite the grid is over the width sigma of
exp(-||x - y||^2 / sigma); for KMC finite over the length scale s of the features (sigma = 2 s^2 in lite
units for Gaussian features), with one feature draw per s from a generator re-seeded per grid point,
so all folds and lambdas share the same features.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from gradmc.surrogates._checks import check_grids, check_points, check_positive_int
from gradmc.surrogates.finite import fit_finite
from gradmc.surrogates.lite import fit_lite
from gradmc.surrogates.random_features import (
    RandomFourierFeatures,
    gaussian_random_features,
    rational_quadratic_random_features,
)
from gradmc.surrogates.score_matching import Surrogate, score_matching_objective

__all__ = ["CVResult", "kfold_indices", "held_out_score", "cross_validate", "cross_validate_lite",
           "cross_validate_finite"]


@dataclass(frozen=True)
class CVResult:
    """Outcome of a grid search.

    Attributes:
        widths: (S,) the sigma (lite) or length-scale (finite) grid. lambdas: (L,) the lambda grid.
        scores: (S, L, k) held-out J per grid point and fold (lower is better).
        best_width, best_lambda: the grid point with the lowest mean score over folds.
    """

    widths: torch.Tensor
    lambdas: torch.Tensor
    scores: torch.Tensor
    best_width: float
    best_lambda: float

    @property
    def mean_scores(self) -> torch.Tensor:
        """(S, L) mean held-out score over folds."""
        return self.scores.mean(-1)


def kfold_indices(n: int, num_folds: int, generator: torch.Generator | None = None) -> list[torch.Tensor]:
    """Split range(n) into num_folds disjoint index sets of near-equal size after a random permutation.

    Raises:
        ValueError: num_folds < 2 or num_folds > n.
    """
    k = check_positive_int(num_folds, "num_folds")
    if k < 2 or k > n:
        raise ValueError(f"num_folds must be in [2, n = {n}], got {k}")
    return list(torch.randperm(n, generator=generator).tensor_split(k))


def held_out_score(fit: Callable[[torch.Tensor], Surrogate], train: torch.Tensor, test: torch.Tensor) -> float:
    """J(fit(train); test): fit on the training points (N, d), score on the held-out points (M, d)."""
    return float(score_matching_objective(fit(train), test))


def cross_validate(x: torch.Tensor, fit: Callable[[torch.Tensor, float, float], Surrogate],
                   widths: Sequence[float], lambdas: Sequence[float], num_folds: int = 5,
                   generator: torch.Generator | None = None) -> CVResult:
    """Generic k-fold grid search of ``fit(train, width, lam)`` by the held-out score-matching objective.

    Args:
        x: (N, d) points. widths, lambdas: non-empty grids of values > 0. num_folds: k in [2, N].
        generator: for the fold permutation.

    Raises:
        ValueError: bad x, empty grids, non-positive grid values, bad num_folds.
    """
    check_points(x, name="x", min_rows=2)
    widths, lambdas = check_grids(widths, lambdas)
    folds = kfold_indices(x.shape[0], num_folds, generator)
    scores = torch.empty(len(widths), len(lambdas), len(folds), dtype=torch.float64)
    for f, test_idx in enumerate(folds):
        mask = torch.ones(x.shape[0], dtype=torch.bool)
        mask[test_idx] = False
        train, test = x[mask], x[test_idx]
        for i, w in enumerate(widths):
            for j, lam in enumerate(lambdas):
                scores[i, j, f] = held_out_score(lambda t, w=w, lam=lam: fit(t, w, lam), train, test)
    mean = torch.nan_to_num(scores.mean(-1), nan=torch.inf)
    i, j = divmod(int(mean.argmin()), len(lambdas))
    return CVResult(torch.tensor(widths), torch.tensor(lambdas), scores, widths[i], lambdas[j])


def cross_validate_lite(x: torch.Tensor, sigmas: Sequence[float], lambdas: Sequence[float], num_folds: int = 5,
                        generator: torch.Generator | None = None, regulariser: str = "identity") -> CVResult:
    """k-fold choice of (sigma, lambda) for KMC lite; ``best_width`` is sigma. See :func:`cross_validate`."""
    return cross_validate(x, lambda t, s, lam: fit_lite(t, s, lam, regulariser), sigmas, lambdas, num_folds,
                          generator)


def cross_validate_finite(x: torch.Tensor, lengthscales: Sequence[float], lambdas: Sequence[float],
                          num_features: int, num_folds: int = 5, generator: torch.Generator | None = None,
                          feature_seed: int = 0, kernel: str = "gaussian", shape: float = 1.0) -> CVResult:
    """k-fold choice of (length scale s, lambda) for KMC finite; ``best_width`` is s.

    Args:
        kernel: "gaussian" or "rational_quadratic" (with Gamma shape ``shape``).
        feature_seed: features for length scale s are drawn from torch.Generator().manual_seed(feature_seed).

    Raises:
        ValueError: as :func:`cross_validate`, plus unknown kernel or num_features < 1.
    """
    check_points(x, name="x", min_rows=2)
    m = check_positive_int(num_features, "num_features")
    if kernel not in ("gaussian", "rational_quadratic"):
        raise ValueError(f"kernel must be 'gaussian' or 'rational_quadratic', got {kernel!r}")
    cache: dict[float, RandomFourierFeatures] = {}

    def features(s: float) -> RandomFourierFeatures:
        if s not in cache:
            g = torch.Generator().manual_seed(feature_seed)
            if kernel == "gaussian":
                cache[s] = gaussian_random_features(x.shape[1], m, s, g, x.dtype)
            else:
                cache[s] = rational_quadratic_random_features(x.shape[1], m, s, shape, g, x.dtype)
        return cache[s]

    return cross_validate(x, lambda t, s, lam: fit_finite(t, features(s), lam), lengthscales, lambdas, num_folds,
                          generator)
