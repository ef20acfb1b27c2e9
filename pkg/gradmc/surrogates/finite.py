"""KMC finite surrogate with online updates (Strathmann et al. 2015, eq. 8; docs/EXPERIMENTS.md B0).

f(x) = theta^T phi(x) with m random Fourier features phi (see ``random_features``). Over N points x_i:

    b = -(1/N) sum_i sum_l phi''_l(x_i),       C = (1/N) sum_i sum_l phi'_l(x_i) phi'_l(x_i)^T,
    theta = (C + lambda I)^-1 b,

the minimiser of the empirical score-matching objective -theta^T b + 0.5 theta^T C theta plus
(lambda/2)||theta||^2.

Online updates: :class:`FiniteSurrogate` keeps the running sums of b and C and the count N. With
phi'_l(x) = s(x) * omega_{:, l}, s(x) = -sqrt(2/m) sin(W x + u), the rank-d increment of C is
sum_l (s * w_l)(s * w_l)^T = (s s^T) o (W W^T) (o: elementwise), so a new point costs O(m d + m^2) with
W W^T cached (below the O(d m^2) of d rank-one updates). The solve is NOT updated by rank-one Cholesky
updates: because lambda I is added to the *mean* C, every new point rescales the whole matrix, so the
factor is recomputed (O(m^3)) lazily the first time theta is needed after an update and cached until the
next one. A sampler that updates with probability a_t -> 0 (vanishing adaptation) pays it rarely.
"""

from __future__ import annotations

import math

import torch

from gradmc.surrogates._checks import check_points, check_positive
from gradmc.surrogates.random_features import RandomFourierFeatures

__all__ = ["FiniteSurrogate", "finite_system", "fit_finite"]


class FiniteSurrogate:
    """KMC finite surrogate f(x) = theta^T phi(x) whose statistics grow one point (or batch) at a time.

    Args:
        features: the random Fourier features phi (fixed for the lifetime of the surrogate).
        lam: ridge lambda > 0.

    Raises:
        ValueError: lam not > 0.
    """

    def __init__(self, features: RandomFourierFeatures, lam: float):
        self.features = features
        self.lam = check_positive(lam, "lam")
        m, dtype = features.num_features, features.omega.dtype
        self.num_points = 0
        self.b_sum = torch.zeros(m, dtype=dtype)
        self.c_sum = torch.zeros(m, m, dtype=dtype)
        self._gram = features.omega @ features.omega.t()  # (m, m) = W W^T
        self._sq_norms = (features.omega**2).sum(-1)  # (m,) = ||omega_j||^2
        self._theta: torch.Tensor | None = None
        self._grad_cache: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    @property
    def dim(self) -> int:
        """d."""
        return self.features.dim

    def update(self, x: torch.Tensor) -> FiniteSurrogate:
        """Add the points x (B, d) to the statistics, O(B (m d + m^2)); returns self.

        Raises:
            ValueError: x is not a floating (B, d) tensor with finite entries.
        """
        check_points(x, dim=self.dim, name="x")
        phi = self.features.features(x)  # (B, m)
        s = -math.sqrt(2.0 / self.features.num_features) * torch.sin(self.features._phase(x))  # (B, m)
        self.b_sum += (phi * self._sq_norms).sum(0)  # -sum_l phi''_l = phi * ||omega||^2
        self.c_sum += (s.t() @ s) * self._gram
        self.num_points += x.shape[0]
        self._theta = None
        self._grad_cache = None
        return self

    @property
    def b(self) -> torch.Tensor:
        """(m,) mean b over the points seen. Raises ValueError before any point."""
        self._require_points()
        return self.b_sum / self.num_points

    @property
    def c(self) -> torch.Tensor:
        """(m, m) mean C over the points seen. Raises ValueError before any point."""
        self._require_points()
        return self.c_sum / self.num_points

    @property
    def theta(self) -> torch.Tensor:
        """(m,) theta = (C + lambda I)^-1 b by Cholesky, cached until the next update."""
        if self._theta is None:
            a = self.c + self.lam * torch.eye(self.features.num_features, dtype=self.c_sum.dtype)
            chol = torch.linalg.cholesky(0.5 * (a + a.t()))
            self._theta = torch.cholesky_solve(self.b[:, None], chol)[:, 0]
        return self._theta

    def _require_points(self) -> None:
        if self.num_points == 0:
            raise ValueError("the surrogate has seen no points yet: call update(x) first")

    def log_density(self, x: torch.Tensor) -> torch.Tensor:
        """f(x) = theta^T phi(x): (N, d) -> (N,)."""
        return self.features.features(x) @ self.theta

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """grad f(x) = sum_j theta_j phi_j'(x) = W^T (theta o s(x)), s = -sqrt(2/m) sin(W x + u): (N, d) -> (N, d).

        The hot call of every KMC leapfrog step: two matrix products and one sin over (N, m), without
        forming the (N, d, m) derivative tensor and with a shape check only (no finiteness scan, which
        would synchronise an accelerator); :meth:`update` checks the data it is fitted on.

        Raises:
            ValueError: x is not (N, d).
        """
        if x.dim() != 2 or x.shape[1] != self.features.omega.shape[1]:
            raise ValueError(f"x must have shape (num_points, {self.dim}), got {tuple(x.shape)}")
        if self._grad_cache is None or self._theta is None:
            omega = self.features.omega
            scaled = -math.sqrt(2.0 / self.features.num_features) * self.theta
            self._grad_cache = (omega.t().contiguous(), scaled, omega)
        omega_t, scaled, omega = self._grad_cache
        phase = torch.addmm(self.features.u, x if x.dtype == omega.dtype else x.to(omega.dtype), omega_t)  # (N, m)
        return (torch.sin(phase) * scaled) @ omega

    def laplacian(self, x: torch.Tensor) -> torch.Tensor:
        """sum_l d^2 f / dx_l^2 = theta^T sum_l phi''_l(x): (N, d) -> (N,)."""
        return self.features.laplacian(x) @ self.theta


def finite_system(x: torch.Tensor, features: RandomFourierFeatures) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch b (m,) and C (m, m) of eq. 8 over x (N, d), from the explicit derivative tensors.

    Memory O(N d m). Raises ValueError for a bad shape of x.
    """
    check_points(x, dim=features.dim, name="x")
    b = -features.second_derivatives(x).sum(1).mean(0)
    g = features.gradient(x)  # (N, d, m)
    c = torch.einsum("nlj,nlk->jk", g, g) / x.shape[0]
    return b, c


def fit_finite(x: torch.Tensor, features: RandomFourierFeatures, lam: float) -> FiniteSurrogate:
    """Batch fit of theta = (C + lambda I)^-1 b on x (N, d); the result can still be updated online.

    Raises:
        ValueError: bad shape of x, lam not > 0.
    """
    sur = FiniteSurrogate(features, lam)
    b, c = finite_system(x, features)
    sur.b_sum, sur.c_sum, sur.num_points = b * x.shape[0], c * x.shape[0], x.shape[0]
    return sur
