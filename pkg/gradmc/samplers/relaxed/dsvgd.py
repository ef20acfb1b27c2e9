"""Discrete Stein variational gradient descent, D-SVGD (Han et al. 2020; GWG paper Appendix C, C.2).

Particles z_1..z_n in R^D target the piecewise relaxation pi(z) = N(z; 0, I) p(1[z > 0]), whose
gradient is useless, through the differentiable surrogate rho = pi_lambda (see ``surrogate``) and the
importance-weight correction of gradient-free SVGD (Han & Liu 2018) that the GWG appendix describes:

    w_j = softmax_j(log rho(z_j) - log pi(z_j))                                   (weights sum to 1)
    phi(z_i) = sum_j w_j [k(z_j, z_i) grad log rho(z_j) + grad_{z_j} k(z_j, z_i)]
    z_i <- Adam step along +phi(z_i)   (the optimiser's gradient is -phi)

with the RBF kernel k(z, z') = exp(-||z - z'||^2 / (2h)), h = med / (2 log(n + 1)), med the median
squared pairwise distance of the current particles (the GWG appendix's median heuristic; the
convention on squares follows the authors' released code, so k = 1 / (n + 1) at the median distance,
as in Liu & Wang 2016). The reported sample of particle i is x_i = 1[z_i > 0].

D-SVGD is a particle method, not a Markov chain: every step moves all particles jointly and
deterministically (the generator is unused), so the "chains" are NOT independent and per-chain
diagnostics such as ESS across chains do not apply. It is biased for a finite number of particles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import Info, NonFiniteError, check_finite
from gradmc.samplers.relaxed.surrogate import (
    bits_from_z,
    check_temperature,
    init_relaxed,
    relaxed_log_prob,
    surrogate_log_prob_and_grad,
    z_from_bits,
)

__all__ = ["DSVGD", "DSVGDState", "rbf_kernel_median"]


class DSVGDState(NamedTuple):
    """State of the particle set.

    Attributes:
        x: (n, D) floats in {0, 1}, the bits 1[z > 0] of every particle.
        z: (n, D) particle positions.
        exp_avg: (n, D) Adam first moment.
        exp_avg_sq: (n, D) Adam second moment.
        num_steps: int, Adam steps taken (for the bias correction).
        weight_ess: () effective sample size 1 / sum_j w_j^2 of the last step's importance weights
            (diagnostic: n when surrogate and target agree, near 1 when one particle dominates).
    """

    x: torch.Tensor
    z: torch.Tensor
    exp_avg: torch.Tensor
    exp_avg_sq: torch.Tensor
    num_steps: int
    weight_ess: torch.Tensor


def rbf_kernel_median(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """RBF kernel matrix with the median-heuristic bandwidth (GWG Appendix C.2).

    Args:
        z: (n, D) particles, n >= 2.

    Returns:
        K: (n, n) with K_ij = exp(-||z_i - z_j||^2 / (2h)); h: () the bandwidth
        med / (2 log(n + 1)), med the (lower) median of the n (n - 1) / 2 squared distances between
        distinct particles, clamped to the dtype's tiny so that coincident particles do not divide by 0.
    """
    n = z.shape[0]
    sq = (z * z).sum(-1)
    d2 = (sq[:, None] + sq[None, :] - 2.0 * z @ z.t()).clamp_min(0.0)  # (n, n)
    iu = torch.triu_indices(n, n, offset=1, device=z.device)
    med = torch.median(d2[iu[0], iu[1]])
    h = med.clamp_min(torch.finfo(z.dtype).tiny) / (2.0 * math.log(n + 1))
    return torch.exp(-d2 / (2.0 * h)), h


@register_sampler("D-SVGD", exact=False,
                  options={"learning_rate": "positive", "temperature": "positive", "betas": None, "eps": "positive"},
                  required=("learning_rate", "temperature"), colour="slategray", order=52,
                  doc="discrete Stein variational gradient descent")
@dataclass(frozen=True)
class DSVGD:
    """Discrete SVGD with the surrogate pi_lambda, importance weights and Adam on the particles.

    Args:
        learning_rate: Adam learning rate > 0.
        temperature: lambda > 0 of the surrogate p(sigmoid(z / lambda)).
        betas: Adam (beta1, beta2) in [0, 1).
        eps: Adam epsilon > 0.

    Cost per step: one surrogate value+gradient evaluation and one exact-target evaluation on the n
    particles (energy_evals=2, grad_evals=1), plus O(n^2 D) for the kernel.

    Raises:
        ValueError: at construction, for a non-positive learning rate, temperature or eps, or betas
            outside [0, 1).
        NonFiniteError: log pi, the surrogate log pi_lambda or its gradient NaN/inf at some particle
            (init, step): one such particle would make every importance weight, hence every particle, NaN.
    """

    name = "D-SVGD"  # the paper's name (a class attribute, not a field)

    learning_rate: float
    temperature: float
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8

    def __post_init__(self):
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ValueError(f"D-SVGD learning_rate must be finite and > 0, got {self.learning_rate}")
        check_temperature("D-SVGD", self.temperature)
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"D-SVGD betas must be two numbers in [0, 1), got {self.betas}")
        if not self.eps > 0:
            raise ValueError(f"D-SVGD eps must be > 0, got {self.eps}")

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> DSVGDState:
        """Start n particles at bits x (n, D), n >= 2, with z = ``z_from_bits(x, generator)``.

        ``generator`` is REQUIRED here: particles with the same bits would otherwise start at the same
        point and, the update being deterministic, never separate. To start from a given z use
        :meth:`init_from_z`.

        Raises:
            ValueError: if generator is None, n < 2, or x is invalid (see ``init_relaxed``).
            NonFiniteError: if log pi is NaN or inf at some particle.
        """
        if generator is None:
            raise ValueError("D-SVGD needs distinct particles: pass a generator (z = z_from_bits(x, generator)) "
                             "or start from a given z with init_from_z")
        self._check_particles(x)
        return self.init_from_z(x, log_prob, z_from_bits(x, generator))

    def init_from_z(self, x: torch.Tensor, log_prob, z: torch.Tensor) -> DSVGDState:
        """Start n particles at bits x (n, D), n >= 2, and the continuous positions z (n, D), 1[z > 0] == x.

        Raises:
            ValueError: n < 2, or x, z invalid (see ``init_relaxed``).
            NonFiniteError: if log pi is NaN or inf at some particle.
        """
        self._check_particles(x)
        relaxed = init_relaxed(x, log_prob, z, name=self.name)
        zeros = torch.zeros_like(relaxed.z)
        ess = torch.tensor(float(x.shape[0]), dtype=relaxed.z.dtype, device=relaxed.z.device)
        return DSVGDState(x=relaxed.x, z=relaxed.z, exp_avg=zeros, exp_avg_sq=zeros.clone(), num_steps=0,
                          weight_ess=ess)

    @staticmethod
    def _check_particles(x: torch.Tensor) -> None:
        if x.dim() != 2 or x.shape[0] < 2:
            raise ValueError(f"D-SVGD needs x of shape (n, D) with n >= 2 particles, got {tuple(x.shape)}")

    @staticmethod
    def bits(state: DSVGDState) -> torch.Tensor:
        """The reported samples x = 1[z > 0], (n, D)."""
        return bits_from_z(state.z)

    def stein_direction(self, z: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """The importance-weighted Stein direction phi (ascent direction) at every particle.

        Args:
            z: (n, D) particles.
            log_prob: the binary target.

        Returns:
            phi: (n, D); weights: (n,) the normalised importance weights w.

        Raises:
            NonFiniteError: log pi(z), log pi_lambda(z) or its gradient NaN/inf at some particle.
        """
        log_rho, grad = surrogate_log_prob_and_grad(log_prob, z, self.temperature)  # (n,), (n, D)
        log_pi = relaxed_log_prob(log_prob, z)  # (n,)
        check_finite(self.name, None, ("log_prob at the current particles", log_pi),
                     ("surrogate log_prob at the current particles", log_rho),
                     ("surrogate gradient at the current particles", grad))
        w = torch.softmax(log_rho - log_pi, dim=0)  # (n,)
        K, h = rbf_kernel_median(z)  # (n, n), K symmetric
        kw = K * w[None, :]  # kw[i, j] = w_j k(z_j, z_i)
        # grad_{z_j} k(z_j, z_i) = -(z_j - z_i) / h * k(z_j, z_i)
        # => sum_j w_j grad_{z_j} k = (z_i * sum_j kw_ij - sum_j kw_ij z_j) / h
        repulsion = (z * kw.sum(-1, keepdim=True) - kw @ z) / h
        return kw @ grad + repulsion, w

    def step(self, state: DSVGDState, log_prob, generator: torch.Generator | None = None) -> tuple[DSVGDState, Info]:
        """One joint update of all particles (Adam along phi). Deterministic: generator is unused.

        Returns the new state and Info with acceptance_prob = 1, accepted = True for every particle.

        Raises:
            NonFiniteError: as :meth:`stein_direction` (the message's chains are particles).
        """
        z = state.z  # (n, D)
        try:
            phi, w = self.stein_direction(z, log_prob)
        except NonFiniteError as err:
            err.step = state.num_steps + 1
            raise
        g = -phi  # the optimiser minimises
        beta1, beta2 = self.betas
        t = state.num_steps + 1
        exp_avg = beta1 * state.exp_avg + (1.0 - beta1) * g
        exp_avg_sq = beta2 * state.exp_avg_sq + (1.0 - beta2) * g * g
        denom = (exp_avg_sq / (1.0 - beta2**t)).sqrt() + self.eps
        z_new = z - self.learning_rate * (exp_avg / (1.0 - beta1**t)) / denom
        x_new = bits_from_z(z_new)
        n = z.shape[0]
        ones = torch.ones(n, dtype=z.dtype, device=z.device)
        info = Info(acceptance_prob=ones, accepted=ones.bool(), sites_changed=(x_new != state.x).sum(-1),
                    energy_evals=2, grad_evals=1)
        new_state = DSVGDState(x=x_new, z=z_new, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq, num_steps=t,
                               weight_ess=1.0 / (w * w).sum())
        return new_state, info
