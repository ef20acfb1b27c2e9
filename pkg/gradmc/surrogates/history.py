"""KMC lite fitted on a chain history (KMC Fig. 4 right, EXPERIMENTS.md B4; Strathmann et al. 2015, Alg. 1).

A chain history repeats a state at every rejection. Duplicates would sit in a training and a held-out fold
at once (biasing the cross-validation) and add nothing to the fit, so the surrogate is fitted on the
DISTINCT states, sub-sampled uniformly to at most ``max_points`` (the O(n^3 d) cost of eq. 7).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gradmc.surrogates.cv import cross_validate_lite
from gradmc.surrogates.lite import LiteSurrogate, fit_lite

__all__ = ["fit_lite_on_history"]


def fit_lite_on_history(points: torch.Tensor, max_points: int, sigmas: Sequence[float], lambdas: Sequence[float],
                        num_folds: int, generator: torch.Generator,
                        params: tuple[float, float] | None = None) -> tuple[LiteSurrogate, tuple[float, float]]:
    """KMC lite (eq. 7) on at most ``max_points`` distinct rows of ``points``, (sigma, lambda) by CV if not given.

    Steps: the distinct rows (:func:`torch.unique`, sorted); if more than ``max_points``, the first
    ``max_points`` of a random permutation (drawn from ``generator``); then, when ``params`` is None,
    ``num_folds``-fold score-matching CV (:func:`cross_validate_lite`, same generator) over
    ``sigmas`` x ``lambdas`` if the grid has more than one point and there are at least 2 ``num_folds``
    distinct rows, else (sigmas[0], lambdas[0]).

    Args:
        points: (N, d) float64 chain states (repeats allowed). max_points: cap n on the fitted points.
        sigmas, lambdas: the grid (widths of exp(-||x - y||^2 / sigma), ridges). num_folds: CV folds.
        generator: torch.Generator for the sub-sample and the folds.
        params: (sigma, lambda) to use without CV (a later refit with the first choice).

    Returns:
        (the fitted surrogate, (sigma, lambda) used).

    Raises:
        ValueError: from :func:`fit_lite` / :func:`cross_validate_lite` (bad points or grid).
    """
    pts = torch.unique(points, dim=0)
    if pts.shape[0] > max_points:
        pts = pts[torch.randperm(pts.shape[0], generator=generator)[:max_points]]
    if params is None:
        if len(sigmas) * len(lambdas) > 1 and pts.shape[0] >= 2 * num_folds:
            cv = cross_validate_lite(pts, sigmas, lambdas, num_folds, generator)
            params = (cv.best_width, cv.best_lambda)
        else:
            params = (sigmas[0], lambdas[0])
    return fit_lite(pts, *params), params
