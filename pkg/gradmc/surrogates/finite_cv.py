"""Fast k-fold score-matching CV for KMC finite from per-fold sufficient statistics (EXPERIMENTS.md B0, B2).

KMC finite (Strathmann et al. 2015, eq. 8) is linear in theta, so everything the cross-validation needs is
in the statistics b = -(1/N) sum_i sum_l phi''_l(x_i) and C = (1/N) sum_i sum_l phi'_l(x_i) phi'_l(x_i)^T:

- the fit on the training folds is theta = (C_train + lambda I)^-1 b_train, with the sums of the training
  folds being the sums of the per-fold sums;
- the held-out Hyvarinen objective of f = theta^T phi on the test fold is exactly
  J(f; test) = (1/M) sum_i sum_l [f''_l + 0.5 (f'_l)^2] = -theta^T b_test + 0.5 theta^T C_test theta.

So per length scale the data are touched once (O(N m^2) with the rank trick (s s^T) o (W W^T) of
:meth:`FiniteSurrogate.update`) and each (fold, lambda) costs one m x m Cholesky, instead of a full refit
from the (N, d, m) derivative tensors and a held-out gradient evaluation as in :func:`cross_validate_finite`
(whose scores this reproduces up to rounding, with the same folds and features). This is what makes the
paper's n = m = 2000 banana affordable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from gradmc.surrogates._checks import check_grids, check_points, check_positive, check_positive_int
from gradmc.surrogates.cv import CVResult, kfold_indices
from gradmc.surrogates.finite import FiniteSurrogate
from gradmc.surrogates.random_features import RandomFourierFeatures, gaussian_random_features

__all__ = ["finite_statistics", "fit_finite_from_statistics", "cross_validate_finite_stats"]


def finite_statistics(x: torch.Tensor, features: RandomFourierFeatures) -> tuple[torch.Tensor, torch.Tensor]:
    """Sums (not means) over the points of eq. 8's statistics: b_sum (m,) and c_sum (m, m).

    b_sum = sum_i -sum_l phi''_l(x_i) = sum_i phi(x_i) ||omega_j||^2 and
    c_sum = sum_i sum_l phi'_l(x_i) phi'_l(x_i)^T = (S^T S) o (W W^T), S = -sqrt(2/m) sin(W x + u) (N, m).
    Cost O(N m d + N m^2), memory O(N m + m^2).

    Args:
        x: (N, d) floating points with finite entries. features: m random Fourier features on R^d.

    Raises:
        ValueError: x is not a floating (N, d) tensor with finite entries and N >= 1.
    """
    check_points(x, dim=features.dim, name="x")
    omega = features.omega
    phase = x.to(omega.dtype) @ omega.t() + features.u  # (N, m)
    scale = math.sqrt(2.0 / features.num_features)
    b_sum = (scale * torch.cos(phase)).sum(0) * (omega**2).sum(-1)
    s = -scale * torch.sin(phase)
    c_sum = (s.t() @ s) * (omega @ omega.t())
    return b_sum, c_sum


def fit_finite_from_statistics(features: RandomFourierFeatures, lam: float, num_points: int,
                               b_sum: torch.Tensor, c_sum: torch.Tensor) -> FiniteSurrogate:
    """The KMC finite surrogate of the given sums over ``num_points`` points (as :func:`fit_finite` on them).

    Raises:
        ValueError: lam not > 0, num_points < 1.
    """
    check_positive_int(num_points, "num_points")
    return FiniteSurrogate(features, check_positive(lam, "lam"), int(num_points), b_sum, c_sum)


def _held_out(b_tr: torch.Tensor, c_tr: torch.Tensor, b_te: torch.Tensor, c_te: torch.Tensor,
              lam: float) -> float:
    """J of theta = (C_tr + lam I)^-1 b_tr on the test statistics (means); NaN if the solve fails."""
    a = c_tr + lam * torch.eye(c_tr.shape[0], dtype=c_tr.dtype)
    chol, info = torch.linalg.cholesky_ex(0.5 * (a + a.t()))
    if int(info) != 0:
        return float("nan")
    theta = torch.cholesky_solve(b_tr[:, None], chol)[:, 0]
    return float(-theta @ b_te + 0.5 * theta @ (c_te @ theta))


def cross_validate_finite_stats(x: torch.Tensor, lengthscales: Sequence[float], lambdas: Sequence[float],
                                num_features: int, num_folds: int = 5, generator: torch.Generator | None = None,
                                feature_seed: int = 0) -> CVResult:
    """k-fold choice of (length scale s, lambda) for KMC finite with Gaussian features; ``best_width`` is s.

    Same folds (one :func:`kfold_indices` permutation from ``generator``), same features (for each s a
    fresh ``torch.Generator().manual_seed(feature_seed)``, so every s, fold and lambda shares one draw of
    the base frequencies) and the same held-out objective as :func:`cross_validate_finite` with
    ``kernel="gaussian"``, computed from per-fold statistics (module doc). A grid point whose training
    system is not positive definite scores NaN (never chosen unless all are NaN, then the first).

    Args:
        x: (N, d) points, N >= num_folds. lengthscales: s > 0 of k = exp(-||x - y||^2 / (2 s^2)) (units of x).
        lambdas: ridges > 0. num_features: m >= 1. num_folds: k in [2, N].
        generator: for the fold permutation. feature_seed: seed of the feature draw (see above).

    Returns:
        :class:`CVResult` with widths = the length scales, scores (S, L, k) held-out J (lower is better).

    Raises:
        ValueError: bad x, empty grids, non-positive grid values, num_features < 1, bad num_folds.
    """
    check_points(x, name="x", min_rows=2)
    m = check_positive_int(num_features, "num_features")
    widths, lams = check_grids(lengthscales, lambdas, width_name="lengthscale")
    folds = kfold_indices(x.shape[0], num_folds, generator)
    scores = torch.empty(len(widths), len(lams), len(folds), dtype=torch.float64)
    for i, s in enumerate(widths):
        features = gaussian_random_features(x.shape[1], m, s, torch.Generator().manual_seed(feature_seed), x.dtype)
        stats = [finite_statistics(x[idx], features) for idx in folds]
        for f, idx in enumerate(folds):
            n_tr = x.shape[0] - idx.numel()
            b_tr = sum(st[0] for g, st in enumerate(stats) if g != f) / n_tr
            c_tr = sum(st[1] for g, st in enumerate(stats) if g != f) / n_tr
            b_te, c_te = stats[f][0] / idx.numel(), stats[f][1] / idx.numel()
            for j, lam in enumerate(lams):
                scores[i, j, f] = _held_out(b_tr, c_tr, b_te, c_te, lam)
    mean = torch.nan_to_num(scores.mean(-1), nan=torch.inf)
    i, j = divmod(int(mean.argmin()), len(lams))
    return CVResult(torch.tensor(widths), torch.tensor(lams), scores, widths[i], lams[j])
