"""Kernel Hamiltonian Monte Carlo transition (Strathmann et al. 2015, Algorithm 1; docs/EXPERIMENTS.md B0).

Trajectories follow the gradient of a fitted SURROGATE log-density f (KMC lite, eq. 7, or KMC finite,
eq. 8); acceptance uses the TRUE target:

    min(1, exp(H(x, p) - H(x', p'))),   H(x, p) = -log pi(x) + p^T p / (2 m)              (Alg. 1, eq. 3)

Any surrogate drives a reversible, volume-preserving map (leapfrog on -f), so pi is left exactly
invariant whatever f is; a poor surrogate only lowers the acceptance rate.

Surrogate protocol: any object with ``grad(x: (C, d)) -> (C, d)``, the gradient of f at each row (f
itself is never needed). Neither the kernel nor anyone else modifies it: the surrogates of
:mod:`gradmc.surrogates` are immutable. Vanishing adaptation (Alg. 1, line 1) happens OUTSIDE the kernel:
between transitions the experiment draws u ~ U[0, 1] and, if u < a_t (e.g. a_t = 1 / sqrt(t + 1),
lim a_t = 0 and sum a_t = inf; :func:`gradmc.samplers.continuous.should_adapt`), builds a NEW surrogate
from (a sub-sample of) the chain history, e.g. ``new = surrogate.update(points)`` or a refit, and the next
kernel ``dataclasses.replace(kmc, surrogate=new)``. Within one step the surrogate is fixed, so each step is
an exact pi-invariant kernel.

Pseudo-marginal mode (``pseudo_marginal=True``, B3/B4): ``log_prob(x, generator) -> (C,)`` returns the
log of a non-negative UNBIASED estimate of pi(x) (up to a constant); the estimate of the current state
is carried in ``state.log_prob`` and recycled, never refreshed (Andrieu & Roberts 2009), so the chain
targets pi exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

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

__all__ = ["KMC", "Surrogate"]


class Surrogate(Protocol):
    """A fitted surrogate log-density: ``grad(x: (C, d)) -> (C, d)``, the gradient of f at each row."""

    def grad(self, x: torch.Tensor) -> torch.Tensor: ...


@dataclass(frozen=True)
class KMC:
    """The KMC transition: leapfrog on the surrogate gradient, Metropolis-Hastings with the true target.

    Args:
        surrogate: object with ``grad(x) -> (C, d)`` (see module docstring); fixed during a step.
        step_size_range: (eps_lo, eps_hi), 0 < eps_lo <= eps_hi.
        num_steps_range: (L_lo, L_hi) integers, 1 <= L_lo <= L_hi.
        mass: scalar m > 0, M = m I.
        pseudo_marginal: if True, ``log_prob(x, generator)`` is an unbiased-estimate oracle and the
            current state's estimate is recycled.

    Cost per step: 1 + max_c L_c (CPU) or L_hi + 1 (accelerator) surrogate gradient calls (not target
    evaluations; grad_evals = 0), and the true target at x and x' in one call on 2C rows (energy_evals
    = 2; nothing cached, exact when the target changes between steps); pseudo-marginal: one estimate at
    x' (energy_evals = 1).

    Raises:
        ValueError: at construction, on invalid ranges or mass; TypeError if surrogate has no ``grad``.
        NonFiniteError: log_prob (pseudo-marginal: the recycled estimate, NaN or +inf) or the surrogate
            gradient NaN/inf at a current state (init, step); a trajectory ending at NaN/+inf log_prob
            is rejected instead.
    """

    name = "KMC"  # a class attribute, not a field

    surrogate: Surrogate
    step_size_range: tuple[float, float]
    num_steps_range: tuple[int, int]
    mass: float = 1.0
    pseudo_marginal: bool = False

    def __post_init__(self):
        check_ranges("KMC", self.step_size_range, self.num_steps_range)
        check_positive("KMC mass", self.mass)
        if not callable(getattr(self.surrogate, "grad", None)):
            raise TypeError("KMC surrogate must have a method grad(x: (C, d)) -> (C, d)")

    def init(self, x: torch.Tensor, log_prob, generator: torch.Generator | None = None) -> ContinuousState:
        """Start chains at x (C, d); pseudo-marginal mode draws the first estimates with generator.

        Raises:
            ValueError: in pseudo-marginal mode without a generator.
        """
        return initial_state(self.name, x, log_prob, self.pseudo_marginal, generator)

    def step(self, state: ContinuousState, log_prob, generator: torch.Generator) -> tuple[ContinuousState, Info]:
        """One KMC transition for every chain. Returns the new state and per-chain Info.

        Raises:
            NonFiniteError: log_prob or the surrogate gradient NaN/inf at a current state (see the class).
        """
        x = state.x  # (C, d)
        p = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * self.mass**0.5
        eps, num = draw_step_params(self.step_size_range, self.num_steps_range, x, generator)
        max_steps = int(self.num_steps_range[1])
        g_x = self.surrogate.grad(x)
        x_new, p_new, _, _ = leapfrog(x, p, eps, num, max_steps, lambda z: (None, self.surrogate.grad(z)),
                                   self.mass, g_x)
        if self.pseudo_marginal:
            f_x, f_new = state.log_prob, log_prob(x_new, generator).detach()
        else:
            f_both = log_prob(torch.cat([x, x_new])).detach()  # (2C,)
            f_x, f_new = f_both[: x.shape[0]], f_both[x.shape[0]:]
        check_current(self.name, state.num_steps + 1, f_x, self.pseudo_marginal,
                      ("surrogate gradient at the current state", g_x))
        x_out, f_out, accepted, acceptance_prob, nonfinite = hamiltonian_accept(x, p, f_x, x_new, p_new, f_new,
                                                                                generator, self.mass)
        info = Info(acceptance_prob=acceptance_prob, accepted=accepted, sites_changed=(x_out != x).sum(-1),
                    energy_evals=1 if self.pseudo_marginal else 2, grad_evals=0,
                    nonfinite_proposals=nonfinite)
        return ContinuousState(x=x_out, log_prob=f_out, num_steps=state.num_steps + 1), info
