"""Random Fourier features and their derivatives for KMC finite (paper eq. 8, Rahimi & Recht 2007).

    phi(x) = sqrt(2/m) cos(W x + u),   W (m, d) with rows omega_j,   u_j ~ U[0, 2 pi],

so that E[phi(x)^T phi(y)] = k(x - y) for the shift-invariant kernel whose spectral density the omega_j
are drawn from; the Monte Carlo error of the approximation is O(1/sqrt(m)).

- Gaussian, k(x, y) = exp(-||x - y||^2 / (2 s^2)) (= the lite kernel with sigma = 2 s^2):
  omega ~ N(0, s^-2 I).
- Rational quadratic, k(x, y) = (1 + ||x - y||^2 / (2 a s^2))^(-a): a Gamma scale mixture of Gaussians,
  k = E_tau[exp(-tau ||x - y||^2 / 2)] with tau ~ Gamma(shape a, rate a s^2) (mean 1 / s^2), hence
  omega = sqrt(tau) * N(0, I). The Gamma draws come from numpy seeded by one draw of the torch generator
  (torch's Gamma sampler takes no generator), so the features stay a function of the generator state.

Derivatives, per coordinate l (shapes (N, d, m), feature index last):
    phi'_l(x)  = -sqrt(2/m) sin(W x + u) * W[:, l],
    phi''_l(x) = -sqrt(2/m) cos(W x + u) * W[:, l]^2 = -phi(x) * W[:, l]^2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from gradmc.surrogates._checks import check_points, check_positive, check_positive_int
from gradmc.surrogates.kernels import gaussian_kernel, rational_quadratic_kernel, sigma_from_lengthscale

__all__ = ["RandomFourierFeatures", "gaussian_random_features", "rational_quadratic_random_features"]


@dataclass(frozen=True)
class RandomFourierFeatures:
    """A fixed draw of m random Fourier features on R^d.

    Attributes:
        omega: (m, d) frequencies (units 1 / units of x).
        u: (m,) phases in [0, 2 pi).
        kernel: the exact kernel the features approximate, (N, d), (M, d) -> (N, M).
        name: "gaussian" or "rational_quadratic", for provenance.
    """

    omega: torch.Tensor
    u: torch.Tensor
    kernel: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    name: str = "custom"

    def __post_init__(self):
        check_points(self.omega, name="omega")
        if self.u.shape != (self.omega.shape[0],):
            raise ValueError(f"u must have shape ({self.omega.shape[0]},), got {tuple(self.u.shape)}")

    @property
    def num_features(self) -> int:
        """m."""
        return self.omega.shape[0]

    @property
    def dim(self) -> int:
        """d."""
        return self.omega.shape[1]

    def _phase(self, x: torch.Tensor) -> torch.Tensor:
        check_points(x, dim=self.dim, name="x")
        return x.to(self.omega.dtype) @ self.omega.t() + self.u  # (N, m)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """phi(x) = sqrt(2/m) cos(W x + u): (N, d) -> (N, m)."""
        return math.sqrt(2.0 / self.num_features) * torch.cos(self._phase(x))

    def gradient(self, x: torch.Tensor) -> torch.Tensor:
        """phi'_l(x) = d phi / d x_l for every l: (N, d) -> (N, d, m)."""
        s = -math.sqrt(2.0 / self.num_features) * torch.sin(self._phase(x))  # (N, m)
        return s[:, None, :] * self.omega.t()[None, :, :]

    def second_derivatives(self, x: torch.Tensor) -> torch.Tensor:
        """phi''_l(x) = d^2 phi / d x_l^2 for every l: (N, d) -> (N, d, m)."""
        return -self.features(x)[:, None, :] * (self.omega.t() ** 2)[None, :, :]

    def laplacian(self, x: torch.Tensor) -> torch.Tensor:
        """sum_l phi''_l(x) = -phi(x) * ||omega_j||^2: (N, d) -> (N, m)."""
        return -self.features(x) * (self.omega**2).sum(-1)

    def approximate_kernel(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """phi(x_i)^T phi(y_j): (N, d), (M, d) -> (N, M)."""
        return self.features(x) @ self.features(y).t()


def _uniform_phases(m: int, generator, dtype) -> torch.Tensor:
    return 2.0 * math.pi * torch.rand(m, generator=generator, dtype=dtype)


def gaussian_random_features(dim: int, num_features: int, lengthscale: float,
                             generator: torch.Generator | None = None,
                             dtype: torch.dtype = torch.float64) -> RandomFourierFeatures:
    """Features for k(x, y) = exp(-||x - y||^2 / (2 s^2)): omega ~ N(0, s^-2 I), u ~ U[0, 2 pi].

    Args:
        dim: d >= 1. num_features: m >= 1. lengthscale: s > 0 (units of x).
        generator: CPU torch.Generator (None: the global one). dtype: of omega and u.

    Raises:
        ValueError: dim or num_features not a positive integer, lengthscale not > 0.
    """
    d = check_positive_int(dim, "dim")
    m = check_positive_int(num_features, "num_features")
    s = check_positive(lengthscale, "lengthscale")
    omega = torch.randn(m, d, generator=generator, dtype=dtype) / s
    u = _uniform_phases(m, generator, dtype)
    sigma = sigma_from_lengthscale(s)
    return RandomFourierFeatures(omega, u, lambda x, y: gaussian_kernel(x, y, sigma), "gaussian")


def rational_quadratic_random_features(dim: int, num_features: int, lengthscale: float, shape: float,
                                       generator: torch.Generator | None = None,
                                       dtype: torch.dtype = torch.float64) -> RandomFourierFeatures:
    """Features for k = (1 + ||x - y||^2 / (2 a s^2))^(-a) via tau ~ Gamma(a, rate a s^2), omega ~ N(0, tau I).

    Args:
        dim: d >= 1. num_features: m >= 1. lengthscale: s > 0. shape: a > 0.
        generator: CPU torch.Generator (None: the global one); it also seeds the numpy Gamma draws.
        dtype: of omega and u.

    Raises:
        ValueError: dim or num_features not a positive integer, lengthscale or shape not > 0.
    """
    d = check_positive_int(dim, "dim")
    m = check_positive_int(num_features, "num_features")
    s = check_positive(lengthscale, "lengthscale")
    a = check_positive(shape, "shape")
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    tau = np.random.default_rng(seed).gamma(shape=a, scale=1.0 / (a * s * s), size=m)
    omega = torch.randn(m, d, generator=generator, dtype=dtype) * torch.as_tensor(np.sqrt(tau), dtype=dtype)[:, None]
    u = _uniform_phases(m, generator, dtype)
    return RandomFourierFeatures(omega, u, lambda x, y: rational_quadratic_kernel(x, y, s, a), "rational_quadratic")
