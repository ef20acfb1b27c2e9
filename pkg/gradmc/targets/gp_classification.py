"""Pseudo-marginal target of GP classification hyper-parameters (docs/EXPERIMENTS.md B3, KMC Fig. 4 left).

Model. Inputs X (n, D), labels y in {0, 1} (t = 2y - 1 in {-1, +1}). Latent f ~ N(0, K_theta) with the ARD
Gaussian covariance

    K_theta[i, j] = exp(-0.5 * sum_d (X[i, d] - X[j, d])^2 / exp(theta_d)) + jitter * [i == j],

i.e. theta_d = log ell_d^2 (log squared length-scale), unit signal variance, and a fixed ``jitter`` that
is part of the model (the same K is used everywhere). Likelihood p(y | f) = prod_i sigmoid(t_i f_i)
(logistic). Prior theta ~ N(0, prior_var I).

Estimator. q(f) = N(f_hat, Sigma) is the Laplace approximation of p(f | y, theta) (Newton's method as in
Rasmussen & Williams 2006, Algorithm 3.1/3.2): f_hat the posterior mode, Sigma = (K^-1 + W)^-1 with
W = diag(pi (1 - pi)). With f_s ~ q, s = 1..S, independent,

    p_hat(y | theta) = (1/S) sum_s p(y | f_s) N(f_s; 0, K) / q(f_s),

and E_q[p(y | f) N(f; 0, K) / q(f)] = int p(y | f) N(f; 0, K) df = p(y | theta) because q > 0 everywhere:
p_hat is unbiased for ANY such q, in particular for the q actually sampled (we draw f_s = f_hat + L z_s
with L the computed Cholesky factor of Sigma and evaluate log q from the same z_s and L, so numerical
error in Sigma changes the variance, never the mean). Its log is computed with logsumexp.
"""

from __future__ import annotations

import math

import torch

__all__ = ["GPClassificationPosterior"]

_LOG_2PI = math.log(2.0 * math.pi)


class GPClassificationPosterior:
    """log p(theta) + log p_hat(y | theta) for theta (C, D): a target for PseudoMarginalMH.

    Args:
        X: (n, D) float inputs (standardised for Glass), y: (n,) labels in {0, 1}.
        num_importance_samples: S, samples from the Laplace approximation per estimate (B3: 100).
        prior_var: variance of the N(0, prior_var I) prior on theta (B3: 5).
        jitter: added to the diagonal of K (model definition, see the module docstring).
        newton_tol, max_newton: Newton stops when every chain's objective changes by < newton_tol.

    Costs per call on C chains: Newton O(iters C n^3), sampling O(C n^3 + C S n^2); memory O(C n^2 + C S n).

    Raises:
        ValueError: at construction, for bad shapes, labels outside {0, 1}, or non-positive settings.
    """

    def __init__(
        self,
        X,
        y,
        num_importance_samples: int = 100,
        prior_var: float = 5.0,
        *,
        jitter: float = 1e-6,
        newton_tol: float = 1e-9,
        max_newton: int = 100,
    ):
        X = torch.as_tensor(X, dtype=torch.float64)
        y = torch.as_tensor(y)
        if X.ndim != 2 or y.ndim != 1 or y.shape[0] != X.shape[0] or X.shape[0] < 1:
            raise ValueError(f"need X (n, D) and y (n,), got {tuple(X.shape)} and {tuple(y.shape)}")
        if not bool(((y == 0) | (y == 1)).all()):
            raise ValueError("labels y must be 0 or 1")
        if not bool(torch.isfinite(X).all()):
            raise ValueError("inputs X must be finite")
        if int(num_importance_samples) != num_importance_samples or num_importance_samples < 1:
            raise ValueError(f"num_importance_samples must be an integer >= 1, got {num_importance_samples}")
        if not (math.isfinite(prior_var) and prior_var > 0 and jitter >= 0 and newton_tol > 0 and max_newton >= 1):
            raise ValueError("prior_var must be finite and > 0, jitter >= 0, newton_tol > 0, max_newton >= 1")
        self.X = X
        self.t = 2.0 * y.to(torch.float64) - 1.0  # (n,) in {-1, +1}
        self.y01 = y.to(torch.float64)
        self.n, self.dim = X.shape
        self.num_importance_samples = int(num_importance_samples)
        self.prior_var = float(prior_var)
        self.jitter = float(jitter)
        self.newton_tol = float(newton_tol)
        self.max_newton = int(max_newton)
        self._sqdiff = (X[:, None, :] - X[None, :, :]) ** 2  # (n, n, D)

    # --- pieces -------------------------------------------------------------------------------------

    def _check(self, theta: torch.Tensor) -> torch.Tensor:
        if theta.ndim != 2 or theta.shape[1] != self.dim:
            raise ValueError(f"theta must be (C, {self.dim}), got {tuple(theta.shape)}")
        return theta.to(torch.float64)

    def covariance(self, theta: torch.Tensor) -> torch.Tensor:
        """K_theta (C, n, n) for theta (C, D) (jitter included)."""
        theta = self._check(theta)
        r2 = torch.einsum("ijd,cd->cij", self._sqdiff, torch.exp(-theta))
        return torch.exp(-0.5 * r2) + self.jitter * torch.eye(self.n, dtype=torch.float64)

    def log_prior(self, theta: torch.Tensor) -> torch.Tensor:
        """log N(theta; 0, prior_var I): (C, D) -> (C,)."""
        theta = self._check(theta)
        return -0.5 * (theta**2).sum(-1) / self.prior_var - 0.5 * self.dim * (_LOG_2PI + math.log(self.prior_var))

    def log_lik(self, f: torch.Tensor) -> torch.Tensor:
        """log p(y | f) = sum_i log sigmoid(t_i f_i): (..., n) -> (...)."""
        return torch.nn.functional.logsigmoid(self.t * f).sum(-1)

    def laplace(self, theta: torch.Tensor):
        """Newton mode search for all chains at once (R&W Alg. 3.1).

        Returns (K (C,n,n), f_hat (C,n), sqrt_w (C,n), chol_B (C,n,n), a (C,n)) at convergence, with
        B = I + W^1/2 K W^1/2 = chol_B chol_B^T and f_hat = K a.
        """
        K = self.covariance(theta)
        C, n = K.shape[0], self.n
        eye = torch.eye(n, dtype=torch.float64)
        f = torch.zeros(C, n, dtype=torch.float64)
        a = torch.zeros_like(f)
        obj = torch.full((C,), -math.inf, dtype=torch.float64)
        for _ in range(self.max_newton):
            pi = torch.sigmoid(f)
            w = pi * (1.0 - pi)
            sw = w.sqrt()
            B = eye + sw[:, :, None] * K * sw[:, None, :]
            L = torch.linalg.cholesky(B)
            b = w * f + (self.y01 - pi)  # W f + grad log p(y|f)
            Kb = (K @ b[:, :, None]).squeeze(-1)
            v = torch.cholesky_solve((sw * Kb)[:, :, None], L).squeeze(-1)
            a = b - sw * v
            f = (K @ a[:, :, None]).squeeze(-1)
            new_obj = -0.5 * (a * f).sum(-1) + self.log_lik(f)
            done = bool(((new_obj - obj).abs() < self.newton_tol).all())
            obj = new_obj
            if done:
                break
        pi = torch.sigmoid(f)
        sw = (pi * (1.0 - pi)).sqrt()
        L = torch.linalg.cholesky(eye + sw[:, :, None] * K * sw[:, None, :])
        return K, f, sw, L, a

    def laplace_log_marginal(self, theta: torch.Tensor) -> torch.Tensor:
        """Deterministic Laplace approximation of log p(y | theta) (R&W eq. 3.32): (C, D) -> (C,)."""
        _, f, _, L, a = self.laplace(theta)
        return -0.5 * (a * f).sum(-1) + self.log_lik(f) - torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)

    def log_marginal_estimate(
        self, theta: torch.Tensor, generator: torch.Generator, num_samples: int | None = None
    ) -> torch.Tensor:
        """log p_hat(y | theta), the log of the unbiased importance-sampling estimate: (C, D) -> (C,)."""
        S = self.num_importance_samples if num_samples is None else int(num_samples)
        K, f_hat, sw, L, _ = self.laplace(theta)
        C, n = f_hat.shape
        eye = torch.eye(n, dtype=torch.float64)
        # Sigma = K - K W^1/2 B^-1 W^1/2 K = K - V^T V with V = L^-1 W^1/2 K
        V = torch.linalg.solve_triangular(L, sw[:, :, None] * K, upper=False)
        Sigma = K - V.transpose(-1, -2) @ V
        Sigma = 0.5 * (Sigma + Sigma.transpose(-1, -2))
        L_q, info = torch.linalg.cholesky_ex(Sigma)
        extra = max(self.jitter, 1e-10)
        while bool((info != 0).any()):  # only the factor used below defines q: unbiasedness is kept
            L_q, info = torch.linalg.cholesky_ex(Sigma + extra * eye)
            extra *= 10.0
        L_K = torch.linalg.cholesky(K)
        z = torch.randn((C, n, S), generator=generator, dtype=torch.float64)
        f = f_hat[:, :, None] + L_q @ z  # (C, n, S)
        log_q = -0.5 * (z**2).sum(1) - torch.log(torch.diagonal(L_q, dim1=-2, dim2=-1)).sum(-1, keepdim=True)
        u = torch.linalg.solve_triangular(L_K, f, upper=False)
        log_p_f = -0.5 * (u**2).sum(1) - torch.log(torch.diagonal(L_K, dim1=-2, dim2=-1)).sum(-1, keepdim=True)
        log_w = self.log_lik(f.transpose(1, 2)) + log_p_f - log_q  # (C, S); the 2 pi terms cancel
        return torch.logsumexp(log_w, dim=1) - math.log(S)

    def log_prob(self, theta: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """log p(theta) + log p_hat(y | theta): (C, D) -> (C,), fresh randomness from generator."""
        return self.log_prior(theta) + self.log_marginal_estimate(theta, generator)

    __call__ = log_prob
