"""KMC finite surrogate with online updates (Strathmann et al. 2015, eq. 8; docs/EXPERIMENTS.md B0).

f(x) = theta^T phi(x) with m random Fourier features phi (see ``random_features``). Over N points x_i:

    b = -(1/N) sum_i sum_l phi''_l(x_i),       C = (1/N) sum_i sum_l phi'_l(x_i) phi'_l(x_i)^T,
    theta = (C + lambda I)^-1 b,

the minimiser of the empirical score-matching objective -theta^T b + 0.5 theta^T C theta plus
(lambda/2)||theta||^2.

Online updates: a :class:`FiniteSurrogate` is an immutable value holding the running sums of b and C and
the count N; :meth:`FiniteSurrogate.update` returns a NEW surrogate with more points (the old one is
unchanged, so a frozen KMC kernel holding it never sees its surrogate change). With
phi'_l(x) = s(x) * omega_{:, l}, s(x) = -sqrt(2/m) sin(W x + u), the rank-d increment of C is
sum_l (s * w_l)(s * w_l)^T = (s s^T) o (W W^T) (o: elementwise), so a batch of B new points costs
O(B (m d + m^2) + m^2 d) (below the O(B d m^2) of B d rank-one updates). The solve is NOT updated by
rank-one Cholesky updates: because lambda I is added to the *mean* C, every new point rescales the whole
matrix, so the factor is recomputed (O(m^3)) when the new surrogate is built (only for N > 0). A sampler
that updates with probability a_t -> 0 (vanishing adaptation) pays it rarely.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from gradmc.surrogates._checks import check_points, check_positive
from gradmc.surrogates.random_features import RandomFourierFeatures

__all__ = ["FiniteSurrogate", "finite_system", "fit_finite"]


@dataclass(frozen=True, eq=False)
class FiniteSurrogate:
    """KMC finite surrogate f(x) = theta^T phi(x) over the statistics of N points (an immutable value).

    Args:
        features: the random Fourier features phi (m features on R^d).
        lam: ridge lambda > 0.
        num_points: N >= 0, the points the sums are over (0: an empty surrogate, only :meth:`update` works).
        b_sum: (m,) sum over the points of -sum_l phi''_l (None with N = 0: zeros).
        c_sum: (m, m) sum over the points of sum_l phi'_l phi'_l^T (None with N = 0: zeros).

    theta = (C + lambda I)^-1 b (by Cholesky) and the constants of :meth:`grad` are computed here, at
    construction (N > 0), and never change.

    Raises:
        ValueError: lam not > 0, num_points < 0.
    """

    features: RandomFourierFeatures
    lam: float
    num_points: int = 0
    b_sum: torch.Tensor | None = None
    c_sum: torch.Tensor | None = None
    _theta: torch.Tensor | None = field(init=False, repr=False, default=None)
    _grad_terms: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = field(init=False, repr=False,
                                                                                 default=None)

    def __post_init__(self):
        set_ = object.__setattr__  # frozen: the derived fields are set once, here
        set_(self, "lam", check_positive(self.lam, "lam"))
        if int(self.num_points) != self.num_points or self.num_points < 0:
            raise ValueError(f"num_points must be an integer >= 0, got {self.num_points}")
        m, dtype = self.features.num_features, self.features.omega.dtype
        if self.b_sum is None:
            set_(self, "b_sum", torch.zeros(m, dtype=dtype))
        if self.c_sum is None:
            set_(self, "c_sum", torch.zeros(m, m, dtype=dtype))
        if self.num_points == 0:
            return
        a = self.c + self.lam * torch.eye(m, dtype=self.c_sum.dtype)
        chol = torch.linalg.cholesky(0.5 * (a + a.t()))
        theta = torch.cholesky_solve(self.b[:, None], chol)[:, 0]
        set_(self, "_theta", theta)
        omega = self.features.omega
        set_(self, "_grad_terms", (omega.t().contiguous(), -math.sqrt(2.0 / m) * theta, omega))

    @property
    def dim(self) -> int:
        """d."""
        return self.features.dim

    def update(self, x: torch.Tensor) -> FiniteSurrogate:
        """A new surrogate over the points seen so far plus x (B, d), O(B (m d + m^2) + m^3); self is unchanged.

        Raises:
            ValueError: x is not a floating (B, d) tensor with finite entries.
        """
        check_points(x, dim=self.dim, name="x")
        omega = self.features.omega
        phi = self.features.features(x)  # (B, m)
        s = -math.sqrt(2.0 / self.features.num_features) * torch.sin(self.features._phase(x))  # (B, m)
        b_sum = self.b_sum + (phi * (omega**2).sum(-1)).sum(0)  # -sum_l phi''_l = phi * ||omega_j||^2
        c_sum = self.c_sum + (s.t() @ s) * (omega @ omega.t())  # (s s^T) o (W W^T)
        return FiniteSurrogate(self.features, self.lam, self.num_points + x.shape[0], b_sum, c_sum)

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
        """(m,) theta = (C + lambda I)^-1 b (computed at construction). Raises ValueError before any point."""
        self._require_points()
        return self._theta

    def _require_points(self) -> None:
        if self.num_points == 0:
            raise ValueError("the surrogate has seen no points yet: use update(x), which returns one that has")

    def log_density(self, x: torch.Tensor) -> torch.Tensor:
        """f(x) = theta^T phi(x): (N, d) -> (N,)."""
        return self.features.features(x) @ self.theta

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """grad f(x) = sum_j theta_j phi_j'(x) = W^T (theta o s(x)), s = -sqrt(2/m) sin(W x + u): (N, d) -> (N, d).

        The hot call of every KMC leapfrog step: two matrix products and one sin over (N, m), without
        forming the (N, d, m) derivative tensor and with a shape check only (no finiteness scan, which
        would synchronise an accelerator); :meth:`update` checks the data it is fitted on.

        Raises:
            ValueError: x is not (N, d), or the surrogate has seen no points.
        """
        if x.dim() != 2 or x.shape[1] != self.features.omega.shape[1]:
            raise ValueError(f"x must have shape (num_points, {self.dim}), got {tuple(x.shape)}")
        self._require_points()
        omega_t, scaled, omega = self._grad_terms
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
    lam = check_positive(lam, "lam")
    b, c = finite_system(x, features)
    return FiniteSurrogate(features, lam, x.shape[0], b * x.shape[0], c * x.shape[0])
