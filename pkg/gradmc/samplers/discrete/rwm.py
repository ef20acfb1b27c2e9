"""Random-walk Metropolis on binary states: flip one uniformly random bit, accept with
min(1, exp(f(x') - f(x))) (Metropolis et al. 1953; the uniform proposal is symmetric, so the proposal
terms cancel). The gradient-free reference point for GWG: GWG replaces the uniform q(i) by softmax(d(x)/2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

import gradmc.core.streams as streams
from gradmc.core.validation import check_binary
from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import Info, acceptance_probability, check_finite, count_nonfinite, metropolis_hastings_accept
from gradmc.samplers.discrete.flips import apply_flips

__all__ = ["RandomWalkMetropolis", "RWMState"]


class RWMState(NamedTuple):
    """x: (C, D) current binary state; log_prob: (C,) f(x) at the last evaluation (diagnostic);
    num_steps: steps taken since ``init`` (for error messages)."""

    x: torch.Tensor
    log_prob: torch.Tensor
    num_steps: int = 0


@register_sampler("RWM", colour="rosybrown", order=35, in_groups=False,
                  doc="random-walk Metropolis, one uniformly random flip")
@dataclass(frozen=True)
class RandomWalkMetropolis:
    """Single-bit random-walk Metropolis.

    Cost per step: f(x) and f(x') in one log_prob call on a (2C, D) batch: energy_evals=2, grad_evals=0.
    f(x) is re-evaluated every step (not cached) so the kernel stays exact if the target changes (AIS).
    """

    name = "RWM"  # the paper's name (a class attribute, not a field)

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> RWMState:
        """Start chains at x (C, D) floats in {0, 1}.

        Raises:
            NonFiniteError: if f(x) is NaN or inf for some chain.
        """
        check_binary(x, check_values=True)
        with torch.no_grad():
            f = log_prob(x)
        check_finite(self.name, 0, ("log_prob at the current state", f))
        return RWMState(x=x.clone(), log_prob=f.detach())

    @staticmethod
    def log_acceptance(x: torch.Tensor, x_new: torch.Tensor, log_prob) -> tuple[torch.Tensor, ...]:
        """f(x') - f(x) for x, x_new (C, D) from one log_prob call on (2C, D).

        Returns log_alpha, f(x), f(x'), each (C,)."""
        C = x.shape[0]
        with torch.no_grad():
            f = log_prob(torch.cat([x, x_new], 0))
        return f[C:] - f[:C], f[:C], f[C:]

    def step(self, state: RWMState, log_prob, generator: torch.Generator) -> tuple[RWMState, Info]:
        """Propose one uniformly random flip per chain and accept or reject it.

        Raises:
            NonFiniteError: f(x) NaN/inf at a current state (a proposal of NaN/inf f is rejected)."""
        x = state.x
        C, D = x.shape
        idx = streams.randint(D, (C,), generator, device=x.device)
        counts = torch.nn.functional.one_hot(idx, D)  # (C, D)
        x_new = apply_flips(x, counts)
        log_alpha, f_x, f_new = self.log_acceptance(x, x_new, log_prob)
        check_finite(self.name, state.num_steps + 1, ("log_prob at the current state", f_x))
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, f_new)
        x_out = torch.where(accepted[:, None], x_new, x)
        f_out = torch.where(accepted, f_new, f_x)
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=accepted.long(),
                    energy_evals=2, grad_evals=0, nonfinite_proposals=count_nonfinite(f_new))
        return RWMState(x=x_out, log_prob=f_out, num_steps=state.num_steps + 1), info

    @torch.no_grad()
    def transition_probabilities(self, x: torch.Tensor, log_prob) -> tuple[torch.Tensor, torch.Tensor]:
        """Enumerate one step from each x (C, D): the D single flips (probability 1/D each, times the
        acceptance), then stay. Returns next_states (C, D + 1, D), probs (C, D + 1)."""
        C, D = x.shape
        counts = torch.eye(D, dtype=torch.long, device=x.device)  # (D, D): flip i
        x_new = apply_flips(x[:, None, :], counts[None])  # (C, D, D)
        log_alpha, _, _ = self.log_acceptance(x.repeat_interleave(D, 0), x_new.reshape(C * D, D), log_prob)
        move = acceptance_probability(log_alpha).reshape(C, D) / D
        stay = 1.0 - move.sum(1, keepdim=True)
        return torch.cat([x_new, x[:, None, :]], 1), torch.cat([move, stay], 1)
