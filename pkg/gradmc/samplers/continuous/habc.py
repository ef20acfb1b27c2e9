"""Hamiltonian ABC (Meeds, Leenders & Welling 2015; B0, B4 baseline).

HMC whose trajectories follow a STOCHASTIC gradient of the log posterior under a synthetic likelihood
(Wood 2010): at theta, S simulations give summaries s_1..s_S (k-dim) with mean mu and covariance Sigma,

    log p_SL(y | theta) = log N(y; mu_theta, Sigma_theta).

Its gradient is estimated by SPSA (simultaneous perturbation; Spall 1992): with Delta in {-1, +1}^d
(Rademacher), averaged over R perturbations,

    g = mean_r [ (log p_SL(y | theta + c Delta_r) - log p_SL(y | theta - c Delta_r)) / (2 c) ] Delta_r

(Delta_r^{-1} = Delta_r elementwise). The prior's gradient is exact (autograd of ``log_prob``).

Sticky random numbers (common random numbers, Meeds et al. Sec. 4.3): one simulator seed is drawn per
transition and held fixed for every simulation of that trajectory (both sides of every SPSA difference,
every leapfrog step), so log p_SL(y | .) is a fixed deterministic function of theta during a trajectory.

Acceptance: as in the common form of HABC (the form the KMC paper compares against, "HABC (sticky random
numbers and SPSA)"), there is NO Metropolis-Hastings correction: each transition resamples the momentum,
runs L leapfrog steps on the estimated gradient and always moves to the endpoint. The method is therefore
BIASED (synthetic-likelihood Gaussian approximation, finite S, discretisation error, noisy gradients):
that bias is what the KMC paper's Fig. 4 (right) shows. Meeds et al. also discuss friction / SGHMC-style
variants; those are not implemented here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gradmc.core.gradients import log_prob_and_grad
from gradmc.samplers.base import Info, check_finite
from gradmc.samplers.continuous.common import (
    ContinuousState,
    check_current,
    check_positive,
    check_ranges,
    draw_step_params,
    initial_state,
    leapfrog,
)

__all__ = ["HABC", "synthetic_log_likelihood"]

_SEED_MAX = 2**62


def synthetic_log_likelihood(summaries: torch.Tensor, observed: torch.Tensor, jitter: float = 0.0) -> torch.Tensor:
    """log N(observed; mean_s, cov_s) per chain from simulated summaries (C, S, k), observed (k,) -> (C,).

    cov_s is the unbiased sample covariance over the S >= 2 simulations (+ jitter I).
    """
    c, s, k = summaries.shape
    mu = summaries.mean(1)  # (C, k)
    dev = summaries - mu[:, None, :]
    cov = dev.transpose(1, 2) @ dev / (s - 1)
    cov = cov + jitter * torch.eye(k, dtype=summaries.dtype, device=summaries.device)
    chol = torch.linalg.cholesky(cov)
    diff = (observed[None, :] - mu)[..., None]
    sol = torch.linalg.solve_triangular(chol, diff, upper=False).squeeze(-1)
    log_det = torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)
    return -0.5 * (sol * sol).sum(-1) - log_det - 0.5 * k * math.log(2.0 * math.pi)


@dataclass(frozen=True)
class HABC:
    """Hamiltonian ABC with a synthetic likelihood, SPSA gradients and sticky random numbers.

    Args:
        simulator: ``simulator(theta (C, d), generator) -> summaries (C, S, k)``; must draw all its
            randomness from ``generator`` (so a fixed seed makes it a deterministic function of theta).
        observed: (k,) observed summaries y.
        step_size_range: (eps_lo, eps_hi); num_steps_range: (L_lo, L_hi) (see ``common.leapfrog``).
        perturbation: SPSA half-width c > 0.
        num_perturbations: R >= 1 Rademacher directions averaged per gradient estimate.
        mass: scalar m > 0, M = m I.
        jitter: added to the synthetic covariance diagonal (0 by default).

    ``step(state, log_prob, generator)``: ``log_prob`` is the log PRIOR (differentiable); the likelihood
    enters only through the simulator. ``state.log_prob`` holds the log prior at x (no likelihood value
    is ever computed for acceptance). Always accepts.

    Cost per step: (L + 1) gradient estimates, L = max_c L_c on CPU or L_hi on an accelerator (see
    ``common.leapfrog``), each 2 R simulator calls on C rows (S simulations per row):
    energy_evals = 2 R (L + 1) (simulator calls), grad_evals = L + 1 (prior gradients).

    Raises:
        ValueError: at construction, on invalid ranges, mass, perturbation or num_perturbations.
        NonFiniteError: the log prior (init, step) or the gradient estimate (prior + SPSA, step) NaN/inf
            at a current state, or a trajectory ending at a NaN/inf position or log prior (HABC has no
            accept/reject step that could discard it).
    """

    name = "HABC"  # a class attribute, not a field

    simulator: Callable[[torch.Tensor, torch.Generator], torch.Tensor]
    observed: torch.Tensor
    step_size_range: tuple[float, float]
    num_steps_range: tuple[int, int]
    perturbation: float = 0.1
    num_perturbations: int = 1
    mass: float = 1.0
    jitter: float = 0.0

    def __post_init__(self):
        check_ranges("HABC", self.step_size_range, self.num_steps_range)
        check_positive("HABC mass", self.mass)
        check_positive("HABC perturbation", self.perturbation)
        if int(self.num_perturbations) != self.num_perturbations or self.num_perturbations < 1:
            raise ValueError(f"HABC num_perturbations must be an integer >= 1, got {self.num_perturbations}")
        if not callable(self.simulator):
            raise ValueError("HABC simulator must be callable (theta, generator) -> (C, S, k)")

    def log_synthetic_likelihood(self, theta: torch.Tensor, seed: int) -> torch.Tensor:
        """log p_SL(y | theta) (C,) with the simulator's generator seeded with ``seed`` (sticky)."""
        sim_gen = torch.Generator(device=theta.device).manual_seed(int(seed))
        summaries = self.simulator(theta, sim_gen)
        return synthetic_log_likelihood(summaries, self.observed.to(theta), self.jitter)

    def spsa_grad(self, theta: torch.Tensor, seed: int, generator: torch.Generator) -> torch.Tensor:
        """SPSA estimate (C, d) of grad log p_SL(y | theta); both sides use the same ``seed``."""
        c = self.perturbation
        g = torch.zeros_like(theta)
        for _ in range(int(self.num_perturbations)):
            delta = torch.randint(0, 2, theta.shape, generator=generator, device=theta.device).to(theta.dtype)
            delta = 2.0 * delta - 1.0
            diff = self.log_synthetic_likelihood(theta + c * delta, seed) - self.log_synthetic_likelihood(
                theta - c * delta, seed)
            g = g + (diff / (2.0 * c))[:, None] * delta
        return g / int(self.num_perturbations)

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ContinuousState:
        """Start chains at x (C, d); state.log_prob is the log prior at x. ``generator`` is unused (the kernel
        contract: every kernel takes one).

        Raises:
            NonFiniteError: the log prior at x NaN or inf for some chain.
        """
        return initial_state(self.name, x, log_prob, False, None)

    def step(self, state: ContinuousState, log_prob, generator: torch.Generator) -> tuple[ContinuousState, Info]:
        """One HABC trajectory per chain (no accept/reject). ``log_prob`` is the log prior.

        Raises:
            NonFiniteError: see the class (before the trajectory for the current state, after it for
                the end point).
        """
        x = state.x
        seed = int(torch.randint(0, _SEED_MAX, (1,), generator=generator, device=x.device).item())

        def grad_fn(z):
            f_prior, g_prior = log_prob_and_grad(log_prob, z)
            return f_prior, g_prior + self.spsa_grad(z, seed, generator)

        f_x, g_x = grad_fn(x)
        step = state.num_steps + 1
        check_current(self.name, step, f_x, False, ("gradient estimate (prior + SPSA) at the current state", g_x))
        p = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * self.mass**0.5
        eps, num = draw_step_params(self.step_size_range, self.num_steps_range, x, generator)
        max_steps = int(self.num_steps_range[1])
        x_new, _, f_new, steps = leapfrog(x, p, eps, num, max_steps, grad_fn, self.mass, g_x)
        check_finite(self.name, step, ("position at the end of the trajectory (a gradient estimate along it was "
                                       "not finite)", x_new), ("log prior at the end of the trajectory", f_new))
        ones = torch.ones(x.shape[0], dtype=x.dtype, device=x.device)
        accepted = torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
        evals = steps + 1
        info = Info(acceptance_prob=ones, accepted=accepted, sites_changed=(x_new != x).sum(-1),
                    energy_evals=2 * int(self.num_perturbations) * evals, grad_evals=evals)
        return ContinuousState(x=x_new, log_prob=f_new, num_steps=step), info
