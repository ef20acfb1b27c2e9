"""Exact kernels used by the KMC surrogates (Strathmann et al. 2015; docs/EXPERIMENTS.md B0).

Convention (KMC lite, paper eq. 7): the Gaussian kernel is written with a *width* sigma and no factor 2,

    k(x, y) = exp(-||x - y||^2 / sigma),

so it equals the length-scale form exp(-||x - y||^2 / (2 s^2)) used by the random features exactly when
sigma = 2 s^2 (see :func:`sigma_from_lengthscale`). The rational-quadratic kernel (Fig. 2) is

    k(x, y) = (1 + ||x - y||^2 / (2 a s^2))^(-a),    a > 0 the shape, s > 0 the length scale,

which tends to the length-scale Gaussian as a -> infinity.
"""

from __future__ import annotations

import torch

from gradmc.surrogates._checks import check_points, check_positive

__all__ = [
    "squared_distances",
    "gaussian_kernel",
    "rational_quadratic_kernel",
    "sigma_from_lengthscale",
    "lengthscale_from_sigma",
]


def squared_distances(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Pairwise squared Euclidean distances ||x_i - y_j||^2: (N, d), (M, d) -> (N, M), clamped at 0.

    Raises:
        ValueError: x and y are not 2-D floating tensors with the same number of columns.
    """
    check_points(x, name="x")
    check_points(y, dim=x.shape[1], name="y")
    d2 = (x * x).sum(-1)[:, None] + (y * y).sum(-1)[None, :] - 2.0 * x @ y.t()
    return d2.clamp_min(0.0)


def gaussian_kernel(x: torch.Tensor, y: torch.Tensor, sigma: float) -> torch.Tensor:
    """Gaussian kernel matrix exp(-||x_i - y_j||^2 / sigma) (KMC lite convention): (N, d), (M, d) -> (N, M).

    Raises:
        ValueError: bad shapes, or sigma not a finite number > 0.
    """
    sigma = check_positive(sigma, "sigma")
    return torch.exp(-squared_distances(x, y) / sigma)


def rational_quadratic_kernel(x: torch.Tensor, y: torch.Tensor, lengthscale: float, shape: float) -> torch.Tensor:
    """Rational-quadratic kernel (1 + ||x_i - y_j||^2 / (2 a s^2))^(-a): (N, d), (M, d) -> (N, M).

    Args:
        lengthscale: s > 0, same units as x.
        shape: a > 0 (the Gamma shape of the scale mixture, see ``random_features``).

    Raises:
        ValueError: bad shapes, or lengthscale / shape not finite and > 0.
    """
    s = check_positive(lengthscale, "lengthscale")
    a = check_positive(shape, "shape")
    return (1.0 + squared_distances(x, y) / (2.0 * a * s * s)) ** (-a)


def sigma_from_lengthscale(lengthscale: float) -> float:
    """The width sigma = 2 s^2 for which exp(-r^2 / sigma) equals exp(-r^2 / (2 s^2))."""
    s = check_positive(lengthscale, "lengthscale")
    return 2.0 * s * s


def lengthscale_from_sigma(sigma: float) -> float:
    """The length scale s = sqrt(sigma / 2), inverse of :func:`sigma_from_lengthscale`."""
    return (check_positive(sigma, "sigma") / 2.0) ** 0.5
