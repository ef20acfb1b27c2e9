"""Relaxed HMC, R-HMC (GWG paper Appendix C.1, Eq. 26).

On z in R^D with the exact target pi(z) = N(z; 0, I) p(1[z > 0]) (see ``surrogate``): draw momentum
v ~ N(0, M) with M = I, run k leapfrog steps of size eps on the relaxed Hamiltonian
H_lambda(z, v) = -log pi_lambda(z) + v^T v / 2, and accept (z', v') with probability

    min(1, exp(H(z, v) - H(z', v'))),    H(z, v) = -log pi(z) + v^T v / 2                 (Eq. 26)

(the paper writes the ratio of exp(-H)). Leapfrog is reversible and volume preserving whatever
potential drives it, so the exact Hamiltonian in the test makes the kernel leave pi exactly invariant.

Unlike the authors' released relaxed-HMC (which returned all-zero samples: an in-place write on a
tensor requiring grad, hidden by a bare ``except``), nothing here writes in place into autograd
tensors and no error is swallowed; tests check that chains accept and move. The released code also
adapted eps during a burn-in inside every call; here eps is fixed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from gradmc.sampler_catalog import register_sampler
from gradmc.samplers.base import Info, check_finite, hamiltonian_accept
from gradmc.samplers.relaxed.surrogate import (
    RelaxedStart,
    RelaxedState,
    bits_from_z,
    check_temperature,
    relaxed_log_prob,
    surrogate_log_prob_and_grad,
)

__all__ = ["RHMC"]


@register_sampler("R-HMC", exact=False, options={"step_size": "positive", "temperature": "positive",
                                                 "num_leapfrog_steps": "count"},
                  required=("step_size", "temperature"), colour="tab:pink", order=51,
                  doc="relaxed HMC on the continuous surrogate")
@dataclass(frozen=True)
class RHMC(RelaxedStart):
    """Relaxed Hamiltonian Monte Carlo on the continuous relaxation of a binary target.

    Args:
        step_size: leapfrog step eps > 0.
        temperature: lambda > 0 of the surrogate p(sigmoid(z / lambda)).
        num_leapfrog_steps: k >= 1; the paper fixes k = 5.

    Cost per step: k + 1 surrogate value+gradient evaluations (one at z, one after each position
    update) and the exact target at z and z' (one batched call on 2C rows): energy_evals = k + 3,
    grad_evals = k + 1. Nothing is cached between steps (exact when the target changes between steps).

    Raises:
        ValueError: at construction, if step_size or temperature is not finite and > 0, or
            num_leapfrog_steps < 1.
        NonFiniteError: log pi or the surrogate gradient NaN/inf at a current state (init, step); a
            proposal of NaN/inf log pi (or a trajectory that became non-finite) is rejected instead.
    """

    name = "R-HMC"  # the paper's name (a class attribute, not a field)

    step_size: float
    temperature: float
    num_leapfrog_steps: int = 5

    def __post_init__(self):
        if not (math.isfinite(self.step_size) and self.step_size > 0):
            raise ValueError(f"R-HMC step_size must be finite and > 0, got {self.step_size}")
        check_temperature("R-HMC", self.temperature)
        if int(self.num_leapfrog_steps) != self.num_leapfrog_steps or self.num_leapfrog_steps < 1:
            raise ValueError(f"R-HMC num_leapfrog_steps must be an integer >= 1, got {self.num_leapfrog_steps}")

    @staticmethod
    def bits(state: RelaxedState) -> torch.Tensor:
        """The reported sample x = 1[z > 0], (C, D)."""
        return bits_from_z(state.z)

    def leapfrog(self, z: torch.Tensor, v: torch.Tensor, log_prob, grad: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """k leapfrog steps of size eps on H_lambda, M = I: (C, D), (C, D) -> z', v' (new tensors).

        v += eps/2 grad; then k times {z += eps v; v += eps grad (eps/2 on the last)}. The final
        momentum flip of textbook HMC is omitted: it does not change the kinetic energy.
        ``grad``: (C, D) the surrogate gradient at z if already computed (else it is evaluated here).
        """
        eps = self.step_size
        if grad is None:
            _, grad = surrogate_log_prob_and_grad(log_prob, z, self.temperature)
        v = v + 0.5 * eps * grad
        for i in range(self.num_leapfrog_steps):
            z = z + eps * v
            _, grad = surrogate_log_prob_and_grad(log_prob, z, self.temperature)
            v = v + (0.5 * eps if i == self.num_leapfrog_steps - 1 else eps) * grad
        return z, v

    def step(self, state: RelaxedState, log_prob, generator: torch.Generator) -> tuple[RelaxedState, Info]:
        """One R-HMC transition for every chain (Eq. 26). Returns the new state and per-chain Info.

        Raises:
            NonFiniteError: log pi(z) or the surrogate gradient at z NaN/inf for a current state z.
        """
        z = state.z  # (C, D)
        v = torch.randn(z.shape, generator=generator, device=z.device, dtype=z.dtype)
        _, grad = surrogate_log_prob_and_grad(log_prob, z, self.temperature)
        z_new, v_new = self.leapfrog(z, v, log_prob, grad)
        pi_both = relaxed_log_prob(log_prob, torch.cat([z, z_new]))  # (2C,)
        pi_z, pi_new = pi_both[: z.shape[0]], pi_both[z.shape[0]:]
        check_finite(self.name, state.num_steps + 1, ("log_prob at the current state", pi_z),
                     ("surrogate gradient at the current state", grad))
        z_out, pi_out, accepted, acceptance_prob, nonfinite = hamiltonian_accept(z, v, pi_z, z_new, v_new, pi_new,
                                                                                 generator)
        x_out = bits_from_z(z_out)
        k = self.num_leapfrog_steps
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted,
                    sites_changed=(x_out != state.x).sum(-1), energy_evals=k + 3, grad_evals=k + 1,
                    nonfinite_proposals=nonfinite)
        new = RelaxedState(x=x_out, z=z_out, log_prob=pi_out, num_steps=state.num_steps + 1)
        return new, info
