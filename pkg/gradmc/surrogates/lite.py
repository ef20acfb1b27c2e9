"""KMC lite surrogate (Strathmann et al. 2015, eq. 7; docs/EXPERIMENTS.md B0).

f(x) = sum_i alpha_i k(z_i, x) with the Gaussian k(x, y) = exp(-||x - y||^2 / sigma) over n points z
(a sub-sample of the chain history). With X the (n, d) matrix of the z_i, x_l its column l,
s_l = x_l * x_l, D_v = diag(v), K the kernel matrix:

    b = sum_l [ (2/sigma)(K s_l + D_{s_l} K 1 - 2 D_{x_l} K x_l) - K 1 ],
    C = sum_l (D_{x_l} K - K D_{x_l})(K D_{x_l} - D_{x_l} K),
    alpha = -(sigma/2) (C + lambda R)^-1 b.

The empirical score-matching objective of f on X is (1/n)[(2/sigma) alpha^T b + (2/sigma^2) alpha^T C alpha],
so alpha above is its exact minimiser plus the penalty (2 lambda / (n sigma^2)) alpha^T R alpha.
Regulariser R: ``"identity"`` (default, R = I: a plain ridge on alpha, as in the paper's eq. 7) or
``"kernel"`` (R = K + I, what the authors' code uses: it adds the RKHS norm ||f||_H^2 = alpha^T K alpha).
b and C cost O(n^2 d) memory and O(n^3 d) time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gradmc.surrogates._checks import check_points, check_positive
from gradmc.surrogates.kernels import gaussian_kernel

__all__ = ["LiteSurrogate", "lite_system", "fit_lite"]

_REGULARISERS = ("identity", "kernel")


@dataclass(frozen=True)
class LiteSurrogate:
    """A fitted KMC lite surrogate f(x) = sum_i alpha_i exp(-||z_i - x||^2 / sigma).

    Attributes:
        z: (n, d) basis points. alpha: (n,) coefficients. sigma: kernel width (units of x^2).
        lam: ridge lambda. regulariser: "identity" or "kernel".
    """

    z: torch.Tensor
    alpha: torch.Tensor
    sigma: float
    lam: float
    regulariser: str = "identity"

    @property
    def dim(self) -> int:
        """d."""
        return self.z.shape[1]

    def _kernel(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_points(x, dim=self.dim, name="x")
        x = x.to(self.z.dtype)
        return x, gaussian_kernel(x, self.z, self.sigma)  # (N, n)

    def log_density(self, x: torch.Tensor) -> torch.Tensor:
        """f(x), the unnormalised log-density surrogate: (N, d) -> (N,)."""
        _, k = self._kernel(x)
        return k @ self.alpha

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        """grad f(x) = sum_i alpha_i (2/sigma)(z_i - x) k(z_i, x): (N, d) -> (N, d)."""
        x, k = self._kernel(x)
        w = k * self.alpha  # (N, n)
        return (2.0 / self.sigma) * (w @ self.z - w.sum(-1, keepdim=True) * x)

    def laplacian(self, x: torch.Tensor) -> torch.Tensor:
        """sum_l d^2 f / dx_l^2 = sum_i alpha_i k(z_i, x) [(4/sigma^2)||z_i - x||^2 - 2d/sigma]: (N, d) -> (N,)."""
        x, k = self._kernel(x)
        r2 = ((x[:, None, :] - self.z[None, :, :]) ** 2).sum(-1)  # (N, n)
        return (k * ((4.0 / self.sigma**2) * r2 - 2.0 * self.dim / self.sigma)) @ self.alpha


def lite_system(z: torch.Tensor, sigma: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """b (n,), C (n, n) and K (n, n) of eq. 7 for the points z (n, d).

    Raises:
        ValueError: z not a floating (n, d) tensor with n >= 1, or sigma not > 0.
    """
    check_points(z, name="z")
    sigma = check_positive(sigma, "sigma")
    k = gaussian_kernel(z, z, sigma)  # (n, n)
    s = z * z  # (n, d), column l is s_l
    k1 = k.sum(-1, keepdim=True)  # (n, 1) = K 1
    # sum over l of K s_l + D_{s_l} K 1 - 2 D_{x_l} K x_l, all columns at once
    b = ((2.0 / sigma) * (k @ s + s * k1 - 2.0 * z * (k @ z))).sum(-1) - z.shape[1] * k1[:, 0]
    # M_l = K D_{x_l} - D_{x_l} K, (M_l)_{ji} = k_ji (x_il - x_jl); C = sum_l M_l^T M_l
    m = k[None, :, :] * (z.t()[:, None, :] - z.t()[:, :, None])  # (d, n, n)
    c = torch.einsum("lji,ljk->ik", m, m)
    return b, c, k


def fit_lite(z: torch.Tensor, sigma: float, lam: float, regulariser: str = "identity") -> LiteSurrogate:
    """Fit alpha = -(sigma/2)(C + lambda R)^-1 b on the points z (n, d) (eq. 7).

    Args:
        z: (n, d) floating points (use float64: C is ill-conditioned for small lambda).
        sigma: kernel width > 0 (units of x^2). lam: ridge lambda > 0.
        regulariser: "identity" (R = I) or "kernel" (R = K + I, the authors' code).

    Raises:
        ValueError: bad shape or dtype of z, sigma or lam not > 0, unknown regulariser.
    """
    lam = check_positive(lam, "lam")
    if regulariser not in _REGULARISERS:
        raise ValueError(f"regulariser must be one of {_REGULARISERS}, got {regulariser!r}")
    b, c, k = lite_system(z, sigma)
    eye = torch.eye(z.shape[0], dtype=z.dtype)
    reg = eye if regulariser == "identity" else k + eye
    a = c + lam * reg
    alpha = -(sigma / 2.0) * torch.linalg.solve(0.5 * (a + a.t()), b)
    return LiteSurrogate(z=z, alpha=alpha, sigma=float(sigma), lam=lam, regulariser=regulariser)
