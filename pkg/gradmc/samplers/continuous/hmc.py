"""Hamiltonian Monte Carlo with randomised step size and trajectory length (KMC paper baseline, B0).

Momentum p ~ N(0, m I); L_c ~ U{L_lo..L_hi} leapfrog steps of size eps_c ~ U[eps_lo, eps_hi] per chain
and per transition; accept with min(1, exp(H(x, p) - H(x', p'))), H = -log pi(x) + p^T p / (2 m)
(Neal 2011, Eq. 5.21 with the sign convention exp(-H)). Leapfrog is reversible and volume preserving,
and eps, L are drawn independently of the state, so pi is left exactly invariant.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gradmc.core.gradients import log_prob_and_grad
from gradmc.samplers.base import Info, hamiltonian_accept
from gradmc.samplers.continuous.common import (
    ContinuousState,
    check_current,
    check_positive,
    check_ranges,
    draw_step_params,
    initial_state,
    leapfrog,
)

__all__ = ["HMC"]


@dataclass(frozen=True)
class HMC:
    """HMC with the true gradient of log_prob.

    Args:
        step_size_range: (eps_lo, eps_hi), 0 < eps_lo <= eps_hi (B2: (0.6, 1.3)).
        num_steps_range: (L_lo, L_hi) integers, 1 <= L_lo <= L_hi (B2: (10, 100)).
        mass: scalar m > 0, M = m I.

    Cost per step: one value+gradient at x (nothing is cached between steps, so the kernel is exact
    when the target changes between calls) and L_hi along the batched trajectory (see
    ``common.leapfrog``): energy_evals = grad_evals = 1 + the leapfrog iterations run (max_c L_c on
    CPU, L_hi on an accelerator).

    Raises:
        ValueError: at construction, on invalid ranges or mass.
        NonFiniteError: log_prob (init, step) or its gradient (step) NaN/inf at a current state; a
            trajectory ending at NaN/inf log_prob is rejected instead.
    """

    name = "HMC"  # a class attribute, not a field

    step_size_range: tuple[float, float]
    num_steps_range: tuple[int, int]
    mass: float = 1.0

    def __post_init__(self):
        check_ranges("HMC", self.step_size_range, self.num_steps_range)
        check_positive("HMC mass", self.mass)

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ContinuousState:
        """Start chains at x (C, d); ``generator`` is unused (the kernel contract: every kernel takes one).

        Raises:
            NonFiniteError: log_prob(x) NaN or inf for some chain.
        """
        return initial_state(self.name, x, log_prob, False, None)

    def step(self, state: ContinuousState, log_prob, generator: torch.Generator) -> tuple[ContinuousState, Info]:
        """One HMC transition for every chain. Returns the new state and per-chain Info.

        Raises:
            NonFiniteError: log_prob or its gradient NaN/inf at a current state.
        """
        x = state.x  # (C, d)
        f_x, g_x = log_prob_and_grad(log_prob, x)
        check_current(self.name, state.num_steps + 1, f_x, False, ("gradient of log_prob at the current state", g_x))
        p = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * self.mass**0.5
        eps, num = draw_step_params(self.step_size_range, self.num_steps_range, x, generator)
        max_steps = int(self.num_steps_range[1])
        x_new, p_new, f_new, steps = leapfrog(x, p, eps, num, max_steps, lambda z: log_prob_and_grad(log_prob, z),
                                       self.mass, g_x)
        x_out, f_out, accepted, acceptance_prob, nonfinite = hamiltonian_accept(x, p, f_x, x_new, p_new, f_new,
                                                                                generator, self.mass)
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=(x_out != x).sum(-1),
                    energy_evals=steps + 1, grad_evals=steps + 1,
                    nonfinite_proposals=nonfinite)
        return ContinuousState(x=x_out, log_prob=f_out, num_steps=state.num_steps + 1), info
