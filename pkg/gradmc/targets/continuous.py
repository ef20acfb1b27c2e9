"""Continuous targets of the Kernel HMC experiments (docs/EXPERIMENTS.md Part B, B1 and B2).

Each target is a callable ``log_prob(x: (C, d)) -> (C,)`` (normalised, differentiable in x) that also
offers ``log_prob_and_grad(x) -> ((C,), (C, d))`` in closed form (used by
:func:`gradmc.core.gradients.log_prob_and_grad`), ``grad(x) -> (C, d)`` and exact sampling
``sample(n, generator) -> (n, d)``.
"""

from __future__ import annotations

import math

import torch

__all__ = ["Gaussian", "random_gamma_gaussian", "Banana"]

_LOG_2PI = math.log(2.0 * math.pi)


class Gaussian:
    """Multivariate normal N(mean, cov) on R^d.

    Args:
        mean: (d,) float tensor.
        cov: (d, d) symmetric positive-definite tensor (same dtype and device as mean).

    Costs: construction O(d^3) (Cholesky and precision); log_prob and grad O(C d^2).

    Raises:
        ValueError: if the shapes disagree, cov is not symmetric, or its Cholesky factorisation fails.
    """

    def __init__(self, mean: torch.Tensor, cov: torch.Tensor):
        if mean.ndim != 1 or cov.shape != (mean.shape[0], mean.shape[0]):
            raise ValueError(f"Gaussian needs mean (d,) and cov (d, d), got {tuple(mean.shape)}, {tuple(cov.shape)}")
        if not torch.allclose(cov, cov.T, rtol=1e-6, atol=1e-8):
            raise ValueError("Gaussian covariance must be symmetric")
        chol, info = torch.linalg.cholesky_ex(cov)
        if bool(info != 0):
            raise ValueError("Gaussian covariance must be positive definite")
        self.mean = mean
        self.cov = cov
        self.chol = chol  # (d, d) lower
        self.precision = torch.cholesky_inverse(chol)  # (d, d)
        self.dim = mean.shape[0]
        self._log_norm = -0.5 * self.dim * _LOG_2PI - torch.log(torch.diagonal(chol)).sum()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """log N(x; mean, cov): (C, d) -> (C,)."""
        r = x - self.mean
        return self._log_norm - 0.5 * ((r @ self.precision) * r).sum(-1)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """Score -cov^-1 (x - mean): (C, d) -> (C, d)."""
        return -(x - self.mean) @ self.precision

    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Closed form (log N(x), score): (C, d) -> (C,), (C, d)."""
        g = self.grad(x)
        return self._log_norm + 0.5 * (g * (x - self.mean)).sum(-1), g

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """n exact draws mean + L z, z ~ N(0, I): (n, d)."""
        z = torch.randn((n, self.dim), generator=generator, dtype=self.mean.dtype, device=self.mean.device)
        return self.mean + z @ self.chol.T


def random_gamma_gaussian(d: int, generator: torch.Generator, dtype: torch.dtype = torch.float64) -> Gaussian:
    """The B1 target: zero-mean Gaussian, covariance Q diag(lambda) Q^T, lambda_i ~ Gamma(1, 1), Q Haar.

    Gamma(1, 1) is Exponential(1), drawn by inversion -log(1 - U). Q is the Q factor of the QR
    decomposition of a d x d standard normal matrix with its columns' signs fixed by sign(diag R),
    which makes Q Haar-distributed on O(d) (Mezzadri 2007). Cost O(d^3).

    Raises:
        ValueError: if d < 1.
    """
    if int(d) != d or d < 1:
        raise ValueError(f"dimension must be an integer >= 1, got {d}")
    dev = generator.device
    u = torch.rand(d, generator=generator, dtype=dtype, device=dev)
    eig = -torch.log1p(-u)  # (d,) Exponential(1)
    q, r = torch.linalg.qr(torch.randn((d, d), generator=generator, dtype=dtype, device=dev))
    q = q * torch.sign(torch.diagonal(r))  # (d, d)
    cov = (q * eig) @ q.T
    return Gaussian(torch.zeros(d, dtype=dtype, device=dev), 0.5 * (cov + cov.T))


class Banana:
    """Haario et al. (1999) banana, the B2 target: y = T(x), x ~ N(0, diag(V, 1, ..., 1)),
    y_2 = x_2 + b (x_1^2 - V), other coordinates unchanged. T has unit Jacobian, so

        log p(y) = log N(y_1; 0, V) + log N(r; 0, 1) + sum_{k>2} log N(y_k; 0, 1),  r = y_2 - b (y_1^2 - V),

    with gradient (-y_1 / V + 2 b y_1 r, -r, -y_3, ..., -y_d). E[y] = 0 exactly. Costs O(C d).

    Args:
        d: dimension >= 2 (B2: 8). V: variance of x_1 > 0 (100). b: bananicity (0.03).
        dtype, device: of the samples drawn by :meth:`sample`.

    Raises:
        ValueError: if d < 2 or V <= 0.
    """

    def __init__(self, d: int = 8, V: float = 100.0, b: float = 0.03, dtype: torch.dtype = torch.float64,
                 device: str | torch.device = "cpu"):
        if int(d) != d or d < 2:
            raise ValueError(f"Banana dimension must be an integer >= 2, got {d}")
        if not (math.isfinite(V) and V > 0):
            raise ValueError(f"Banana V must be finite and > 0, got {V}")
        self.dim, self.V, self.b, self.dtype, self.device = int(d), float(V), float(b), dtype, device
        self._log_norm = -0.5 * self.dim * _LOG_2PI - 0.5 * math.log(self.V)

    def _r(self, y: torch.Tensor) -> torch.Tensor:
        return y[:, 1] - self.b * (y[:, 0] ** 2 - self.V)

    def __call__(self, y: torch.Tensor) -> torch.Tensor:
        """log p(y): (C, d) -> (C,)."""
        r = self._r(y)
        return self._log_norm - 0.5 * (y[:, 0] ** 2 / self.V + r**2 + (y[:, 2:] ** 2).sum(-1))

    def grad(self, y: torch.Tensor) -> torch.Tensor:
        """grad log p(y): (C, d) -> (C, d)."""
        r = self._r(y)
        g0 = -y[:, 0] / self.V + 2.0 * self.b * y[:, 0] * r
        return torch.cat([g0[:, None], -r[:, None], -y[:, 2:]], dim=1)

    def log_prob_and_grad(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Closed form (log p(y), grad): (C, d) -> (C,), (C, d)."""
        return self(y), self.grad(y)

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """n exact draws y = T(x): (n, d)."""
        x = torch.randn((n, self.dim), generator=generator, dtype=self.dtype, device=self.device)
        x0 = x[:, :1] * math.sqrt(self.V)
        y1 = x[:, 1:2] + self.b * (x0**2 - self.V)
        return torch.cat([x0, y1, x[:, 2:]], dim=1)
