"""Gradient-free surrogates of log pi for Kernel HMC (Strathmann et al. 2015; docs/EXPERIMENTS.md B0).

- ``kernels``: exact Gaussian (lite convention exp(-r^2 / sigma)) and rational-quadratic kernels.
- ``random_features``: random Fourier features, their gradients and second derivatives.
- ``score_matching``: the Hyvarinen objective J(f; X) on any data.
- ``lite``: KMC lite (eq. 7). ``finite``: KMC finite (eq. 8) with online updates.
- ``cv``: k-fold choice of (width, lambda) by the held-out score-matching objective.
- ``bandwidth``: the median heuristic for kernel length scales.
- ``history``: KMC lite on the distinct states of a chain history (with CV).
- ``finite_cv``: fast k-fold CV of KMC finite from per-fold sufficient statistics.
"""

from __future__ import annotations

from gradmc.surrogates.bandwidth import median_heuristic
from gradmc.surrogates.cv import CVResult, cross_validate, cross_validate_finite, cross_validate_lite
from gradmc.surrogates.finite import FiniteSurrogate, fit_finite
from gradmc.surrogates.finite_cv import cross_validate_finite_stats, finite_statistics, fit_finite_from_statistics
from gradmc.surrogates.history import fit_lite_on_history
from gradmc.surrogates.kernels import gaussian_kernel, rational_quadratic_kernel, sigma_from_lengthscale
from gradmc.surrogates.lite import LiteSurrogate, fit_lite
from gradmc.surrogates.random_features import (
    RandomFourierFeatures,
    gaussian_random_features,
    rational_quadratic_random_features,
)
from gradmc.surrogates.score_matching import score_matching_objective

__all__ = [
    "CVResult",
    "FiniteSurrogate",
    "LiteSurrogate",
    "RandomFourierFeatures",
    "cross_validate",
    "cross_validate_finite",
    "cross_validate_finite_stats",
    "cross_validate_lite",
    "finite_statistics",
    "fit_finite",
    "fit_finite_from_statistics",
    "fit_lite",
    "fit_lite_on_history",
    "gaussian_kernel",
    "gaussian_random_features",
    "median_heuristic",
    "rational_quadratic_kernel",
    "rational_quadratic_random_features",
    "score_matching_objective",
    "sigma_from_lengthscale",
]
