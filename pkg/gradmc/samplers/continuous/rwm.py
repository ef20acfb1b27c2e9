"""Isotropic Gaussian random-walk Metropolis and its Robbins-Monro scale adaptation (KMC baseline, B0).

Proposal x' = x + s z, z ~ N(0, I) (symmetric), accepted with min(1, pi(x') / pi(x)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gradmc.samplers.base import Info, count_nonfinite, metropolis_hastings_accept
from gradmc.samplers.continuous.common import ContinuousState, check_current, initial_state

__all__ = ["GaussianRandomWalkMetropolis", "adapt_log_scale"]


@dataclass(frozen=True)
class GaussianRandomWalkMetropolis:
    """Isotropic Gaussian random-walk Metropolis on R^d (the discrete bit-flip walk is
    :class:`gradmc.samplers.discrete.rwm.RandomWalkMetropolis`).

    Args:
        scale: s > 0, a float or a (C,) tensor (one scale per chain, e.g. from :func:`adapt_log_scale`).

    Cost per step: the target at x and x' in one call on 2C rows (energy_evals = 2, grad_evals = 0);
    nothing is cached, so the kernel is exact when the target changes between calls.

    Raises:
        ValueError: at construction, if a float scale is not finite and > 0.
        NonFiniteError: log_prob NaN/inf at a current state (init, step); a proposal of NaN/inf
            log_prob is rejected instead.
    """

    name = "RWM"  # a class attribute, not a field

    scale: float | torch.Tensor

    def __post_init__(self):
        if not isinstance(self.scale, torch.Tensor) and not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"GaussianRandomWalkMetropolis scale must be finite and > 0, got {self.scale}")

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ContinuousState:
        """Start chains at x (C, d); ``generator`` is unused (the kernel contract: every kernel takes one).

        Raises:
            NonFiniteError: log_prob(x) NaN or inf for some chain.
        """
        return initial_state(self.name, x, log_prob, False, None)

    def step(self, state: ContinuousState, log_prob, generator: torch.Generator) -> tuple[ContinuousState, Info]:
        """One random-walk Metropolis transition for every chain.

        Raises:
            NonFiniteError: log_prob NaN/inf at a current state.
        """
        x = state.x  # (C, d)
        s = self.scale[:, None] if isinstance(self.scale, torch.Tensor) else self.scale
        x_new = x + s * torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
        f_both = log_prob(torch.cat([x, x_new])).detach()  # (2C,)
        f_x, f_new = f_both[: x.shape[0]], f_both[x.shape[0]:]
        check_current(self.name, state.num_steps + 1, f_x)
        accepted, acceptance_prob = metropolis_hastings_accept(f_new - f_x, generator, f_new)
        x_out = torch.where(accepted[:, None], x_new, x)
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=(x_out != x).sum(-1),
                    energy_evals=2, grad_evals=0,
                    nonfinite_proposals=count_nonfinite(f_new))
        return ContinuousState(x=x_out, log_prob=torch.where(accepted, f_new, f_x), num_steps=state.num_steps + 1), info


def adapt_log_scale(log_scale: torch.Tensor, acceptance_prob: torch.Tensor, t: int, target: float = 0.234,
                    rate: float = 1.0, decay: float = 0.6) -> torch.Tensor:
    """One Robbins-Monro step on the log proposal scale towards a target acceptance rate.

        log s_{t+1} = log s_t + gamma_t (alpha_t - target),   gamma_t = rate / (t + 1)^decay

    (Andrieu & Thoms 2008, Sec. 5). alpha_t is the MH acceptance probability of step t (per chain).
    With 0.5 < decay <= 1, sum gamma_t = inf and sum gamma_t^2 < inf, so s_t converges to the scale
    whose mean acceptance is ``target`` (23.4%, Roberts et al. 1997; the KMC paper's 23%).
    Intended use: adapt during burn-in only, then freeze s (the B2 protocol: tune, then run a fixed
    kernel, so post-burn-in samples come from one exact pi-invariant kernel). Adapting for ever is also
    valid by diminishing adaptation (gamma_t -> 0), but only asymptotically.

    Args:
        log_scale: (C,) current log s. acceptance_prob: (C,) from Info. t: step index >= 0.

    Returns:
        (C,) updated log s.
    """
    return log_scale + rate / (t + 1) ** decay * (acceptance_prob - target)
