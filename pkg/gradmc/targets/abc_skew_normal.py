"""ABC posterior of the location of a 10-D skew normal (docs/EXPERIMENTS.md B4, KMC Fig. 4 right).

Likelihood p(y | theta) = 2 N(y; theta, I) Phi(<alpha, y - theta>) (Azzalini & Dalla Valle 1996, scale
Omega = I). Simulation uses the additive half-normal representation (Azzalini & Capitanio 1999): with
delta = alpha / sqrt(1 + alpha^T alpha), U0 ~ N(0, 1) and U ~ N(0, I - delta delta^T) independent,

    y = theta + delta |U0| + U,

and U = (I - c delta delta^T) z, z ~ N(0, I), c = (1 - sqrt(1 - |delta|^2)) / |delta|^2, since
(I - c dd^T)^2 = I - (2c - c^2 |d|^2) dd^T = I - dd^T. Hence E[y] = theta + sqrt(2/pi) delta and
Cov[y] = I - (2/pi) delta delta^T.

B4: theta_true = alpha = 10 * 1, d = 10; summary s = mean of 10 draws; s_obs from theta_true with a fixed
seed; prior N(0, 25 I); Gaussian ABC kernel, eps = 0.55, M = 10 simulations per estimate:

    p_hat(s_obs | theta) = (1/M) sum_m N(s_obs; s_m, eps^2 I),  s_m iid summaries simulated at theta,

an unbiased estimate of the ABC likelihood p_eps(s_obs | theta) = E[N(s_obs; s, eps^2 I)].
"""

from __future__ import annotations

import math

import torch

__all__ = ["SkewNormalSimulator", "ABCSkewNormalPosterior"]

_LOG_2PI = math.log(2.0 * math.pi)


class SkewNormalSimulator:
    """Exact draws from SN_d(theta, I, alpha).

    Args:
        alpha: (d,) float shape vector.

    Attributes:
        delta: (d,) alpha / sqrt(1 + alpha^T alpha).
    """

    def __init__(self, alpha: torch.Tensor):
        alpha = torch.as_tensor(alpha, dtype=torch.float64)
        if alpha.ndim != 1 or alpha.shape[0] < 1 or not bool(torch.isfinite(alpha).all()):
            raise ValueError(f"alpha must be a finite (d,) vector, got shape {tuple(alpha.shape)}")
        self.alpha = alpha
        self.dim = alpha.shape[0]
        self.delta = alpha / torch.sqrt(1.0 + alpha @ alpha)
        r = float(self.delta @ self.delta)
        self._c = (1.0 - math.sqrt(1.0 - r)) / r if r > 0 else 0.0

    def mean(self, theta: torch.Tensor) -> torch.Tensor:
        """E[y] = theta + sqrt(2/pi) delta: (..., d) -> (..., d)."""
        return theta + math.sqrt(2.0 / math.pi) * self.delta

    def covariance(self) -> torch.Tensor:
        """Cov[y] = I - (2/pi) delta delta^T: (d, d)."""
        return torch.eye(self.dim, dtype=torch.float64) - (2.0 / math.pi) * torch.outer(self.delta, self.delta)

    def log_density(self, y: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        """log p(y | theta) = log 2 + log N(y; theta, I) + log Phi(<alpha, y - theta>): (..., d) -> (...)."""
        r = y - theta
        return math.log(2.0) - 0.5 * self.dim * _LOG_2PI - 0.5 * (r**2).sum(-1) + torch.special.log_ndtr(r @ self.alpha)

    def simulate(self, theta: torch.Tensor, num_sims: int, generator: torch.Generator) -> torch.Tensor:
        """num_sims draws per row of theta: (C, d) -> (C, num_sims, d).

        Raises:
            ValueError: if theta is not (C, d) or num_sims < 1.
        """
        if theta.ndim != 2 or theta.shape[1] != self.dim:
            raise ValueError(f"theta must be (C, {self.dim}), got {tuple(theta.shape)}")
        if int(num_sims) != num_sims or num_sims < 1:
            raise ValueError(f"num_sims must be an integer >= 1, got {num_sims}")
        C = theta.shape[0]
        z = torch.randn((C, num_sims, self.dim), generator=generator, dtype=torch.float64)
        u0 = torch.randn((C, num_sims, 1), generator=generator, dtype=torch.float64).abs()
        u = z - self._c * (z @ self.delta)[..., None] * self.delta
        return theta.to(torch.float64)[:, None, :] + self.delta * u0 + u


class ABCSkewNormalPosterior:
    """log prior + log of the unbiased Gaussian-kernel ABC likelihood estimate; a PseudoMarginalMH target.

    Args:
        d: dimension (B4: 10). alpha = theta_true = alpha_value * 1 (B4: 10).
        num_obs: draws averaged into a summary (B4: 10).
        epsilon: ABC kernel bandwidth (B4: 0.55). num_sims: M, summaries per estimate (B4: 10).
        prior_var: N(0, prior_var I) prior (B4: 25). seed: seed of the observed data.

    Attributes:
        simulator, theta_true (d,), s_obs (d,): observed summary = mean of num_obs draws at theta_true.

    Cost per call: C * num_sims * num_obs * d normal draws.
    """

    def __init__(
        self,
        d: int = 10,
        alpha_value: float = 10.0,
        *,
        num_obs: int = 10,
        epsilon: float = 0.55,
        num_sims: int = 10,
        prior_var: float = 25.0,
        seed: int = 0,
    ):
        if int(d) != d or d < 1 or int(num_obs) != num_obs or num_obs < 1 or int(num_sims) != num_sims or num_sims < 1:
            raise ValueError(f"d, num_obs, num_sims must be integers >= 1, got {d}, {num_obs}, {num_sims}")
        if not (math.isfinite(epsilon) and epsilon > 0 and math.isfinite(prior_var) and prior_var > 0):
            raise ValueError(f"epsilon and prior_var must be finite and > 0, got {epsilon}, {prior_var}")
        self.dim = int(d)
        self.num_obs, self.num_sims = int(num_obs), int(num_sims)
        self.epsilon, self.prior_var = float(epsilon), float(prior_var)
        self.simulator = SkewNormalSimulator(torch.full((self.dim,), float(alpha_value), dtype=torch.float64))
        self.theta_true = torch.full((self.dim,), float(alpha_value), dtype=torch.float64)
        g = torch.Generator().manual_seed(int(seed))
        self.s_obs = self.simulator.simulate(self.theta_true[None], self.num_obs, g)[0].mean(0)  # (d,)

    def _check(self, theta: torch.Tensor) -> torch.Tensor:
        if theta.ndim != 2 or theta.shape[1] != self.dim:
            raise ValueError(f"theta must be (C, {self.dim}), got {tuple(theta.shape)}")
        return theta.to(torch.float64)

    def simulate_summaries(self, theta: torch.Tensor, num_sims: int, generator: torch.Generator) -> torch.Tensor:
        """num_sims summaries (means of num_obs draws) per row: (C, d) -> (C, num_sims, d)."""
        theta = self._check(theta)
        y = self.simulator.simulate(theta, num_sims * self.num_obs, generator)
        return y.view(theta.shape[0], num_sims, self.num_obs, self.dim).mean(2)

    def log_prior(self, theta: torch.Tensor) -> torch.Tensor:
        """log N(theta; 0, prior_var I): (C, d) -> (C,)."""
        theta = self._check(theta)
        return -0.5 * (theta**2).sum(-1) / self.prior_var - 0.5 * self.dim * (_LOG_2PI + math.log(self.prior_var))

    def log_kernel(self, s: torch.Tensor) -> torch.Tensor:
        """log N(s_obs; s, eps^2 I): (..., d) -> (...)."""
        return -0.5 * ((self.s_obs - s) ** 2).sum(-1) / self.epsilon**2 - 0.5 * self.dim * (
            _LOG_2PI + 2.0 * math.log(self.epsilon)
        )

    def log_abc_likelihood_estimate(
        self, theta: torch.Tensor, generator: torch.Generator, num_sims: int | None = None
    ) -> torch.Tensor:
        """log p_hat(s_obs | theta), log of the mean kernel over num_sims (default M) summaries: (C,)."""
        M = self.num_sims if num_sims is None else int(num_sims)
        s = self.simulate_summaries(theta, M, generator)
        return torch.logsumexp(self.log_kernel(s), dim=1) - math.log(M)

    def log_prob(self, theta: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """log p(theta) + log p_hat(s_obs | theta): (C, d) -> (C,), fresh randomness from generator."""
        return self.log_prior(theta) + self.log_abc_likelihood_estimate(theta, generator)

    __call__ = log_prob
