"""Kernel adaptive Metropolis-Hastings (Sejdinovic et al. 2014, "Kernel adaptive Metropolis-Hastings"; B0).

Given a FIXED set of history points Z = (z_1, ..., z_n) (n, d) and a Gaussian kernel in the KAMH
paper's length-scale convention

    k(x, z) = exp(-||x - z||^2 / (2 sigma^2))     (= ``gaussian_kernel`` with width 2 sigma^2),

the proposal at the current state x is

    x' ~ N(x, Sigma_x),   Sigma_x = gamma^2 I + nu^2 M_x H M_x^T,

    M_x = 2 [grad_x k(x, z_1), ..., grad_x k(x, z_n)] = (2 / sigma^2) [k(x, z_i) (z_i - x)]_i   (d, n),
    H   = I_n - (1/n) 1 1^T  (centring matrix; H is idempotent so M H M^T = (M H)(M H)^T).

Convention stated explicitly: the factor 2 in M_x is the paper's (M_{z,y} = 2 [nabla_x k(x, z_i)|_{x=y}]);
with this kernel each column is (2 / sigma^2) k(x, z_i)(z_i - x). Any other constant is absorbed in nu.

Sigma_x depends on the CURRENT state, so the proposal is not symmetric and the MH ratio carries the
Hastings correction

    log alpha = log pi(x') - log pi(x) + log N(x; x', Sigma_{x'}) - log N(x'; x, Sigma_x).

(The authors' experiment code omits the correction; this kernel does not.)

Pseudo-marginal mode (``pseudo_marginal=True``, B3): ``log_prob(x, generator) -> (C,)`` is the log of an
unbiased estimate of pi(x); the current state's estimate is carried in ``state.log_prob`` and recycled
(Andrieu & Roberts 2009), exactly as in :class:`gradmc.samplers.continuous.KMC`. With Z, sigma, gamma, nu
fixed during a step, each step is an exact pi-invariant MH kernel. Adaptation (refreshing Z from the
chain history with a vanishing probability, tuning nu to ~23% acceptance) happens OUTSIDE the kernel,
as for KMC: build a new ``KAMH`` (``dataclasses.replace``) between steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gradmc.samplers.base import Info, count_nonfinite, metropolis_hastings_accept
from gradmc.samplers.continuous.common import ContinuousState, check_current, check_positive, initial_state
from gradmc.surrogates.kernels import gaussian_kernel, sigma_from_lengthscale

__all__ = ["KAMH", "kamh_covariance", "gaussian_log_density"]


def kamh_covariance(x: torch.Tensor, z: torch.Tensor, sigma: float, gamma: float, nu: float) -> torch.Tensor:
    """Per-chain KAMH proposal covariance gamma^2 I + nu^2 M_x H M_x^T: x (C, d), z (n, d) -> (C, d, d)."""
    k = gaussian_kernel(x, z, sigma_from_lengthscale(sigma))  # (C, n), exp(-||x - z||^2 / (2 sigma^2))
    m = (2.0 / sigma**2) * k[:, None, :] * (z.t()[None, :, :] - x[:, :, None])  # (C, d, n)
    mh = m - m.mean(-1, keepdim=True)  # M H (columns centred)
    eye = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
    return gamma**2 * eye + nu**2 * mh @ mh.transpose(-1, -2)


def gaussian_log_density(y: torch.Tensor, mean: torch.Tensor, chol: torch.Tensor) -> torch.Tensor:
    """log N(y; mean, L L^T) per row: y, mean (C, d), chol (C, d, d) lower-triangular -> (C,)."""
    diff = (y - mean)[..., None]  # (C, d, 1)
    sol = torch.linalg.solve_triangular(chol, diff, upper=False).squeeze(-1)  # L^{-1} (y - mean)
    log_det = torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)
    return -0.5 * (sol * sol).sum(-1) - log_det - 0.5 * y.shape[-1] * math.log(2.0 * math.pi)


@dataclass(frozen=True)
class KAMH:
    """KAMH transition with a fixed history Z.

    Args:
        z: (n, d) history points (n >= 1), same dtype/device as the chains.
        sigma: kernel length scale sigma > 0 (k = exp(-||x - z||^2 / (2 sigma^2))).
        gamma: isotropic exploration scale gamma > 0 (keeps Sigma_x positive definite).
        nu: scale nu > 0 of the kernel-informed part.
        pseudo_marginal: if True, ``log_prob(x, generator)`` is an unbiased-estimate oracle and the current
            state's estimate is recycled (one estimate per step, at x').

    Cost per step: the target at x and x' in one call on 2C rows (energy_evals = 2, grad_evals = 0;
    pseudo-marginal: one estimate at x', energy_evals = 1),
    plus two batched (C, d, d) covariances and Cholesky factors (at x and x'). Nothing is cached.

    Raises:
        ValueError: at construction, on non-positive sigma, gamma, nu or a z that is not (n, d).
        NonFiniteError: log_prob (pseudo-marginal: the recycled estimate, NaN or +inf) NaN/inf at a
            current state (init, step); a proposal of NaN/+inf log_prob is rejected instead.
    """

    name = "KAMH"  # a class attribute, not a field

    z: torch.Tensor
    sigma: float
    gamma: float
    nu: float
    pseudo_marginal: bool = False

    def __post_init__(self):
        check_positive("KAMH sigma", self.sigma)
        check_positive("KAMH gamma", self.gamma)
        check_positive("KAMH nu", self.nu)
        if not isinstance(self.z, torch.Tensor) or self.z.dim() != 2 or self.z.shape[0] < 1:
            raise ValueError("KAMH z must be an (n, d) tensor with n >= 1")

    def covariance(self, x: torch.Tensor) -> torch.Tensor:
        """Sigma_x for every row of x (C, d) -> (C, d, d)."""
        return kamh_covariance(x, self.z, self.sigma, self.gamma, self.nu)

    def log_q_ratio(self, x: torch.Tensor, x_new: torch.Tensor, chol_x: torch.Tensor) -> torch.Tensor:
        """Hastings correction log N(x; x', Sigma_{x'}) - log N(x'; x, Sigma_x): (C,). chol_x = chol(Sigma_x)."""
        chol_new = torch.linalg.cholesky(self.covariance(x_new))
        return gaussian_log_density(x, x_new, chol_new) - gaussian_log_density(x_new, x, chol_x)

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ContinuousState:
        """Start chains at x (C, d); pseudo-marginal mode draws the first estimates with generator.

        Raises:
            ValueError: in pseudo-marginal mode without a generator.
        """
        return initial_state(self.name, x, log_prob, self.pseudo_marginal, generator)

    def step(self, state: ContinuousState, log_prob, generator: torch.Generator) -> tuple[ContinuousState, Info]:
        """One KAMH transition for every chain. Returns the new state and per-chain Info.

        Raises:
            NonFiniteError: log_prob NaN/inf at a current state (see the class).
        """
        x = state.x  # (C, d)
        chol_x = torch.linalg.cholesky(self.covariance(x))  # (C, d, d)
        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
        x_new = x + (chol_x @ noise[..., None]).squeeze(-1)
        if self.pseudo_marginal:
            f_x, f_new = state.log_prob, log_prob(x_new, generator).detach()
        else:
            f_both = log_prob(torch.cat([x, x_new])).detach()  # (2C,)
            f_x, f_new = f_both[: x.shape[0]], f_both[x.shape[0]:]
        check_current(self.name, state.num_steps + 1, f_x, self.pseudo_marginal)
        log_alpha = f_new - f_x + self.log_q_ratio(x, x_new, chol_x)
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, f_new)
        x_out = torch.where(accepted[:, None], x_new, x)
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=(x_out != x).sum(-1),
                    energy_evals=1 if self.pseudo_marginal else 2, grad_evals=0,
                    nonfinite_proposals=count_nonfinite(f_new))
        return ContinuousState(x=x_out, log_prob=torch.where(accepted, f_new, f_x), num_steps=state.num_steps + 1), info
