"""Relaxed MALA, R-MALA (GWG paper Appendix C.1, Eq. 24-25).

On z in R^D with the exact target pi(z) = N(z; 0, I) p(1[z > 0]) (see ``surrogate``):

    propose  z' ~ q(. | z) = N(z + eps * grad log pi_lambda(z), 2 eps I)        (Eq. 24)
    accept   min(1, pi(z') q(z | z') / (pi(z) q(z' | z)))                       (Eq. 25)

The drift uses the gradient of the tempered surrogate pi_lambda; the acceptance uses the exact
piecewise target pi and the proposal densities in both directions (the reverse one with the surrogate
gradient at z'), so the kernel leaves pi, hence p on the bits, exactly invariant for any eps, lambda.
The proposal variance 2 eps (Langevin with step eps) follows the authors' released code; the paper's
text of Eq. 24 has lost its digits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import Info, check_finite, count_nonfinite, metropolis_hastings_accept
from gradmc.samplers.relaxed.surrogate import (
    RelaxedStart,
    RelaxedState,
    bits_from_z,
    check_temperature,
    relaxed_log_prob,
    surrogate_log_prob_and_grad,
)

__all__ = ["RMALA"]


@register_sampler("R-MALA", exact=False, options={"step_size": "positive", "temperature": "positive"},
                  required=("step_size", "temperature"),
                  colour="tab:cyan", order=50, doc="relaxed MALA on the continuous surrogate")
@dataclass(frozen=True)
class RMALA(RelaxedStart):
    """Relaxed Metropolis-adjusted Langevin on the continuous relaxation of a binary target.

    Args:
        step_size: eps > 0; drift eps * grad, noise variance 2 eps.
        temperature: lambda > 0 of the surrogate p(sigmoid(z / lambda)).

    Cost per step: surrogate value+gradient at z and at z' (2 evaluations with gradient) and the exact
    target at z and at z' (one batched call on 2C rows): energy_evals=4, grad_evals=2. Nothing is
    cached between steps, so the kernel stays exact when the target changes between steps.

    Raises:
        ValueError: at construction, if step_size or temperature is not finite and > 0.
        NonFiniteError: log pi or the surrogate gradient NaN/inf at a current state (init, step); a
            proposal of NaN/inf log pi is rejected instead.
    """

    name = "R-MALA"  # the paper's name (a class attribute, not a field)

    step_size: float
    temperature: float

    def __post_init__(self):
        if not (math.isfinite(self.step_size) and self.step_size > 0):
            raise ValueError(f"R-MALA step_size must be finite and > 0, got {self.step_size}")
        check_temperature("R-MALA", self.temperature)

    @staticmethod
    def bits(state: RelaxedState) -> torch.Tensor:
        """The reported sample x = 1[z > 0], (C, D)."""
        return bits_from_z(state.z)

    def proposal_mean(self, z: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """Mean of q(. | z): z + eps * grad log pi_lambda(z), (C, D)."""
        return z + self.step_size * grad

    def log_proposal(self, z_to: torch.Tensor, mean_from: torch.Tensor) -> torch.Tensor:
        """log q(z_to | z_from) up to a constant: -||z_to - mean_from||^2 / (4 eps), (C,)."""
        diff = z_to - mean_from
        return -(diff * diff).sum(-1) / (4.0 * self.step_size)

    def step(self, state: RelaxedState, log_prob, generator: torch.Generator) -> tuple[RelaxedState, Info]:
        """One R-MALA transition for every chain (Eq. 24-25). Returns the new state and per-chain Info.

        Raises:
            NonFiniteError: log pi(z) or the surrogate gradient at z NaN/inf for a current state z.
        """
        z = state.z  # (C, D)
        _, grad = surrogate_log_prob_and_grad(log_prob, z, self.temperature)
        mean_fwd = self.proposal_mean(z, grad)
        noise = torch.randn(z.shape, generator=generator, device=z.device, dtype=z.dtype)
        z_new = mean_fwd + math.sqrt(2.0 * self.step_size) * noise
        _, grad_new = surrogate_log_prob_and_grad(log_prob, z_new, self.temperature)
        mean_rev = self.proposal_mean(z_new, grad_new)
        pi_both = relaxed_log_prob(log_prob, torch.cat([z, z_new]))  # (2C,)
        pi_z, pi_new = pi_both[: z.shape[0]], pi_both[z.shape[0]:]
        check_finite(self.name, state.num_steps + 1, ("log_prob at the current state", pi_z),
                     ("surrogate gradient at the current state", grad))
        log_alpha = pi_new - pi_z + self.log_proposal(z, mean_rev) - self.log_proposal(z_new, mean_fwd)
        accepted, acceptance_prob = metropolis_hastings_accept(log_alpha, generator, pi_new)
        z_out = torch.where(accepted[:, None], z_new, z)
        x_out = bits_from_z(z_out)
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted,
                    sites_changed=(x_out != state.x).sum(-1), energy_evals=4, grad_evals=2,
                    nonfinite_proposals=count_nonfinite(pi_new, log_alpha))
        new = RelaxedState(x=x_out, z=z_out, log_prob=torch.where(accepted, pi_new, pi_z),
                           num_steps=state.num_steps + 1)
        return new, info
