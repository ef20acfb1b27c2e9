"""Pseudo-marginal Metropolis-Hastings (Andrieu & Roberts 2009; B3, B4).

The target is known only through ``log_prob(x, generator) -> (C,)``: the log of a non-negative,
UNBIASED estimate pi_hat(x) of pi(x) up to a constant, fresh randomness at every call. The state carries
the log of the estimate attached to the current x; it is RECYCLED (never re-estimated) until a
proposal is accepted, and the chain accepts with

    min(1, pi_hat(x') q(x | x') / (pi_hat(x) q(x' | x))).

The pair (x, pi_hat) is then an exact MH chain on the extended space whose x-marginal is pi, so the
chain targets pi exactly whatever the noise of the estimator (only mixing suffers). Re-estimating the
current state instead (Monte Carlo within Metropolis) is NOT exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gradmc.samplers.base import Info, count_nonfinite, metropolis_hastings_accept
from gradmc.samplers.continuous.common import ContinuousState, check_current, initial_state

__all__ = ["PseudoMarginalMH", "GaussianRandomWalkProposal"]


@dataclass(frozen=True)
class GaussianRandomWalkProposal:
    """x' = x + s z, z ~ N(0, I): (C, d) -> (C, d), and log q(x|x') - log q(x'|x) = 0 (symmetric).

    Raises:
        ValueError: at construction, if scale is not finite and > 0.
    """

    scale: float

    def __post_init__(self):
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"proposal scale must be finite and > 0, got {self.scale}")

    def __call__(self, x: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
        return x + self.scale * z, torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)


@dataclass(frozen=True)
class PseudoMarginalMH:
    """Pseudo-marginal MH with a user proposal.

    Args:
        proposal: callable (x (C, d), generator) -> (x' (C, d), log q(x | x') - log q(x' | x) (C,)),
            e.g. :class:`GaussianRandomWalkProposal`.

    Cost per step: one likelihood estimate at x' on C rows (energy_evals = 1, grad_evals = 0). The
    state's ``log_prob`` is the recycled log estimate, so the target must not change between steps.

    Raises:
        TypeError: at construction, if proposal is not callable.
        NonFiniteError: the (recycled) log estimate at a current state is NaN or +inf (init, step); a
            zero estimate (-inf) is allowed there, and a proposal of NaN/+inf estimate is rejected.
    """

    name = "PM-MH"  # a class attribute, not a field

    proposal: Callable[[torch.Tensor, torch.Generator], tuple[torch.Tensor, torch.Tensor]]

    def __post_init__(self):
        if not callable(self.proposal):
            raise TypeError("PseudoMarginalMH proposal must be callable (x, generator) -> (x', log_q_ratio)")

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ContinuousState:
        """Start chains at x (C, d) with a first estimate log pi_hat(x) drawn with generator.

        Raises:
            ValueError: generator is None. NonFiniteError: an estimate is NaN or +inf.
        """
        return initial_state(self.name, x, log_prob, True, generator)

    def step(self, state: ContinuousState, log_prob, generator: torch.Generator) -> tuple[ContinuousState, Info]:
        """One pseudo-marginal MH transition for every chain.

        Raises:
            NonFiniteError: the recycled estimate of a current state is NaN or +inf.
        """
        x = state.x  # (C, d)
        check_current(self.name, state.num_steps + 1, state.log_prob, True)
        x_new, log_q_ratio = self.proposal(x, generator)
        f_new = log_prob(x_new, generator).detach()  # (C,) fresh estimate at the proposal only
        accepted, acceptance_prob = metropolis_hastings_accept(f_new - state.log_prob + log_q_ratio, generator, f_new)
        x_out = torch.where(accepted[:, None], x_new, x)
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=(x_out != x).sum(-1),
                    energy_evals=1, grad_evals=0,
                    nonfinite_proposals=count_nonfinite(f_new))
        new = ContinuousState(x=x_out, log_prob=torch.where(accepted, f_new, state.log_prob),
                              num_steps=state.num_steps + 1)
        return new, info
